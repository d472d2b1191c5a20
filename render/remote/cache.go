package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cache is a content-addressed store on disk: files (index.yaml, archives) under
// objects/ and unpacked trees under trees/, each named by a key (a digest, or a
// hash of URL and version). It is safe for two processes sharing the directory:
// an entry is filled under an exclusive flock on its own lock file and appears
// by an atomic rename, so a reader sees a whole entry or none, and two processes
// wanting the same entry download it once. It is bounded by size: after a fill
// the least recently used entries are removed (under a global flock) until the
// total is under the limit; entries used in the last few minutes are kept, as a
// render may be reading them.
type Cache struct {
	dir   string
	max   int64
	grace time.Duration
}

// OpenCache creates (if needed) and opens the cache at dir, bounded to max bytes.
func OpenCache(dir string, max int64) (*Cache, error) {
	if max <= 0 {
		max = DefaultCacheMaxBytes
	}
	for _, sub := range []string{"objects", "trees", "tmp", "locks"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, fmt.Errorf("creating the remote cache: %w", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cache{dir: abs, max: max, grace: 10 * time.Minute}
	c.sweep(time.Now().Add(-staleTemp))
	return c, nil
}

// staleTemp is how old a temporary file or directory of the cache must be for
// sweep to remove it: far longer than any download may take (the policy's
// timeout), so only what a crashed process left behind qualifies.
const staleTemp = time.Hour

// sweep removes what processes that died while filling or evicting left in
// tmp/: entries last modified before cutoff whose key's lock nobody holds (a
// live fill holds it for as long as its temporary file exists). Without it a
// crash mid-download would leave its partial file there for good, outside the
// size bound.
func (c *Cache) sweep(cutoff time.Time) {
	tmp := filepath.Join(c.dir, "tmp")
	des, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, de := range des {
		name := de.Name()
		st, err := os.Lstat(filepath.Join(tmp, name))
		if err != nil || !st.ModTime().Before(cutoff) {
			continue
		}
		if !strings.HasPrefix(name, "evict-") {
			// <key>-<random>, as File and Tree create them.
			i := strings.LastIndex(name, "-")
			if i <= 0 || !validKey(name[:i]) {
				continue // not ours
			}
			unlock, err := c.lock(filepath.Join(c.dir, "locks", name[:i]+".lock"), unix.LOCK_EX|unix.LOCK_NB)
			if err != nil {
				continue // being filled right now
			}
			_ = os.RemoveAll(filepath.Join(tmp, name))
			unlock()
			continue
		}
		// An entry evict moved aside and did not get to remove.
		_ = os.RemoveAll(filepath.Join(tmp, name))
	}
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Key derives a cache key from parts (a URL and a version, say).
func Key(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "k-" + hex.EncodeToString(h.Sum(nil))
}

// DigestKey is the key of content with a known sha256 digest (hex, optionally
// "sha256:"-prefixed).
func DigestKey(digest string) (string, bool) {
	d := strings.TrimPrefix(strings.ToLower(digest), "sha256:")
	if len(d) != 64 {
		return "", false
	}
	if _, err := hex.DecodeString(d); err != nil {
		return "", false
	}
	return "sha256-" + d, true
}

func validKey(key string) bool {
	if key == "" || len(key) > 200 {
		return false
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// File returns the path of the file entry key, calling fill to write it when it
// is missing or older than ttl (0: never stale). fill writes to a temporary file;
// on error nothing is stored.
func (c *Cache) File(key string, ttl time.Duration, fill func(w io.Writer) error) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("invalid cache key %q", key)
	}
	final := filepath.Join(c.dir, "objects", key)
	if c.fresh(final, ttl) {
		return final, nil
	}
	unlock, err := c.lock(filepath.Join(c.dir, "locks", key+".lock"), unix.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer unlock()
	if c.fresh(final, ttl) { // another process filled it meanwhile
		return final, nil
	}
	tmp, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), key+"-*")
	if err != nil {
		return "", fmt.Errorf("remote cache: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("remote cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", fmt.Errorf("remote cache: %w", err)
	}
	ok = true
	if err := c.fit(final); err != nil {
		return "", err
	}
	return final, nil
}

// Tree returns the directory entry key, calling fill to create it in an empty
// temporary directory when it is missing.
func (c *Cache) Tree(key string, fill func(dir string) error) (string, error) {
	if !validKey(key) {
		return "", fmt.Errorf("invalid cache key %q", key)
	}
	final := filepath.Join(c.dir, "trees", key)
	if c.fresh(final, 0) {
		return final, nil
	}
	unlock, err := c.lock(filepath.Join(c.dir, "locks", key+".lock"), unix.LOCK_EX)
	if err != nil {
		return "", err
	}
	defer unlock()
	if c.fresh(final, 0) {
		return final, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), key+"-*")
	if err != nil {
		return "", fmt.Errorf("remote cache: %w", err)
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("remote cache: %w", err)
	}
	if err := c.fit(final); err != nil {
		return "", err
	}
	return final, nil
}

// fit enforces the size bound after final was filled: least recently used
// entries go first (evict); when the entries used within the grace period
// alone pass the bound, final itself is removed again and the fill is a
// TooBig *Error, so the cache never holds more than its bound.
func (c *Cache) fit(final string) error {
	total := c.evict()
	if total <= c.max {
		return nil
	}
	c.drop(final)
	return &Error{Reason: TooBig, Err: fmt.Errorf("the remote cache is full: its entries used in the last %s take %d MiB of its %d MiB bound (cacheMaxBytes); try again later or raise the bound", c.grace, total>>20, c.max>>20)}
}

// drop removes the entry at p: moved aside first, so it disappears at once
// for readers.
func (c *Cache) drop(p string) bool {
	gone := filepath.Join(c.dir, "tmp", "evict-"+filepath.Base(p)+"-"+fmt.Sprint(time.Now().UnixNano()))
	if err := os.Rename(p, gone); err != nil {
		return false
	}
	_ = os.RemoveAll(gone)
	return true
}

// fresh says whether the entry at p exists and, with a ttl, is younger than it;
// an entry found is marked used (its modification time is the LRU clock) unless
// a ttl applies, whose clock is the same time.
func (c *Cache) fresh(p string, ttl time.Duration) bool {
	st, err := os.Stat(p)
	if err != nil {
		return false
	}
	if ttl > 0 {
		return time.Since(st.ModTime()) < ttl
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now)
	return true
}

func (c *Cache) lock(file string, how int) (func(), error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("remote cache lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("remote cache lock: %w", err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// dirBytes is what a directory is counted as: one block of ext4 and xfs.
const dirBytes = 4096

type entry struct {
	path string
	size int64
	used time.Time
}

// evict removes least recently used entries until the cache is under its size
// limit, keeping entries used within the grace period, and returns the size
// left. Evictions are serialised (a flock), so the size is exact.
func (c *Cache) evict() int64 {
	unlock, err := c.lock(filepath.Join(c.dir, "locks", "evict.lock"), unix.LOCK_EX)
	if err != nil {
		_, total := c.entries()
		return total
	}
	defer unlock()
	entries, total := c.entries()
	if total <= c.max {
		return total
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range entries {
		if total <= c.max {
			break
		}
		if time.Since(e.used) < c.grace {
			break
		}
		if c.drop(e.path) {
			total -= e.size
		}
	}
	return total
}

// Size is the bytes the cache's entries take.
func (c *Cache) Size() int64 {
	_, total := c.entries()
	return total
}

func (c *Cache) entries() ([]entry, int64) {
	var out []entry
	var total int64
	for _, sub := range []string{"objects", "trees"} {
		des, err := os.ReadDir(filepath.Join(c.dir, sub))
		if err != nil {
			continue
		}
		for _, de := range des {
			p := filepath.Join(c.dir, sub, de.Name())
			st, err := os.Stat(p)
			if err != nil {
				continue
			}
			size := st.Size()
			if st.IsDir() {
				// A tree: its files' bytes, and a block for each directory
				// (an archive of empty directories takes room too).
				size = 0
				_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
					switch {
					case err != nil:
					case d.IsDir():
						size += dirBytes
					case d.Type().IsRegular():
						if fi, err := d.Info(); err == nil {
							size += fi.Size()
						}
					}
					return nil
				})
			}
			out = append(out, entry{path: p, size: size, used: st.ModTime()})
			total += size
		}
	}
	return out, total
}

// Lookup returns the path of the file entry key when it exists, marking it
// used; it never fills it.
func (c *Cache) Lookup(key string) (string, bool) {
	if !validKey(key) {
		return "", false
	}
	final := filepath.Join(c.dir, "objects", key)
	return final, c.fresh(final, 0)
}

// Remove deletes the file entry key (one found corrupt, say), under its lock
// so a process filling it is not disturbed.
func (c *Cache) Remove(key string) error {
	if !validKey(key) {
		return fmt.Errorf("invalid cache key %q", key)
	}
	unlock, err := c.lock(filepath.Join(c.dir, "locks", key+".lock"), unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(filepath.Join(c.dir, "objects", key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remote cache: %w", err)
	}
	return nil
}

// SetGrace sets how long an entry used is kept even over the size limit
// (10 minutes by default: a render may be reading a fetched chart). A cache
// whose entries are read whole at once (renders) can use 0.
func (c *Cache) SetGrace(d time.Duration) { c.grace = d }

// Put writes the file entry key with fill (to a temporary file, then renamed
// into place, so readers see a whole entry or none), replacing any. Unlike
// File it neither takes the entry's lock nor evicts: for many small entries
// written whole, whose writers call Trim once in a while.
func (c *Cache) Put(key string, fill func(w io.Writer) error) error {
	if !validKey(key) {
		return fmt.Errorf("invalid cache key %q", key)
	}
	tmp, err := os.CreateTemp(filepath.Join(c.dir, "tmp"), key+"-*")
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	err = fill(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, "objects", key))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Trim removes least recently used entries until the cache is under its size
// limit (as every fill of File and Tree does).
func (c *Cache) Trim() { c.evict() }
