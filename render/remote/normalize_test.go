package remote

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/driftpreview/driftpreview/render/remote/gitsrc/gittest"
)

func TestNormalizeURL(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{in: "https://Charts.Example.com/a/b/", want: "https://charts.example.com/a/b/"},
		{in: "HTTPS://x/a/./b", want: "https://x/a/b"},
		{in: "https://x/a/allowed/../evil/repo.git", want: "https://x/a/evil/repo.git"},
		{in: "https://x/a/allowed/%2e%2e/evil/", want: "https://x/a/evil/"},
		{in: "https://x/a/allowed/%2E%2e/evil/", want: "https://x/a/evil/"},
		{in: "https://x/a/allowed/.%2E/evil", want: "https://x/a/evil"},
		{in: "https://x/a/b/..", want: "https://x/a/"},
		{in: "https://x/../../etc", want: "https://x/etc"},
		{in: "https://x/a//../evil", want: "https://x/evil"},
		{in: "https://x/%7eme/%41b%3a?x=1", want: "https://x/~me/Ab%3A?x=1"},
		{in: "https://x", want: "https://x"},
		{in: "oci://ghcr.io/acme/allowed/../evil/chart", want: "oci://ghcr.io/acme/evil/chart"},
		{in: "https://x/acme/allowed%2f..%2fevil/", err: "encoded \"/\""},
		{in: "https://x/acme/allowed%2F..%2Fevil/", err: "encoded \"/\""},
		{in: "https://x/acme/allowed%5c..%5cevil/", err: "encoded \"\\\\\""},
		{in: "https://x/acme/a%00b", err: "control character"},
	} {
		n, err := normalizeURL(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one saying %s", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if n.String() != c.want {
			t.Errorf("%s: %s, want %s", c.in, n, c.want)
		}
		// Normalising twice changes nothing.
		if m, err := normalize(n); err != nil || m.String() != n.String() {
			t.Errorf("%s: normalised again %v (%v)", c.in, m, err)
		}
	}
}

// normalisingServer serves paths as a web server that normalises them does:
// %2e, %2f and the like decoded, dot segments removed. It records, for each
// request, the path it served and the Authorization header it got.
type normalisingServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []served
}

type served struct{ path, auth string }

func newNormalisingServer(t *testing.T) *normalisingServer {
	s := &normalisingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.URL.EscapedPath()
		dec, err := url.PathUnescape(raw) // %2f becomes "/" too
		if err != nil {
			http.Error(w, "bad path", 400)
			return
		}
		p := path.Clean(dec)
		s.mu.Lock()
		s.seen = append(s.seen, served{p, r.Header.Get("Authorization")})
		s.mu.Unlock()
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		if strings.HasSuffix(p, "/index.yaml") {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 1.0.0\n    apiVersion: v2\n    description: served from %s\n    urls: [app-1.0.0.tgz]\n", p)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *normalisingServer) served() []served {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]served(nil), s.seen...)
}

// TestAllowlistEscapes asks for index files through URLs that leave the allowed
// prefix once a server normalises them; a path-scoped token goes with the
// prefix. None may be fetched, and the token never leaves its prefix.
func TestAllowlistEscapes(t *testing.T) {
	srv := newNormalisingServer(t)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("path-scoped-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t, Policy{Allow: []Prefix{
		{URL: srv.URL + "/acme/allowed/", TokenFile: tok},
		{URL: srv.URL + "/team", TokenFile: tok},
	}})
	for _, u := range []string{
		srv.URL + "/acme/allowed/../evil/",
		srv.URL + "/acme/allowed/%2e%2e/evil/",
		srv.URL + "/acme/allowed/%2E%2E/evil/",
		srv.URL + "/acme/allowed/%2E%2e/evil/",
		srv.URL + "/acme/allowed/.%2e/.%2E/evil/",
		srv.URL + "/acme/allowed/sub%2f..%2f..%2fevil/",
		srv.URL + "/acme/allowed/sub%2F..%2F..%2Fevil/",
		srv.URL + "/acme/allowed//../../evil/",
		srv.URL + "/team-evil/",
		srv.URL + "/team/../team-evil/",
		// A redirect within the prefix to a Location that leaves it.
		srv.URL + "/acme/allowed/?to=" + url.QueryEscape(srv.URL+"/acme/allowed/%2e%2e/evil/index.yaml"),
		srv.URL + "/acme/allowed/?to=" + url.QueryEscape("/acme/allowed/..%2f..%2fevil/index.yaml"),
	} {
		_, err := f.HelmIndex(t.Context(), u)
		wantReason(t, err, Refused)
		if strings.Contains(err.Error(), "path-scoped-token") {
			t.Errorf("%s: the error shows the token: %v", u, err)
		}
	}
	for _, s := range srv.served() {
		if !strings.HasPrefix(s.path, "/acme/allowed/") {
			t.Errorf("the server served %s (Authorization %q): outside the allowed prefix", s.path, s.auth)
		}
	}
	// The error says what the URL is once normalised.
	_, err := f.HelmIndex(t.Context(), srv.URL+"/acme/allowed/%2e%2e/evil/")
	if err == nil || !strings.Contains(err.Error(), "/acme/evil/") || !strings.Contains(err.Error(), "RFC 3986") {
		t.Errorf("the error does not say what the URL normalises to: %v", err)
	}
	_, err = f.HelmIndex(t.Context(), srv.URL+"/acme/allowed/sub%2f..%2fevil/")
	if err == nil || !strings.Contains(err.Error(), `encoded "/"`) {
		t.Errorf("an encoded slash is not named: %v", err)
	}

	// A URL with dot segments that stays under the prefix is fetched in its
	// normalised form, with the token, and the server sees no dot segment.
	before := len(srv.served())
	if _, err := f.HelmIndex(t.Context(), srv.URL+"/acme/allowed/sub/%2e%2e/"); err != nil {
		t.Fatal(err)
	}
	got := srv.served()[before:]
	if len(got) != 1 || got[0].path != "/acme/allowed/index.yaml" || got[0].auth != "Bearer path-scoped-token" {
		t.Errorf("served %+v", got)
	}
}

