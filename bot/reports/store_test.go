package reports

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for the store; links and retention are judged by it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newStore(t *testing.T, mod func(*Options)) (*Store, *clock, *httptest.Server) {
	t.Helper()
	clk := &clock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	o := Options{Dir: t.TempDir(), BaseURL: "https://bot.example.com/", MaxBytes: 1000, Retention: 24 * time.Hour, Now: clk.Now}
	if mod != nil {
		mod(&o)
	}
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /reports/{id}", s)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, clk, srv
}

// get fetches a link of the store from the test server.
func get(t *testing.T, srv *httptest.Server, link string) (int, string, http.Header) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + u.RequestURI())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func publish(t *testing.T, s *Store, pr, page string) string {
	t.Helper()
	link, err := s.Publish(pr, []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	return link
}

// TestSignedLink: a published page is served at its signed link, the latest per
// pull request, with headers that keep it out of frames, caches and referrers;
// the link names neither the repository nor the pull request.
func TestSignedLink(t *testing.T) {
	s, _, srv := newStore(t, nil)
	link := publish(t, s, "github/acme/shop#7", "<p>first</p>")
	if !strings.HasPrefix(link, "https://bot.example.com/reports/") || strings.Contains(link, "acme") || strings.Contains(link, "shop") {
		t.Errorf("link %q", link)
	}
	code, body, h := get(t, srv, link)
	if code != 200 || body != "<p>first</p>" {
		t.Fatalf("GET: %d %q", code, body)
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		h.Get("Content-Type") != "text/html; charset=utf-8" || h.Get("Cache-Control") != "private, no-store" || h.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("headers %v", h)
	}
	// The next preview of the same pull request replaces the page: every link of
	// it shows the latest; another pull request has a page of its own.
	link2 := publish(t, s, "github/acme/shop#7", "<p>second</p>")
	for _, l := range []string{link, link2} {
		if code, body, _ := get(t, srv, l); code != 200 || body != "<p>second</p>" {
			t.Errorf("GET %s after the second preview: %d %q", l, code, body)
		}
	}
	other := publish(t, s, "github/acme/shop#8", "<p>other</p>")
	if code, body, _ := get(t, srv, other); code != 200 || body != "<p>other</p>" {
		t.Errorf("the other pull request's page: %d %q", code, body)
	}
}

// TestTamperedLink: a link whose id, expiry or signature is altered, or that
// lacks a part, is refused (403) without reading any page.
func TestTamperedLink(t *testing.T) {
	s, _, srv := newStore(t, nil)
	link := publish(t, s, "github/acme/shop#7", "<p>page</p>")
	u, _ := url.Parse(link)
	id := strings.TrimPrefix(u.Path, "/reports/")
	q := u.Query()
	exp, sig := q.Get("exp"), q.Get("sig")
	flip := func(s string) string {
		b := []byte(s)
		if b[len(b)-1] == '0' {
			b[len(b)-1] = '1'
		} else {
			b[len(b)-1] = '0'
		}
		return string(b)
	}
	otherID := s.idOf("github/acme/shop#8")
	publish(t, s, "github/acme/shop#8", "<p>not yours</p>")
	for name, path := range map[string]string{
		"signature changed":      "/reports/" + id + "?exp=" + exp + "&sig=" + flip(sig),
		"expiry extended":        "/reports/" + id + "?exp=" + flip(exp) + "9&sig=" + sig,
		"another page's id":      "/reports/" + otherID + "?exp=" + exp + "&sig=" + sig,
		"no signature":           "/reports/" + id + "?exp=" + exp,
		"no expiry":              "/reports/" + id + "?sig=" + sig,
		"signature cut short":    "/reports/" + id + "?exp=" + exp + "&sig=" + sig[:32],
		"id not a page name":     "/reports/..%2fkey?exp=" + exp + "&sig=" + sig,
		"upper-case id":          "/reports/" + strings.ToUpper(id) + "?exp=" + exp + "&sig=" + sig,
		"signature of other key": "/reports/" + id + "?exp=" + exp + "&sig=" + strings.Repeat("ab", 32),
	} {
		code, body, _ := get(t, srv, "https://bot.example.com"+path)
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", name, code, body)
		}
		if strings.Contains(body, "page") && strings.Contains(body, "<p>") {
			t.Errorf("%s: served a page", name)
		}
	}
}

