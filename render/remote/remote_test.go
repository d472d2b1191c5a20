package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

func podinfo(version string) remotetest.Chart {
	return remotetest.Chart{Name: "podinfo", Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\ndata:\n  version: " + version + "\n",
	}}
}

func newFetcher(t *testing.T, p Policy) *Fetcher {
	t.Helper()
	if p.CacheDir == "" {
		p.CacheDir = t.TempDir()
	}
	f, err := NewFetcher(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func allow(urls ...string) Policy {
	var p Policy
	for _, u := range urls {
		p.Allow = append(p.Allow, Prefix{URL: u})
	}
	return p
}

func wantReason(t *testing.T, err error, r Reason) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", r)
	}
	if got := ReasonOf(err); got != r {
		t.Fatalf("reason %q (%v), want %q", got, err, r)
	}
}

func TestNothingAllowedByDefault(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	f := newFetcher(t, Policy{})
	_, err := f.HelmChart(t.Context(), r.URL, "podinfo", "1.0.0")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "no prefix is allowed") || !strings.Contains(err.Error(), "remote.mode: public") {
		t.Errorf("error %q does not say no prefix is allowed and how to fetch it", err)
	}
	// A prefix for another path of the same host does not cover the repository.
	f = newFetcher(t, allow(r.Server.URL+"/other"))
	_, err = f.HelmChart(t.Context(), r.URL, "podinfo", "1.0.0")
	wantReason(t, err, Refused)
}

func TestHelmChartAndRanges(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"), podinfo("1.2.0"), podinfo("2.0.0"), podinfo("2.1.0-rc.1"))
	f := newFetcher(t, allow(r.URL))
	for _, tc := range []struct{ ask, want string }{
		{"1.0.0", "1.0.0"},
		{"1.x", "1.2.0"},
		{">=1.0.0 <2", "1.2.0"},
		{"", "2.0.0"},
		{"*", "2.0.0"},
		{"~2.1.0-0", "2.1.0-rc.1"},
		{"2.1.0-rc.1", "2.1.0-rc.1"},
	} {
		ch, err := f.HelmChart(t.Context(), r.URL, "podinfo", tc.ask)
		if err != nil {
			t.Fatalf("%q: %v", tc.ask, err)
		}
		if ch.Version != tc.want {
			t.Errorf("%q resolved to %s, want %s", tc.ask, ch.Version, tc.want)
		}
		data, err := os.ReadFile(filepath.Join(ch.Dir, "templates", "cm.yaml"))
		if err != nil || !strings.Contains(string(data), "version: "+tc.want) {
			t.Errorf("%q: unpacked chart: %q, %v", tc.ask, data, err)
		}
		if ch.Digest == "" {
			t.Errorf("%q: no digest from the index", tc.ask)
		}
	}
	_, err := f.HelmChart(t.Context(), r.URL, "podinfo", "3.x")
	wantReason(t, err, NotFound)
	_, err = f.HelmChart(t.Context(), r.URL, "nope", "1.0.0")
	wantReason(t, err, NotFound)
}

func TestIndexReusedWithinTTL(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	f := newFetcher(t, allow(r.URL))
	if ch, err := f.HelmChart(t.Context(), r.URL, "podinfo", "1.x"); err != nil || ch.Version != "1.0.0" {
		t.Fatal(ch, err)
	}
	r.Add(t, podinfo("1.1.0"))
	// Same fetcher and a second process on the same cache: the index is reused.
	g := newFetcher(t, Policy{Allow: f.policy.Allow, CacheDir: f.cache.Dir()})
	for _, x := range []*Fetcher{f, g} {
		if ch, err := x.HelmChart(t.Context(), r.URL, "podinfo", "1.x"); err != nil || ch.Version != "1.0.0" {
			t.Fatal(ch, err)
		}
	}
	// After the TTL, the new release is seen.
	h := newFetcher(t, Policy{Allow: f.policy.Allow, IndexTTL: time.Nanosecond})
	if ch, err := h.HelmChart(t.Context(), r.URL, "podinfo", "1.x"); err != nil || ch.Version != "1.1.0" {
		t.Fatal(ch, err)
	}
}

// fakeResolver makes every host name resolve to ip.
func fakeResolver(f *Fetcher, ip string) {
	f.resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr(ip)}, nil
	}
}

