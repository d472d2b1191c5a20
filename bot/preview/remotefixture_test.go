package preview

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/gitsrc/gittest"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// The placeholders the fixtures of scenarios with remote sources name their
// servers by; the test starts the servers and puts their URLs in their place:
//   - repo/<chart>-<version>/ is served as a Helm HTTP repository (placeholderRepo);
//   - oci/<name>-<tag>/ is pushed as a Flux artifact to <name>:<tag> of an
//     in-process OCI registry (placeholderOCI + name);
//   - ocicharts/<chart>-<version>/ (the chart's files but Chart.yaml) is
//     packaged and pushed as a Helm chart to charts/<chart>:<version> of that
//     registry (placeholderOCI + "charts", as helm pull oci://… reads it);
//   - git/<name>-<tag>/ is committed (the whole tree, in tag order) and tagged
//     in <name>.git of a git smart-HTTP server (placeholderGit + name + ".git").
const (
	placeholderRepo = "http://charts.invalid/"
	placeholderOCI  = "oci://registry.invalid/"
	placeholderGit  = "http://git.invalid/"
)

// commitIDs matches the commit ids in a comment's footer.
var commitIDs = regexp.MustCompile("base `[0-9a-f]{7,}` ↔ head `[0-9a-f]{7,}`")

// servedFixture is a copy of a scenario folder naming the servers the test
// started for its repo/, oci/ and git/ folders.
type servedFixture struct {
	Dir     string          // the copy, placeholders replaced
	Fetcher *remote.Fetcher // allows exactly the servers started (by their loopback address), or public mode (defaultModeScenarios)
	Helm    *remotetest.Repo
	OCI     *ocitest.Registry
	Git     *gittest.Server
	// served maps each server's URL (no trailing slash) to its placeholder.
	served map[string]string
	// commits maps each commit of the served git repositories to
	// "<name@tag>": a report names them, and their ids depend on git.
	commits map[string]string
}

// hasRemoteFolders says whether a scenario folder has a repo/, oci/ or git/ folder.
func hasRemoteFolders(dir string) bool {
	for _, sub := range []string{"repo", "oci", "ocicharts", "git"} {
		if _, err := os.Stat(filepath.Join(dir, sub)); err == nil {
			return true
		}
	}
	return false
}