// TestOCIAndPrefixNormalised: oci:// URLs are matched normalised too, and a
// prefix that is not in normal form is a configuration error.
func TestOCIAndPrefixNormalised(t *testing.T) {
	f := newFetcher(t, allow("oci://registry.example.com/acme/allowed/", "https://github.com/acme/"))
	for _, u := range []string{
		"oci://registry.example.com/acme/allowed/../evil/chart",
		"oci://registry.example.com/acme/allowed/%2e%2e/evil/chart",
		"oci://registry.example.com/acme/allowed/%2E%2E/evil/chart",
		"oci://registry.example.com/acme/allowed%2f..%2fevil/chart",
		"https://github.com/acme/../evil/repo.git",
		"https://github.com/acme/%2e%2e/evil/repo.git",
		"https://github.com/acme-evil/repo.git",
		"https://github.com/evil/repo.git",
	} {
		wantReason(t, f.Allowed(u), Refused)
	}
	for _, u := range []string{"oci://registry.example.com/acme/allowed/chart", "https://github.com/acme/repo.git", "https://GitHub.com/acme/x/../repo.git"} {
		if err := f.Allowed(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, p := range []string{"https://github.com/acme/../", "https://github.com/acme/%2e%2e/", "https://github.com/a%2fb/"} {
		if err := allow(p).Validate(); err == nil {
			t.Errorf("prefix %s accepted", p)
		}
	}
}

// TestGitBaseDotSegments: a remote kustomize base whose repository URL leaves
// the allowed prefix once normalised is not fetched, from a git server that
// normalises paths as git hosts do.
func TestGitBaseDotSegments(t *testing.T) {
	srv := gittest.Start(t)
	var mu sync.Mutex
	var paths []string
	srv.Rewrite = func(r *http.Request) {
		dec, err := url.PathUnescape(r.URL.EscapedPath())
		if err != nil {
			return
		}
		r.URL.Path, r.URL.RawPath = path.Clean(dec), ""
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
	}
	for _, name := range []string{"acme/allowed/app", "acme/evil/repo"} {
		if err := os.MkdirAll(filepath.Join(srv.Root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		r := srv.NewRepo(t, name)
		r.Commit(map[string]string{"base/kustomization.yaml": "resources: [cm.yaml]\n", "base/cm.yaml": "repo: " + name + "\n"}, "v1")
	}
	f := newFetcher(t, allow(srv.URL+"/acme/allowed/"))
	for _, spec := range []string{
		srv.URL + "/acme/allowed/../evil/repo.git//base?ref=v1",
		srv.URL + "/acme/allowed/%2e%2e/evil/repo.git//base?ref=v1",
		srv.URL + "/acme/allowed/%2E%2E/evil/repo.git//base?ref=v1",
		srv.URL + "/acme/allowed/app%2f..%2f..%2fevil/repo.git//base?ref=v1",
	} {
		b, err := f.GitBase(t.Context(), spec)
		if err == nil {
			t.Errorf("%s fetched %s", spec, readFile(t, filepath.Join(b.Root, b.Path, "cm.yaml")))
			continue
		}
		wantReason(t, err, Refused)
	}
	mu.Lock()
	for _, p := range paths {
		if strings.Contains(p, "evil") {
			t.Errorf("the git server served %s", p)
		}
	}
	mu.Unlock()
	// Dot segments that stay under the prefix: fetched, normalised.
	b, err := f.GitBase(t.Context(), srv.URL+"/acme/allowed/x/../app.git//base?ref=v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(b.Root, b.Path, "cm.yaml")); got != "repo: acme/allowed/app\n" {
		t.Errorf("fetched %q", got)
	}
}
