// Package remotetest serves real Helm HTTP repositories for tests: charts are
// written as files, loaded and packaged with Helm's own libraries (loader.LoadDir,
// chartutil.Save) and indexed with repo.IndexDirectory, then served by an
// httptest server on 127.0.0.1 (which a remote.Policy must allow explicitly).
package remotetest

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Chart is one chart version to package. Files are relative to the chart root
// (templates/x.yaml, values.yaml, crds/x.yaml, charts/...); Chart.yaml is
// written from Name, Version and ChartYAML (extra Chart.yaml lines, such as a
// dependencies: list) unless Files has one.
type Chart struct {
	Name      string
	Version   string
	ChartYAML string
	Files     map[string]string
}

// Repo is a Helm HTTP repository served by an httptest server.
type Repo struct {
	Server *httptest.Server
	URL    string // the repository URL (ends in /)
	Dir    string // the served directory: index.yaml and the archives
}

// Package writes c into a temporary directory and packages it with Helm's
// library; it returns the .tgz path inside outDir.
func Package(t testing.TB, c Chart, outDir string) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), c.Name)
	files := maps.Clone(c.Files)
	if files == nil {
		files = map[string]string{}
	}
	if _, ok := files["Chart.yaml"]; !ok {
		files["Chart.yaml"] = "apiVersion: v2\nname: " + c.Name + "\nversion: " + c.Version + "\n" + c.ChartYAML
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := loader.LoadDir(src)
	if err != nil {
		t.Fatalf("loading chart %s %s: %v", c.Name, c.Version, err)
	}
	out, err := chartutil.Save(ch, outDir)
	if err != nil {
		t.Fatalf("packaging chart %s %s: %v", c.Name, c.Version, err)
	}
	return out
}

// NewHelmRepo packages charts and serves them with an index.yaml. The server is
// closed when the test ends.
func NewHelmRepo(t testing.TB, charts ...Chart) *Repo {
	t.Helper()
	r := &Repo{Dir: t.TempDir()}
	fs := http.FileServer(http.Dir(r.Dir))
	r.Server = httptest.NewServer(fs)
	t.Cleanup(r.Server.Close)
	r.URL = r.Server.URL + "/"
	r.Add(t, charts...)
	return r
}

// Add packages more charts into the repository and rewrites its index, as a
// chart repository publishing a new release does.
func (r *Repo) Add(t testing.TB, charts ...Chart) {
	t.Helper()
	for _, c := range charts {
		Package(t, c, r.Dir)
	}
	// Relative URLs, as `helm repo index` writes without --url.
	idx, err := repo.IndexDirectory(r.Dir, "")
	if err != nil {
		t.Fatal(err)
	}
	idx.SortEntries()
	if err := idx.WriteFile(filepath.Join(r.Dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
}
