package preview

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// Without a policy that allows the repository, or when the fetch fails, a remote
// chart's target is listed as not rendered with the exact reason, and the check
// does not fail on it.
func TestRemoteChartNotRendered(t *testing.T) {
	dir, allowed, served := helmRepoFixture(t, "../../fixtures/gitops-scenarios/50-flux-helmrepo-chart-bump")
	url := served.URL
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	other, err := remote.NewFetcher(remote.Policy{Allow: []remote.Prefix{{URL: "https://charts.example.com/"}}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run := func(f *remote.Fetcher) diffing.TargetReport {
		t.Helper()
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}, Remote: f})
		if err != nil {
			t.Fatal(err)
		}
		tr := targetNamed(t, rep, "g50-db")
		if tr.Skipped != "" && rep.Failing {
			t.Errorf("a chart that cannot be fetched fails the check: %v", findingLines(rep))
		}
		return tr
	}
	for name, tc := range map[string]struct {
		f    *remote.Fetcher
		want string
	}{
		"off":     {nil, "source outside this repo: " + url},
		"refused": {other, "refused by policy: " + url},
	} {
		tr := run(tc.f)
		if !strings.Contains(tr.Skipped, tc.want) {
			t.Errorf("%s: skipped %q, want %q", name, tr.Skipped, tc.want)
		}
	}
	if tr := run(allowed); tr.Skipped != "" {
		t.Fatalf("allowed: skipped %q", tr.Skipped)
	}
	// The 2.0.0 archive is gone from the repository: the render says not found.
	if err := os.Remove(filepath.Join(served.Dir, "db-2.0.0.tgz")); err != nil {
		t.Fatal(err)
	}
	fresh, err := remote.NewFetcher(remote.Policy{Allow: []remote.Prefix{{URL: url}}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr := run(fresh)
	if !strings.Contains(tr.Skipped, "chart db 2.0.0 from "+url+": not found: "+url+"db-2.0.0.tgz: HTTP 404") {
		t.Errorf("missing archive: skipped %q", tr.Skipped)
	}
}

// TestRemoteRefusalsThroughPipeline previews scenario 50's chart bump with its
// HelmRepository pointing at servers that misbehave, or at an address the policy
// must not reach: each target is listed as not rendered with the fetcher's typed
// reason, the check passes (the PR is not to blame), and nothing of the refused
// download stays in the cache or lands outside it.
func TestRemoteRefusalsThroughPipeline(t *testing.T) {
	good := remotetest.NewHelmRepo(t,
		remotetest.Chart{Name: "db", Version: "1.0.0", Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\n"}},
		remotetest.Chart{Name: "db", Version: "2.0.0", Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db-main\n"}})
	const index = "apiVersion: v1\nentries:\n  db:\n  - {name: db, version: 2.0.0, apiVersion: v2, urls: [db-2.0.0.tgz]}\n  - {name: db, version: 1.0.0, apiVersion: v2, urls: [db-1.0.0.tgz]}\n"
	// serve answers index.yaml and lets archive answer the chart downloads.
	serve := func(archive http.HandlerFunc) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/index.yaml" {
				_, _ = io.WriteString(w, index)
				return
			}
			archive(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
	var endlessSent atomic.Int64
	escape := "escaped-" + strconv.Itoa(os.Getpid())
	evil := tgz(t, map[string]string{"db/Chart.yaml": "apiVersion: v2\nname: db\nversion: 1.0.0\n", "db/../../../../../" + escape: "x"})
	port := good.Server.Listener.Addr().(*net.TCPAddr).Port
	named := fmt.Sprintf("http://charts.example.com:%d/", port)

	for _, tc := range []struct {
		name   string
		url    string           // the HelmRepository's spec.url
		policy remote.Policy    // Allow defaults to url; CacheDir is set
		want   string           // the reason after "chart db 2.0.0 from <url>: "; {url} is the url, {escape} the escape name
		after  func(*testing.T) // more checks
	}{{
		// A public-looking name the (test) resolver answers with 127.0.0.1: the
		// prefix allows the name, not a private address.
		name: "private-address", url: named,
		want: "refused by policy: charts.example.com resolves to 127.0.0.1, a loopback, link-local or private address that no allowed prefix names (set allowPrivate on the prefix to allow it)",
	}, {
		// An allowed host (its own loopback address, named by the prefix)
		// redirects to the cloud metadata address.
		name: "redirect-to-private",
		url: serve(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		}),
		want: "refused by policy: {url}db-2.0.0.tgz: redirected to http://169.254.169.254/latest/meta-data/, which no allowed prefix covers it (remote.mode: allowlist); add a prefix with --allow-remote PREFIX / remote.allow, or set remote.mode: public",
	}, {
		name: "declared-2GiB",
		url: serve(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.FormatInt(2<<30, 10))
			w.WriteHeader(http.StatusOK)
		}),
		want: "too big: {url}db-2.0.0.tgz: 2147483648 bytes, over the limit of 10485760",
	}, {
		// No Content-Length and a body that never ends: 2 GiB and more if read.
		name: "endless-body",
		url: serve(func(w http.ResponseWriter, r *http.Request) {
			buf := make([]byte, 64<<10)
			for r.Context().Err() == nil && endlessSent.Load() < 2<<30 {
				n, err := w.Write(buf)
				endlessSent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}),
		policy: remote.Policy{MaxArchiveBytes: 1 << 20},
		want:   "too big: {url}db-2.0.0.tgz: more than the limit of 1048576 bytes",
		after: func(t *testing.T) {
			if s := endlessSent.Load(); s > 64<<20 {
				t.Errorf("the server sent %d bytes before the fetcher stopped", s)
			}
		},
	}, {
		name: "tar-dot-dot",
		url:  serve(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(evil) }),
		want: `invalid content: {url}db-2.0.0.tgz: archive entry "db/../../../../../{escape}" leaves the archive (..)`,
		after: func(t *testing.T) {
			for _, pattern := range []string{"*", "*/*", "*/*/*", "*/*/*/*"} {
				if m, _ := filepath.Glob(filepath.Join(os.TempDir(), pattern, escape)); len(m) > 0 {
					t.Errorf("the ../ entry was written: %v", m)
				}
			}
			if m, _ := filepath.Glob(filepath.Join(os.TempDir(), escape)); len(m) > 0 {
				t.Errorf("the ../ entry was written: %v", m)
			}
		},
	}, {
		// The index trickles a byte every 50 ms; the policy's timeout is 300 ms.
		name: "slow-server",
		url: func() string {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				for r.Context().Err() == nil {
					_, _ = w.Write([]byte("#"))
					w.(http.Flusher).Flush()
					time.Sleep(50 * time.Millisecond)
				}
			}))
			t.Cleanup(srv.Close)
			return srv.URL + "/"
		}(),
		policy: remote.Policy{Timeout: 300 * time.Millisecond},
		want:   "timeout: {url}index.yaml: the download did not finish within 300ms",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			edit := [2]string{placeholderRepo, tc.url}
			dir := copyTree(t, "../../fixtures/gitops-scenarios/50-flux-helmrepo-chart-bump", map[string][2]string{
				"base/clusters/test/g50-charts.yaml": edit, "head/clusters/test/g50-charts.yaml": edit,
			})
			repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
			p := tc.policy
			p.Allow = []remote.Prefix{{URL: tc.url}}
			p.CacheDir = t.TempDir()
			f, err := remote.NewFetcher(p)
			if err != nil {
				t.Fatal(err)
			}
			f.SetResolver(func(ctx context.Context, host string) ([]netip.Addr, error) {
				if host == "charts.example.com" {
					return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
				}
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			})
			start := time.Now()
			rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}, Remote: f})
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > time.Minute {
				t.Errorf("the preview took %s", d)
			}
			tr := targetNamed(t, rep, "g50-db")
			// Base and head ask for the same chart: whichever asks second in the
			// fetcher's run gets the remembered failure, with a note saying so.
			if want := "clusters/test: chart db 2.0.0 from " + tc.url + ": " + strings.NewReplacer("{url}", tc.url, "{escape}", escape).Replace(tc.want); tr.Skipped != want && tr.Skipped != want+" (not asked again: it failed earlier in this run)" {
				t.Errorf("skipped:\n  %s\nwant:\n  %s", tr.Skipped, want)
			}
			assertFindings(t, rep, []string{"not-rendered HelmRelease/flux-system/g50-db"}, []string{"rename", "prune"}, false)
			// The cache keeps no tree and no temp file of what it refused.
			for _, sub := range []string{"trees", "tmp"} {
				if des, _ := os.ReadDir(filepath.Join(p.CacheDir, sub)); len(des) != 0 {
					t.Errorf("the cache kept %s/%v", sub, des)
				}
			}
			var cached int64
			_ = filepath.WalkDir(p.CacheDir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					if fi, err := d.Info(); err == nil {
						cached += fi.Size()
					}
				}
				return nil
			})
			if cached > 64<<10 {
				t.Errorf("the cache holds %d bytes after a refused download", cached)
			}
			if tc.after != nil {
				tc.after(t)
			}
		})
	}

	// The control: the same name with allowPrivate on its prefix renders, so
	// the refusal above is the address check and nothing else.
	edit := [2]string{placeholderRepo, named}
	dir := copyTree(t, "../../fixtures/gitops-scenarios/50-flux-helmrepo-chart-bump", map[string][2]string{
		"base/clusters/test/g50-charts.yaml": edit, "head/clusters/test/g50-charts.yaml": edit,
	})
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	f, err := remote.NewFetcher(remote.Policy{Allow: []remote.Prefix{{URL: named, AllowPrivate: true}}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.SetResolver(func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}, Remote: f})
	if err != nil {
		t.Fatal(err)
	}
	if tr := targetNamed(t, rep, "g50-db"); tr.Skipped != "" {
		t.Errorf("allowPrivate: skipped %q", tr.Skipped)
	}
	wantChange(t, rep, "g50-db", "ConfigMap/g50/db-main", diffing.ActionCreated, "")
}

// tgz packs files (slash paths → content, names taken as they are) into a
// gzipped tar.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, files[name]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