func TestPrivateAddressesRefusedAtDial(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	port := r.Server.Listener.Addr().(*net_addr).Port
	named := fmt.Sprintf("http://charts.example.com:%d/", port)

	// A public-looking name that resolves to 127.0.0.1 is refused when it dials.
	f := newFetcher(t, allow(named))
	fakeResolver(f, "127.0.0.1")
	_, err := f.HelmChart(t.Context(), named, "podinfo", "1.0.0")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error %q does not name the address", err)
	}
	// allowPrivate on the prefix lets it through.
	f = newFetcher(t, Policy{Allow: []Prefix{{URL: named, AllowPrivate: true}}})
	fakeResolver(f, "127.0.0.1")
	if _, err := f.HelmChart(t.Context(), named, "podinfo", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	// Other special ranges are refused too.
	for _, ip := range []string{"10.1.2.3", "169.254.169.254", "192.168.1.1", "::1", "fe80::1", "100.64.0.1", "0.0.0.0"} {
		if addressAllowed(&prefix{}, netip.MustParseAddr(ip), false) {
			t.Errorf("%s allowed", ip)
		}
	}
	if !addressAllowed(&prefix{}, netip.MustParseAddr("140.82.112.3"), false) {
		t.Error("a public address refused")
	}
}

type net_addr = netTCPAddr

func TestRedirects(t *testing.T) {
	target := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	var hits atomic.Int32
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		to := req.URL.Query().Get("to")
		http.Redirect(w, req, to+strings.TrimPrefix(req.URL.Path, "/"), http.StatusFound)
	}))
	defer redirector.Close()
	// The redirector is allowed (by its literal loopback address); the target,
	// under the name localhost, is not.
	to := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	f := newFetcher(t, allow(redirector.URL+"/"))
	_, err := f.HelmIndex(t.Context(), redirector.URL+"/?to="+to)
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "redirected to") {
		t.Errorf("error %q does not say it was a redirect", err)
	}
	if strings.Contains(err.Error(), "to=") {
		t.Errorf("error %q shows the query", err)
	}
	// A redirect to an allowed name that resolves to a private address is
	// refused when it dials.
	port := target.Server.Listener.Addr().(*net_addr).Port
	named := fmt.Sprintf("http://charts.example.com:%d/", port)
	f = newFetcher(t, allow(redirector.URL+"/", named))
	f.resolve = func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	_, err = f.HelmIndex(t.Context(), redirector.URL+"/?to="+named)
	wantReason(t, err, Refused)
	// Allowing the target too makes the redirect work.
	f = newFetcher(t, allow(redirector.URL+"/", to))
	if _, err := f.HelmIndex(t.Context(), redirector.URL+"/?to="+to); err != nil {
		t.Fatal(err)
	}
}

func TestCredentialsOnlyForTheirPrefix(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			seen[name] = req.Header.Get("Authorization")
			mu.Unlock()
			if name == "a" {
				http.Redirect(w, req, req.URL.Query().Get("to"), http.StatusFound)
				return
			}
			http.NotFound(w, req)
		})
	}
	b := httptest.NewServer(record("b"))
	defer b.Close()
	a := httptest.NewServer(record("a"))
	defer a.Close()
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t, Policy{Allow: []Prefix{{URL: a.URL + "/", TokenFile: tok}, {URL: b.URL + "/"}}})
	var buf bytes.Buffer
	_, err := f.download(t.Context(), a.URL+"/x?to="+b.URL+"/y", 1<<20, &buf)
	wantReason(t, err, NotFound)
	if seen["a"] != "Bearer s3cret-token" {
		t.Errorf("prefix a got %q", seen["a"])
	}
	if seen["b"] != "" {
		t.Errorf("the redirect target got credentials %q", seen["b"])
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error shows the token: %v", err)
	}
	// Missing credential files are a configuration error naming the file.
	_, err = NewFetcher(Policy{Allow: []Prefix{{URL: a.URL + "/", TokenFile: filepath.Join(t.TempDir(), "missing")}}})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing token file: %v", err)
	}
}