// remoteFixture starts the servers a scenario folder asks for and returns a copy
// of it naming them, with a fetcher whose policy allows them.
func remoteFixture(t *testing.T, dir string) *servedFixture {
	t.Helper()
	sf := &servedFixture{served: map[string]string{}, commits: map[string]string{}}
	var allow []remote.Prefix
	if des := versionDirs(t, filepath.Join(dir, "repo")); len(des) > 0 {
		var specs []remotetest.Chart
		for _, d := range des {
			specs = append(specs, remotetest.Chart{Name: d.name, Version: d.version, Files: readFiles(t, d.path)})
		}
		sf.Helm = remotetest.NewHelmRepo(t, specs...)
		sf.served[strings.TrimSuffix(sf.Helm.URL, "/")] = strings.TrimSuffix(placeholderRepo, "/")
		allow = append(allow, remote.Prefix{URL: sf.Helm.URL})
	}
	if des := versionDirs(t, filepath.Join(dir, "oci")); len(des) > 0 {
		sf.OCI = ocitest.Start(t)
		for _, d := range des {
			sf.OCI.PushFiles(t, d.name, d.version, readFiles(t, d.path))
		}
		sf.served[strings.TrimSuffix(sf.OCI.URL(""), "/")] = strings.TrimSuffix(placeholderOCI, "/")
		allow = append(allow, remote.Prefix{URL: sf.OCI.URL("")})
	}
	if des := versionDirs(t, filepath.Join(dir, "ocicharts")); len(des) > 0 {
		if sf.OCI == nil {
			sf.OCI = ocitest.Start(t)
			sf.served[strings.TrimSuffix(sf.OCI.URL(""), "/")] = strings.TrimSuffix(placeholderOCI, "/")
			allow = append(allow, remote.Prefix{URL: sf.OCI.URL("")})
		}
		for _, d := range des {
			sf.OCI.PushChart(t, "charts", ocitest.Chart(t, d.name, d.version, readFiles(t, d.path)))
		}
	}
	if des := versionDirs(t, filepath.Join(dir, "git")); len(des) > 0 {
		sf.Git = gittest.Start(t)
		repos := map[string]*gittest.Repo{}
		prev := map[string]map[string]string{}
		for _, d := range des {
			r := repos[d.name]
			if r == nil {
				r = sf.Git.NewRepo(t, d.name)
				repos[d.name] = r
			}
			files := readFiles(t, d.path)
			commit := maps.Clone(files)
			for p := range prev[d.name] {
				if _, ok := files[p]; !ok {
					commit[p] = "" // the tag's tree is exactly its folder
				}
			}
			sf.commits[r.Commit(commit, d.version)] = "<" + d.name + "@" + d.version + ">"
			prev[d.name] = files
		}
		sf.served[sf.Git.URL] = strings.TrimSuffix(placeholderGit, "/")
		allow = append(allow, remote.Prefix{URL: sf.Git.URL + "/"})
	}
	repl := strings.NewReplacer(placeholderRepo, sf.url(placeholderRepo), placeholderOCI, sf.url(placeholderOCI), placeholderGit, sf.url(placeholderGit))
	sf.Dir = t.TempDir()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out := filepath.Join(sf.Dir, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := repl.Replace(string(b))
		if d.Name() == "Chart.lock" && s != string(b) {
			s = relock(t, filepath.Join(filepath.Dir(p), "Chart.yaml"), string(b), repl)
		}
		return os.WriteFile(out, []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	pol := remote.Policy{Allow: allow, CacheDir: t.TempDir()}
	if defaultModeScenarios[filepath.Base(dir)] {
		pol = remote.Policy{Mode: remote.DefaultMode, CacheDir: t.TempDir()}
	}
	f, err := remote.NewFetcher(pol)
	if err != nil {
		t.Fatal(err)
	}
	if defaultModeScenarios[filepath.Base(dir)] {
		// The servers on 127.0.0.1 stand in for public ones.
		f = f.PublicLoopbackForTests()
	}
	sf.Fetcher = f
	return sf
}

// defaultModeScenarios fetch in the CLI's and server's default mode
// (remote.DefaultMode, public) with no prefix allowed, as a user who has
// configured nothing; the others allow exactly the servers started.
var defaultModeScenarios = map[string]bool{"84-flux-renovate-chart-bump-public": true}

// url is the served URL that stands for a placeholder ("" when not served).
func (sf *servedFixture) url(placeholder string) string {
	for u, p := range sf.served {
		if p == strings.TrimSuffix(placeholder, "/") {
			return u + "/"
		}
	}
	return placeholder
}

// Unplace puts the placeholders back into a text naming the servers (a comment
// compared with its golden file), and the commit ids of the footer (the commits
// hold the served URLs, random ports) become <base> and <head>, and the commits
// of the served git repositories <name@tag>.
func (sf *servedFixture) Unplace(s string) string {
	for _, u := range slices.Sorted(maps.Keys(sf.served)) {
		s = strings.ReplaceAll(s, u, sf.served[u])
		// A registry is also named by its bare host:port.
		if pu, err := url.Parse(u); err == nil {
			ph, _ := url.Parse(sf.served[u])
			s = strings.ReplaceAll(s, pu.Host, ph.Host)
		}
	}
	for id, name := range sf.commits {
		s = strings.ReplaceAll(s, id, name)
	}
	return commitIDs.ReplaceAllString(s, "base `<base>` ↔ head `<head>`")
}

type versionDir struct{ name, version, path string }

// versionDirs lists the <name>-<version> folders of dir, in version order
// (the fixtures' versions sort as strings), none when dir does not exist.
func versionDirs(t *testing.T, dir string) []versionDir {
	t.Helper()
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []versionDir
	for _, d := range des {
		i := strings.LastIndex(d.Name(), "-")
		if !d.IsDir() || i < 0 {
			t.Fatalf("%s: %s is not a <name>-<version> folder", dir, d.Name())
		}
		out = append(out, versionDir{d.Name()[:i], d.Name()[i+1:], filepath.Join(dir, d.Name())})
	}
	return out
}

// readFiles reads a folder as slash path → content.
func readFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// relock rewrites the digest of a Chart.lock whose repository URLs the test
// replaced, as `helm dependency update` would have written it for the served
// URL: Helm's resolver.HashReq, "sha256:" and the sha256 of the JSON of
// [Chart.yaml dependencies, lock dependencies] (helm/internal/resolver). A
// fixture lock out of sync with its own Chart.yaml stays out of sync.
func relock(t *testing.T, srcChartYAML, srcLock string, repl *strings.Replacer) string {
	t.Helper()
	src, err := os.ReadFile(srcChartYAML)
	if err != nil {
		t.Fatalf("a Chart.lock needs its Chart.yaml: %v", err)
	}
	digest := func(chartYAML, lock string) (string, string) {
		var lk chart.Lock
		var md chart.Metadata
		if err := yaml.Unmarshal([]byte(lock), &lk); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(chartYAML), &md); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal([2][]*chart.Dependency{md.Dependencies, lk.Dependencies})
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		return "sha256:" + hex.EncodeToString(sum[:]), lk.Digest
	}
	out := repl.Replace(srcLock)
	if want, have := digest(string(src), srcLock); want != have {
		return out
	}
	want, have := digest(repl.Replace(string(src)), out)
	return strings.Replace(out, "digest: "+have, "digest: "+want, 1)
}

// helmRepoFixture is remoteFixture for a scenario with a repo/ folder only.
func helmRepoFixture(t *testing.T, dir string) (string, *remote.Fetcher, *remotetest.Repo) {
	t.Helper()
	sf := remoteFixture(t, dir)
	return sf.Dir, sf.Fetcher, sf.Helm
}
