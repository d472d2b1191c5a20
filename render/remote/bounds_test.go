package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// dirBomb is a chart archive of n empty directories: about 2.3 MB gzipped (1.4 MB at gzip -9, slower to make) for
// 300,000 of them, which unpacked take 1.2 GB of directory blocks.
func dirBomb(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	hdr := func(name string, typ byte, body string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: typ, Mode: 0o755, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if body != "" {
			if _, err := tw.Write([]byte(body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	hdr("bomb/", tar.TypeDir, "")
	hdr("bomb/Chart.yaml", tar.TypeReg, "apiVersion: v2\nname: bomb\nversion: 1.0.0\n")
	for i := range n {
		hdr(fmt.Sprintf("bomb/d%06d/", i), tar.TypeDir, "")
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// archiveRepo serves one chart archive, without a digest in its index.
func archiveRepo(t testing.TB, name string, archive []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.yaml":
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  %s:\n  - name: %s\n    version: 1.0.0\n    apiVersion: v2\n    urls: [%s-1.0.0.tgz]\n", name, name, name)
		case "/" + name + "-1.0.0.tgz":
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func countDirs(t testing.TB, root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestDirectoryBombRefused: a 1.4 MB chart archive of 300,000 directories is
// refused once it passes the entry limit (files and directories), with a
// clear error, and leaves nothing in the cache.
func TestDirectoryBombRefused(t *testing.T) {
	bomb := dirBomb(t, 300_000)
	t.Logf("archive: %d bytes", len(bomb))
	srv := archiveRepo(t, "bomb", bomb)
	f := newFetcher(t, allow(srv.URL+"/"))
	start := time.Now()
	_, err := f.HelmChart(t.Context(), srv.URL+"/", "bomb", "1.0.0")
	t.Logf("refused in %s: %v", time.Since(start), err)
	wantReason(t, err, TooBig)
	if !strings.Contains(err.Error(), "10000 entries (files and directories together)") {
		t.Errorf("the error does not say which limit: %v", err)
	}
	if n := countDirs(t, f.cache.Dir()); n > 100 {
		t.Errorf("the cache holds %d directories after the refusal", n)
	}
	// Directories implied by file paths count too.
	var entries []tarEntry
	for i := range 20 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("c/d%d/e/f", i), body: "x"})
	}
	err = Unpack(bytes.NewReader(makeTgz(t, entries...)), t.TempDir(), "x", Limits{MaxFiles: 50, MaxBytes: 1 << 20, MaxFileBytes: 1 << 10})
	wantReason(t, err, TooBig)
}

// TestCacheNeverPassesItsBound fetches charts of 300 KiB each into a cache
// bounded to 1 MiB whose entries are all in use (the grace period): it never
// holds more than its bound; the chart that would pass it is refused.
func TestCacheNeverPassesItsBound(t *testing.T) {
	var charts []remotetest.Chart
	for i := range 5 {
		charts = append(charts, remotetest.Chart{Name: fmt.Sprintf("c%d", i), Version: "1.0.0", Files: map[string]string{
			"templates/big.yaml": "# " + strings.Repeat(fmt.Sprint(i), 300<<10) + "\n",
		}})
	}
	r := remotetest.NewHelmRepo(t, charts...)
	const bound = 1 << 20
	f := newFetcher(t, Policy{Allow: []Prefix{{URL: r.URL}}, CacheMaxBytes: bound})
	var refused int
	for i := range 5 {
		_, err := f.HelmChart(t.Context(), r.URL, fmt.Sprintf("c%d", i), "1.0.0")
		if err != nil {
			wantReason(t, err, TooBig)
			if !strings.Contains(err.Error(), "remote cache is full") {
				t.Errorf("c%d: %v", i, err)
			}
			refused++
		}
		if s := f.cache.Size(); s > bound {
			t.Errorf("after c%d the cache holds %d bytes, over its bound of %d", i, s, bound)
		}
	}
	if refused == 0 {
		t.Error("every chart fit")
	}
	// Directories count: a tree of empty directories is not free.
	dirs, err := OpenCache(t.TempDir(), 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dirs.Tree("tree-x", func(dir string) error {
		return Unpack(bytes.NewReader(dirBomb(t, 100)), dir, "x", Limits{MaxFiles: 1000, MaxBytes: 1 << 20, MaxFileBytes: 1 << 20})
	})
	wantReason(t, err, TooBig)
	if s := dirs.Size(); s > 64<<10 {
		t.Errorf("the cache holds %d bytes", s)
	}
}

// indexServer serves a small index at every path ending in index.yaml,
// counting requests and those in flight, after delay.
type indexServer struct {
	*httptest.Server
	requests, inFlight, maxInFlight atomic.Int64
}

func newIndexServer(t *testing.T, delay time.Duration) *indexServer {
	s := &indexServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		fmt.Fprintf(w, "apiVersion: v1\nentries:\n  app:\n  - name: app\n    version: 1.0.0\n    apiVersion: v2\n    description: %s\n    urls: [app-1.0.0.tgz]\n", strings.Repeat("d", 4096))
	}))
	t.Cleanup(s.Close)
	return s
}

// TestIndexMemoKeyedWithoutQuery: three HelmRepositories differing only in
// their query share one download and one parse; the memo keeps a slim copy,
// bounded in bytes.
func TestIndexMemoKeyedWithoutQuery(t *testing.T) {
	srv := newIndexServer(t, 0)
	f := newFetcher(t, allow(srv.URL+"/"))
	var first any
	for i := 1; i <= 3; i++ {
		idx, err := f.HelmIndex(t.Context(), fmt.Sprintf("%s/charts/?x=%d", srv.URL, i))
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			first = idx
		} else if any(idx) != first {
			t.Errorf("?x=%d parsed the index again", i)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d requests for three query variants of one repository", n)
	}
	if b := f.MemoBytes(); b <= 0 || b > 4096 {
		t.Errorf("the memo holds %d bytes for one slim index (descriptions dropped)", b)
	}
	// A memo bounded below an index's size keeps none: nothing stays.
	g := newFetcher(t, Policy{Allow: []Prefix{{URL: srv.URL + "/"}}, MaxIndexMemoBytes: 100})
	if _, err := g.HelmIndex(t.Context(), srv.URL+"/other/"); err != nil {
		t.Fatal(err)
	}
	if b := g.MemoBytes(); b != 0 {
		t.Errorf("a memo bounded to 100 bytes holds %d", b)
	}
}

// TestUnreachableHostOncePerRun: charts of five repositories on one server
// that never answers cost one timeout, not five; a new run asks again.
func TestUnreachableHostOncePerRun(t *testing.T) {
	srv := newIndexServer(t, time.Hour)
	f := newFetcher(t, Policy{Allow: []Prefix{{URL: srv.URL + "/"}}, Timeout: 300 * time.Millisecond}).NewRun(RunLimits{})
	for i := range 5 {
		_, err := f.HelmChart(t.Context(), fmt.Sprintf("%s/repo%d/", srv.URL, i), "app", "1.0.0")
		wantReason(t, err, Timeout)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("%d requests to a server that does not answer, want 1", n)
	}
	g := f.NewRun(RunLimits{})
	_, err := g.HelmIndex(t.Context(), srv.URL+"/repo0/")
	wantReason(t, err, Timeout)
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("a new run made %d requests in all, want 2", n)
	}
}

// TestDownloadsInParallel: indexes of slow repositories are fetched in
// parallel (a lock per URL), up to MaxConcurrentDownloads at once.
func TestDownloadsInParallel(t *testing.T) {
	for _, limit := range []int{2, 4} {
		srv := newIndexServer(t, 300*time.Millisecond)
		f := newFetcher(t, Policy{Allow: []Prefix{{URL: srv.URL + "/"}}, MaxConcurrentDownloads: limit})
		var wg sync.WaitGroup
		for i := range 5 {
			wg.Go(func() {
				if _, err := f.HelmIndex(t.Context(), fmt.Sprintf("%s/r%d/", srv.URL, i)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if m := srv.maxInFlight.Load(); m < 2 || m > int64(limit) {
			t.Errorf("limit %d: %d downloads at once", limit, m)
		}
	}
}

// TestRunLimits: a run stops fetching at its request limit.
func TestRunLimits(t *testing.T) {
	srv := newIndexServer(t, 0)
	f := newFetcher(t, allow(srv.URL+"/")).NewRun(RunLimits{MaxRequests: 2})
	for i := range 3 {
		_, err := f.HelmIndex(t.Context(), fmt.Sprintf("%s/r%d/", srv.URL, i))
		if i < 2 && err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			wantReason(t, err, TooBig)
			if !strings.Contains(err.Error(), "fetch budget exceeded") {
				t.Error(err)
			}
		}
	}
	if r, b := f.Fetched(); r != 3 || b <= 0 {
		t.Errorf("fetched %d requests, %d bytes", r, b)
	}
}

// TestRunTimeLimit: a run whose MaxTime is spent fetches nothing more, with
// "fetch budget exceeded" (MaxTime 1 ns is spent before the first request).
func TestRunTimeLimit(t *testing.T) {
	srv := newIndexServer(t, 0)
	f := newFetcher(t, allow(srv.URL+"/")).NewRun(RunLimits{MaxTime: time.Nanosecond})
	_, err := f.HelmIndex(t.Context(), srv.URL+"/r/")
	wantReason(t, err, TooBig)
	if !strings.Contains(err.Error(), "fetch budget exceeded: this preview spent 1ns fetching") {
		t.Error(err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("%d requests after the run's time was spent", n)
	}
}
