package remote

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/render/remote/oci"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// publicFetcher is a public-mode Fetcher; loopbackPublic makes the test's
// servers on 127.0.0.1 stand in for public hosts (the hook no config
// reaches).
func publicFetcher(t *testing.T, p Policy, loopbackPublic bool) *Fetcher {
	t.Helper()
	p.Mode = ModePublic
	f := newFetcher(t, p)
	f.loopbackPublic = loopbackPublic
	return f
}

// TestPublicMode: with no prefix at all, public mode fetches a chart from a
// server standing in for a public one; without the test hook the same
// server, on a loopback address, is refused when dialled, as are names
// resolving to private, link-local (metadata), CGNAT addresses, also with the
// hook, which counts only loopback as public.
func TestPublicMode(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	f := publicFetcher(t, Policy{}, true)
	if ch, err := f.HelmChart(t.Context(), r.URL, "podinfo", "1.x"); err != nil || ch.Version != "1.0.0" {
		t.Fatalf("public mode: %v, %v", ch, err)
	}

	f = publicFetcher(t, Policy{}, false)
	_, err := f.HelmChart(t.Context(), r.URL, "podinfo", "1.0.0")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), "public addresses only") {
		t.Errorf("error %q does not name the address and the public-only rule", err)
	}

	port := r.Server.Listener.Addr().(*net.TCPAddr).Port
	named := fmt.Sprintf("http://charts.example.com:%d/", port)
	for _, ip := range []string{"10.1.2.3", "192.168.1.1", "172.16.0.1", "169.254.169.254", "100.64.0.1", "fd00::1", "fe80::1", "0.0.0.0"} {
		f := publicFetcher(t, Policy{}, true)
		fakeResolver(f, ip)
		_, err := f.HelmIndex(t.Context(), named)
		wantReason(t, err, Refused)
		if !strings.Contains(err.Error(), ip) {
			t.Errorf("%s: error %q does not name the address", ip, err)
		}
	}
	// Only http, https and oci URLs, and none with user info.
	for _, u := range []string{"file:///etc/", "ftp://charts.example.com/", "https://user:pw@charts.example.com/"} {
		if err := f.Allowed(u); ReasonOf(err) != Refused {
			t.Errorf("%s: Allowed = %v, want refused", u, err)
		}
	}
}

// TestPublicModeRebindingAndRedirects: the address is checked when each
// connection is dialled, the one checked is the one connected to: a name
// that answered a public address and then a private one (DNS rebinding) is
// refused on the next connection, and a redirect to a name resolving to a
// private address is refused at its dial.
func TestPublicModeRebindingAndRedirects(t *testing.T) {
	r := remotetest.NewHelmRepo(t, podinfo("1.0.0"))
	// Every answer closes its connection, so each request dials again.
	closing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Connection", "close")
		r.Server.Config.Handler.ServeHTTP(w, req)
	}))
	t.Cleanup(closing.Close)
	port := closing.Listener.Addr().(*net.TCPAddr).Port
	named := fmt.Sprintf("http://charts.example.com:%d/", port)
	f := publicFetcher(t, Policy{}, true)
	var lookups atomic.Int32
	f.resolve = func(context.Context, string) ([]netip.Addr, error) {
		if lookups.Add(1) == 1 {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.7")}, nil
	}
	if _, err := f.HelmIndex(t.Context(), named); err != nil {
		t.Fatalf("first lookup (public): %v", err)
	}
	_, err := f.HelmChart(t.Context(), named, "podinfo", "1.0.0")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "10.0.0.7") {
		t.Errorf("error %q does not name the rebound address", err)
	}
	if n := lookups.Load(); n != 2 {
		t.Errorf("%d lookups, want one per connection (2)", n)
	}

	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, named+"index.yaml", http.StatusFound)
	}))
	t.Cleanup(redirector.Close)
	f = publicFetcher(t, Policy{}, true)
	f.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	_, err = f.HelmIndex(t.Context(), redirector.URL+"/")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "169.254.169.254") {
		t.Errorf("redirect to the metadata address: error %q does not name it", err)
	}
}