// TestExpiredLink: a link is good until its expiry and refused (410) after it,
// even while the page is still kept (a newer link reaches it).
func TestExpiredLink(t *testing.T) {
	s, clk, srv := newStore(t, nil)
	link := publish(t, s, "github/acme/shop#7", "<p>page</p>")
	clk.add(24*time.Hour - time.Second)
	if code, _, _ := get(t, srv, link); code != 200 {
		t.Fatalf("a second before expiry: %d", code)
	}
	fresh := publish(t, s, "github/acme/shop#7", "<p>page 2</p>")
	clk.add(time.Second)
	if code, body, _ := get(t, srv, link); code != http.StatusGone || !strings.Contains(body, "expired") {
		t.Errorf("at expiry: %d %q, want 410", code, body)
	}
	if code, _, _ := get(t, srv, fresh); code != 200 {
		t.Errorf("the newer link: %d", code)
	}
}

// TestSizeCap: a page over maxBytes is not kept, and the pull request's older
// page goes with it, so no link shows an older head's report.
func TestSizeCap(t *testing.T) {
	s, _, srv := newStore(t, nil)
	link := publish(t, s, "github/acme/shop#7", "<p>small</p>")
	_, err := s.Publish("github/acme/shop#7", bytes.Repeat([]byte("x"), 1001))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1001 bytes") || !strings.Contains(err.Error(), "reports.maxBytes") {
		t.Fatalf("Publish over the cap: %v", err)
	}
	if code, _, _ := get(t, srv, link); code != http.StatusNotFound {
		t.Errorf("the older page after a page over the cap: %d, want 404", code)
	}
	if _, err := s.Publish("github/acme/shop#7", bytes.Repeat([]byte("x"), 1000)); err != nil {
		t.Errorf("a page of exactly the cap: %v", err)
	}
}

// TestRetention: pages older than the retention are removed by the sweep each
// publish runs, and not served by a link that is still valid.
func TestRetention(t *testing.T) {
	s, clk, srv := newStore(t, nil)
	publish(t, s, "github/acme/shop#7", "<p>old</p>")
	clk.add(23 * time.Hour)
	late := s.URL(s.idOf("github/acme/shop#7")) // valid for 24h from now
	clk.add(2 * time.Hour)
	if code, _, _ := get(t, srv, late); code != http.StatusNotFound {
		t.Errorf("a page past its retention through a valid link: %d, want 404", code)
	}
	publish(t, s, "github/acme/shop#8", "<p>new</p>") // sweeps
	if _, err := os.Stat(s.path(s.idOf("github/acme/shop#7"))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old page is still on disk: %v", err)
	}
	if _, err := os.Stat(s.path(s.idOf("github/acme/shop#8"))); err != nil {
		t.Errorf("the new page: %v", err)
	}
	if n := s.Sweep(); n != 0 {
		t.Errorf("a second sweep removed %d", n)
	}
}

// TestGeneratedKey: without a configured key one is generated, readable only by
// the server's user, and kept: a restart (or a second replica on the work dir)
// signs the same links; a configured key signs others; a short key is refused.
func TestGeneratedKey(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }
	open := func(key []byte) (*Store, error) {
		return Open(Options{Dir: dir, BaseURL: "https://bot.example.com", Key: key, Now: now})
	}
	a, err := open(nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, keyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	b, err := open(nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.URL(a.idOf("x")) != b.URL(b.idOf("x")) {
		t.Error("a restart signs other links")
	}
	c, err := open([]byte("a configured key of 32 bytes....."))
	if err != nil {
		t.Fatal(err)
	}
	if c.URL(c.idOf("x")) == a.URL(a.idOf("x")) {
		t.Error("the configured key signs the generated key's links")
	}
	if _, err := open([]byte("short")); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Errorf("a short key: %v", err)
	}
	if _, err := Open(Options{Dir: dir, BaseURL: "bot.example.com"}); err == nil {
		t.Error("a base URL without scheme was accepted")
	}
}
