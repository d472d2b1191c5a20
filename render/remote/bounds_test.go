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