func TestEndlessArchiveIsTooBig(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/index.yaml" {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  huge:\n  - name: huge\n    version: 1.0.0\n    apiVersion: v2\n    urls: [huge-1.0.0.tgz]\n")
			return
		}
		// An endless body, without Content-Length: 2 GiB and more if read.
		buf := make([]byte, 64<<10)
		for req.Context().Err() == nil {
			n, err := w.Write(buf)
			sent.Add(int64(n))
			if err != nil || sent.Load() > 2<<30 {
				return
			}
		}
	}))
	defer srv.Close()
	f := newFetcher(t, Policy{Allow: []Prefix{{URL: srv.URL + "/"}}, MaxArchiveBytes: 1 << 20})
	_, err := f.HelmChart(t.Context(), srv.URL+"/", "huge", "1.0.0")
	wantReason(t, err, TooBig)
	if s := sent.Load(); s > 64<<20 {
		t.Errorf("the server sent %d bytes before the fetcher stopped", s)
	}
	for _, sub := range []string{"tmp", "trees"} {
		if des, _ := os.ReadDir(filepath.Join(f.cache.Dir(), sub)); len(des) != 0 {
			t.Errorf("the cache kept %s/%v of a refused download", sub, des)
		}
	}
	if n := f.cache.Size(); n > 1<<10 {
		t.Errorf("the cache kept %d bytes of a refused download", n)
	}
	// A declared Content-Length over the cap is refused before reading.
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(int64(2)<<30))
		w.WriteHeader(200)
	}))
	defer big.Close()
	f = newFetcher(t, allow(big.URL+"/"))
	_, err = f.download(t.Context(), big.URL+"/x.tgz", 1<<20, &bytes.Buffer{})
	wantReason(t, err, TooBig)
}

func TestSlowServerTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for req.Context().Err() == nil {
			_, _ = w.Write([]byte("a"))
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, Policy{Allow: []Prefix{{URL: srv.URL + "/"}}, Timeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := f.HelmIndex(t.Context(), srv.URL+"/")
	wantReason(t, err, Timeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestNotFoundAndUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	f := newFetcher(t, allow(srv.URL+"/"))
	_, err := f.HelmIndex(t.Context(), srv.URL+"/")
	wantReason(t, err, NotFound)
	u := srv.URL + "/"
	srv.Close()
	f = newFetcher(t, allow(u))
	_, err = f.HelmIndex(t.Context(), u)
	wantReason(t, err, Unreachable)
}

type tarEntry struct {
	name, body, link string
	typ              byte
}

func makeTgz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			_, _ = tw.Write([]byte(e.body))
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestUnpackRefusesEscapes(t *testing.T) {
	lim := Limits{MaxFiles: 10, MaxBytes: 1 << 20, MaxFileBytes: 1 << 10}
	for name, tc := range map[string]struct {
		tgz  []byte
		want Reason
	}{
		"dotdot":    {makeTgz(t, tarEntry{name: "c/Chart.yaml", body: "x"}, tarEntry{name: "c/../../evil", body: "x"}), Invalid},
		"absolute":  {makeTgz(t, tarEntry{name: "/etc/evil", body: "x"}), Invalid},
		"symlink":   {makeTgz(t, tarEntry{name: "c/link", link: "../../etc/passwd", typ: tar.TypeSymlink}), Invalid},
		"hardlink":  {makeTgz(t, tarEntry{name: "c/link", link: "/etc/passwd", typ: tar.TypeLink}), Invalid},
		"device":    {makeTgz(t, tarEntry{name: "c/dev", typ: tar.TypeChar}), Invalid},
		"bigfile":   {makeTgz(t, tarEntry{name: "c/big", body: strings.Repeat("x", 2<<10)}), TooBig},
		"manyfiles": {makeTgz(t, manyEntries(11)...), TooBig},
		"duplicate": {makeTgz(t, tarEntry{name: "c/a", body: "x"}, tarEntry{name: "c/a", body: "y"}), ""},
		"notgzip":   {[]byte("hello"), Invalid},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			err := Unpack(bytes.NewReader(tc.tgz), dir, "https://x/c.tgz", lim)
			if tc.want == "" {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			wantReason(t, err, tc.want)
			if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "evil")); err == nil {
				t.Error("a file was written outside the directory")
			}
		})
	}
	// The total is counted across files.
	err := Unpack(bytes.NewReader(makeTgz(t, manyEntriesOf(5, strings.Repeat("y", 1000))...)), t.TempDir(), "x", Limits{MaxFiles: 10, MaxBytes: 3000, MaxFileBytes: 1 << 10})
	wantReason(t, err, TooBig)
}

func manyEntries(n int) []tarEntry { return manyEntriesOf(n, "x") }

func manyEntriesOf(n int, body string) []tarEntry {
	var out []tarEntry
	for i := range n {
		out = append(out, tarEntry{name: fmt.Sprintf("c/f%d", i), body: body})
	}
	return out
}

