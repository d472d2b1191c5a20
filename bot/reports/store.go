package reports

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxBytes  = 20 << 20
	DefaultRetention = 30 * 24 * time.Hour
)

// ErrTooLarge is Publish's error for a page over Options.MaxBytes: it is not kept.
var ErrTooLarge = errors.New("report page over the size cap")

// Options configures a Store.
type Options struct {
	// Dir holds the pages and, when Key is empty, the generated key.
	Dir string
	// BaseURL is the server's public URL (https://driftpreview.example.com) that
	// links start with.
	BaseURL string
	// Key signs URLs and names pages; empty generates one, kept in Dir/key so
	// links outlive a restart.
	Key []byte
	// MaxBytes caps one page (default DefaultMaxBytes).
	MaxBytes int64
	// Retention is how long a page is kept and its link valid (default
	// DefaultRetention).
	Retention time.Duration
	Now       func() time.Time
}

// Store keeps the latest report page of each pull request on disk.
type Store struct {
	opts Options
	base *url.URL
}

// keyFile is where a generated key is kept.
const keyFile = "key"

// minKey is the shortest key accepted: 128 bits.
const minKey = 16

// Open makes Dir and loads or generates the key.
func Open(opts Options) (*Store, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	u, err := url.Parse(strings.TrimSuffix(opts.BaseURL, "/"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("report pages: base URL %q is not an http(s) URL without query", opts.BaseURL)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("report pages: %w", err)
	}
	if len(opts.Key) == 0 {
		if opts.Key, err = loadOrMakeKey(filepath.Join(opts.Dir, keyFile)); err != nil {
			return nil, fmt.Errorf("report pages: %w", err)
		}
	}
	if len(opts.Key) < minKey {
		return nil, fmt.Errorf("report pages: the signing key has %d bytes, want at least %d", len(opts.Key), minKey)
	}
	return &Store{opts: opts, base: u}, nil
}

// loadOrMakeKey reads the key at path, or writes a new random one there (only
// the server's user can read it). Two processes sharing the work dir agree on
// the first one written.
func loadOrMakeKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil && len(b) >= minKey {
		return b, nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path) // another process made it first
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return nil, err
	}
	return key, f.Close()
}

func (s *Store) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.opts.Key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(m.Sum(nil))
}

// idOf is a pull request's page name: 128 bits of an HMAC of its key.
func (s *Store) idOf(prKey string) string { return s.mac("report-id", prKey)[:32] }

func (s *Store) path(id string) string { return filepath.Join(s.opts.Dir, id+".html") }

// Publish keeps page as prKey's latest report and returns its signed URL. A page
// over MaxBytes is not kept (ErrTooLarge), and the pull request's previous page
// is removed so no link shows an older head's report. Pages past their retention
// are swept.
func (s *Store) Publish(prKey string, page []byte) (string, error) {
	id := s.idOf(prKey)
	s.Sweep()
	if int64(len(page)) > s.opts.MaxBytes {
		_ = os.Remove(s.path(id))
		return "", fmt.Errorf("%w: %d bytes, the cap (reports.maxBytes) is %d", ErrTooLarge, len(page), s.opts.MaxBytes)
	}
	tmp, err := os.CreateTemp(s.opts.Dir, ".page-*")
	if err != nil {
		return "", fmt.Errorf("keeping the report page: %w", err)
	}
	_, err = tmp.Write(page)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp.Name(), s.opts.Now(), s.opts.Now())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path(id))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("keeping the report page: %w", err)
	}
	return s.URL(id), nil
}

// URL is the signed link to page id, valid for Retention from now.
func (s *Store) URL(id string) string {
	exp := strconv.FormatInt(s.opts.Now().Add(s.opts.Retention).Unix(), 10)
	return s.base.String() + "/reports/" + id + "?exp=" + exp + "&sig=" + s.mac("report-url", id, exp)
}

// Sweep removes the pages kept longer than Retention, and leftovers of
// interrupted writes; it returns how many it removed.
func (s *Store) Sweep() int {
	entries, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return 0
	}
	cutoff := s.opts.Now().Add(-s.opts.Retention)
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".html") && !strings.HasPrefix(name, ".page-") {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if os.Remove(filepath.Join(s.opts.Dir, name)) == nil {
			n++
		}
	}
	return n
}