// TestPublicModeCredentials: a prefix's credentials go to its URLs only; in
// public mode a redirect from it to a host no prefix names, and a request
// straight to such a host, carry none.
func TestPublicModeCredentials(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{}
	record := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			seen[name] = append(seen[name], req.Header.Get("Authorization"))
			mu.Unlock()
			if to := req.URL.Query().Get("to"); to != "" {
				http.Redirect(w, req, to, http.StatusFound)
				return
			}
			http.NotFound(w, req)
		})
	}
	other := httptest.NewServer(record("other"))
	t.Cleanup(other.Close)
	private := httptest.NewServer(record("private"))
	t.Cleanup(private.Close)
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The credentialed prefix names its server's loopback address; the
	// other server, reached as localhost, stands in for a public host.
	f := publicFetcher(t, Policy{Allow: []Prefix{{URL: private.URL + "/", TokenFile: tok}}}, true)
	to := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	var buf bytes.Buffer
	_, err := f.download(t.Context(), private.URL+"/x?to="+to+"/y", 1<<20, &buf)
	wantReason(t, err, NotFound)
	_, err = f.download(t.Context(), to+"/z", 1<<20, &buf)
	wantReason(t, err, NotFound)
	mu.Lock()
	defer mu.Unlock()
	if len(seen["private"]) != 1 || seen["private"][0] != "Bearer s3cret-token" {
		t.Errorf("the credentialed prefix got %q", seen["private"])
	}
	if len(seen["other"]) != 2 || seen["other"][0] != "" || seen["other"][1] != "" {
		t.Errorf("a host no prefix names got credentials: %q", seen["other"])
	}
}

// TestPublicModeUnreachableOncePerRun: in public mode a host whose name does
// not resolve costs one lookup per run, not one per chart, and says it is
// unreachable.
func TestPublicModeUnreachableOncePerRun(t *testing.T) {
	f := publicFetcher(t, Policy{}, false).NewRun(RunLimits{})
	var lookups atomic.Int32
	f.resolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	for i := range 4 {
		_, err := f.HelmChart(t.Context(), fmt.Sprintf("https://charts.example.com/repo%d/", i), "app", "1.0.0")
		wantReason(t, err, Unreachable)
		if !strings.Contains(err.Error(), "no such host") {
			t.Errorf("error %q does not say why", err)
		}
	}
	if _, err := f.OCIArtifact(t.Context(), oci.Ref{URL: "oci://charts.example.com/app", Tag: "1.0.0"}, "", "", false); ReasonOf(err) != Unreachable {
		t.Errorf("an OCI artifact on the same host: %v, want the remembered failure", err)
	}
	if n := lookups.Load(); n != 1 {
		t.Errorf("%d lookups of a host that does not resolve, want 1 per run", n)
	}
}

// TestModes: off refuses everything, saying how to turn fetching on; an
// allowlist says which prefix to add or that public mode fetches it; a
// mode that is none of the three is a config error.
func TestModes(t *testing.T) {
	f := newFetcher(t, Policy{Mode: ModeOff, Allow: []Prefix{{URL: "https://charts.example.com/"}}})
	err := f.Allowed("https://charts.example.com/x/")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "remote sources are off") || !strings.Contains(err.Error(), "remote.mode: public") {
		t.Errorf("off: %q", err)
	}
	f = newFetcher(t, Policy{Mode: ModeAllowlist, Allow: []Prefix{{URL: "https://charts.example.com/"}}})
	if err := f.Allowed("https://charts.example.com/x/"); err != nil {
		t.Errorf("allowlist, allowed: %v", err)
	}
	err = f.Allowed("https://other.example.com/x/")
	if !strings.Contains(err.Error(), "remote.mode: allowlist") || !strings.Contains(err.Error(), "set remote.mode: public") {
		t.Errorf("allowlist, not allowed: %q", err)
	}
	for _, p := range []Policy{{Mode: ModePublic}, {Mode: ModeAllowlist, Allow: []Prefix{{URL: "https://x/"}}}} {
		if !p.Enabled() {
			t.Errorf("%+v not enabled", p)
		}
	}
	for _, p := range []Policy{{}, {Mode: ModeOff, Allow: []Prefix{{URL: "https://x/"}}}} {
		if p.Enabled() {
			t.Errorf("%+v enabled", p)
		}
	}
	if err := (Policy{Mode: "everything"}).Validate(); err == nil || !strings.Contains(err.Error(), "remote.mode") {
		t.Errorf("a bad mode: %v", err)
	}
}