func TestHelmChartWithDotDotArchive(t *testing.T) {
	evil := makeTgz(t, tarEntry{name: "evil/Chart.yaml", body: "apiVersion: v2\nname: evil\nversion: 1.0.0\n"}, tarEntry{name: "evil/../../../x", body: "x"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/index.yaml" {
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  evil:\n  - name: evil\n    version: 1.0.0\n    apiVersion: v2\n    urls: [evil-1.0.0.tgz]\n")
			return
		}
		_, _ = w.Write(evil)
	}))
	defer srv.Close()
	f := newFetcher(t, allow(srv.URL+"/"))
	_, err := f.HelmChart(t.Context(), srv.URL+"/", "evil", "1.0.0")
	wantReason(t, err, Invalid)
	if !strings.Contains(err.Error(), "..") {
		t.Errorf("error %q does not name the entry", err)
	}
	des, _ := os.ReadDir(filepath.Join(f.cache.Dir(), "trees"))
	if len(des) != 0 {
		t.Errorf("the cache kept a tree of a refused archive: %v", des)
	}
}

func TestDigestMismatch(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	data, _ := os.ReadFile(filepath.Join(r.Dir, "index.yaml"))
	i := bytes.Index(data, []byte("digest: "))
	copy(data[i+len("digest: "):], "0000")
	if err := os.WriteFile(filepath.Join(r.Dir, "index.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFetcher(t, allow(r.URL))
	_, err := f.HelmChart(t.Context(), r.URL, "podinfo", "1.0.0")
	wantReason(t, err, Invalid)
}

func TestCacheSharedByTwoProcesses(t *testing.T) {
	var archives atomic.Int32
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	fs := r.Server.Config.Handler
	r.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, ".tgz") {
			archives.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		fs.ServeHTTP(w, req)
	})
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	dirs := make([]string, 4)
	for i := range 4 {
		// Each fetcher opens its own lock files, as a second process does.
		f := newFetcher(t, Policy{Allow: []Prefix{{URL: r.URL}}, CacheDir: dir})
		wg.Go(func() {
			ch, err := f.HelmChart(context.Background(), r.URL, "podinfo", "1.0.0")
			errs[i] = err
			if err == nil {
				dirs[i] = ch.Dir
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(i, err)
		}
		if dirs[i] != dirs[0] {
			t.Errorf("fetcher %d unpacked to %s, not %s", i, dirs[i], dirs[0])
		}
	}
	if n := archives.Load(); n != 1 {
		t.Errorf("the archive was downloaded %d times", n)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c, err := OpenCache(t.TempDir(), 2500)
	if err != nil {
		t.Fatal(err)
	}
	c.grace = 0
	put := func(key string) string {
		p, err := c.File(key, 0, func(w ioWriter) error {
			_, err := w.Write(bytes.Repeat([]byte("x"), 1000))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := put("a")
	old := time.Now().Add(-time.Hour)
	_ = os.Chtimes(a, old, old)
	b := put("b")
	_ = os.Chtimes(b, old.Add(time.Minute), old.Add(time.Minute))
	// Using a marks it recently used.
	put("a")
	put("c")
	if _, err := os.Stat(b); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("b (least recently used) was kept: %v", err)
	}
	if _, err := os.Stat(a); err != nil {
		t.Errorf("a (recently used) was evicted: %v", err)
	}
	if s := c.Size(); s > 2500 {
		t.Errorf("cache holds %d bytes", s)
	}
}

func TestHelmDependencies(t *testing.T) {
	r := remotetest.NewHelmRepo(t,
		remotetest.Chart{Name: "redis", Version: "1.0.0", Files: map[string]string{"templates/x.yaml": "kind: X\n"}},
		remotetest.Chart{Name: "redis", Version: "1.5.0", Files: map[string]string{"templates/x.yaml": "kind: X\n"}})
	f := newFetcher(t, allow(r.URL))
	chartYAML := []byte("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: 1.x\n  repository: " + r.URL + "\n")
	deps, err := f.HelmDependencies(t.Context(), chartYAML, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != 1 || deps[0].Version != "1.5.0" {
		t.Fatalf("without a lock: %+v", deps)
	}
	// A lock pins 1.0.0; its digest is what helm dependency update writes.
	req := []*chart.Dependency{{Name: "redis", Version: "1.x", Repository: r.URL}}
	locked := []*chart.Dependency{{Name: "redis", Version: "1.0.0", Repository: r.URL}}
	sum, _ := hashReq(req, locked)
	lock := fmt.Sprintf("dependencies:\n- name: redis\n  repository: %s\n  version: 1.0.0\ndigest: %s\ngenerated: \"2024-01-01T00:00:00Z\"\n", r.URL, sum)
	deps, err = f.HelmDependencies(t.Context(), chartYAML, []byte(lock), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != 1 || deps[0].Version != "1.0.0" || deps[0].Archive == "" {
		t.Fatalf("with a lock: %+v", deps)
	}
	// A lock out of sync with Chart.yaml fails as helm dependency build does.
	_, err = f.HelmDependencies(t.Context(), bytes.Replace(chartYAML, []byte("1.x"), []byte("2.x"), 1), []byte(lock), nil)
	wantReason(t, err, Invalid)
	// Vendored dependencies are skipped; other repository kinds are unsupported.
	if deps, err := f.HelmDependencies(t.Context(), chartYAML, nil, map[string]bool{"redis": true}); err != nil || len(deps) != 0 {
		t.Fatal(deps, err)
	}
	_, err = f.HelmDependencies(t.Context(), []byte("apiVersion: v2\nname: a\nversion: 1.0.0\ndependencies:\n- name: x\n  version: 1.0.0\n  repository: \"@stable\"\n"), nil, nil)
	wantReason(t, err, Unsupported)
}

func TestPolicyValidate(t *testing.T) {
	for _, bad := range []Prefix{
		{URL: "ftp://x/"},
		{URL: "https://user:pass@x/"},
		{URL: "https://x/?token=1"},
		{URL: "/relative"},
		{URL: "https://x/", TokenFile: "t", UsernameFile: "u", PasswordFile: "p"},
		{URL: "https://x/", UsernameFile: "u"},
	} {
		err := Policy{Allow: []Prefix{bad}}.Validate()
		if err == nil {
			t.Errorf("%+v accepted", bad)
		} else if strings.Contains(err.Error(), "pass@") || strings.Contains(err.Error(), "token=1") {
			t.Errorf("error shows a secret: %v", err)
		}
	}
	// Prefix matching is at path-segment boundaries, with default ports.
	p, _ := parsePrefix("https://charts.example.com/stable")
	for raw, want := range map[string]bool{
		"https://charts.example.com/stable/index.yaml":     true,
		"https://CHARTS.example.com:443/stable/x.tgz":      true,
		"https://charts.example.com/stable":                true,
		"https://charts.example.com/stable-evil/x.tgz":     false,
		"http://charts.example.com/stable/x.tgz":           false,
		"https://charts.example.com.evil.io/stable/x.tgz":  false,
		"https://user@charts.example.com/stable/index.yml": false,
	} {
		u, _ := parseURL(raw)
		if got := match([]*prefix{p}, u) != nil; got != want {
			t.Errorf("%s: match %v, want %v", raw, got, want)
		}
	}
}

// TestCacheSweepsCrashedTemps: a process that dies while filling an entry
// leaves its temporary file in tmp/; the next OpenCache removes such leftovers
// once they are stale (an hour old) and their key's lock is free, and keeps
// fresh ones, ones still locked by a live fill, and files that are not its own.
func TestCacheSweepsCrashedTemps(t *testing.T) {
	if dir := os.Getenv("DRIFTPREVIEW_TEST_CRASH_CACHE"); dir != "" {
		// The crashing process: dies in the middle of a fill.
		c, err := OpenCache(dir, 0)
		if err != nil {
			os.Exit(2)
		}
		_, _ = c.File("sha256-"+strings.Repeat("a", 64), 0, func(w ioWriter) error {
			_, _ = w.Write(bytes.Repeat([]byte("x"), 4096))
			os.Exit(3)
			return nil
		})
		os.Exit(4)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCacheSweepsCrashedTemps$")
	cmd.Env = append(os.Environ(), "DRIFTPREVIEW_TEST_CRASH_CACHE="+dir)
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("the crashing process: %v", err)
	}
	tmp := filepath.Join(dir, "tmp")
	left, _ := filepath.Glob(filepath.Join(tmp, "sha256-*"))
	if len(left) != 1 {
		t.Fatalf("the crash left %v", left)
	}
	crashed := left[0]
	old := time.Now().Add(-2 * time.Hour)
	mk := func(name string, isDir bool) string {
		p := filepath.Join(tmp, name)
		if isDir {
			if err := os.MkdirAll(filepath.Join(p, "chart"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p, "chart", "Chart.yaml"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	staleTree := mk("tree-k-0123-987654", true)
	staleEvicted := mk("evict-k-abc-1700000000", true)
	fresh := mk("k-fresh-12345", false)
	locked := mk("k-busy-55555", false)
	foreign := mk("README", false)
	for _, p := range []string{crashed, staleTree, staleEvicted, locked, foreign} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// A live fill (another process, another open file description) holds k-busy's lock.
	probe := &Cache{dir: dir}
	unlock, err := probe.lock(filepath.Join(dir, "locks", "k-busy.lock"), syscall.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	if _, err := OpenCache(dir, 0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{crashed, staleTree, staleEvicted} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was not swept: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{fresh, locked, foreign} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was swept: %v", filepath.Base(p), err)
		}
	}
}
