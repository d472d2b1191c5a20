package preview

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// placeholderRepo is the Helm repository URL the fixtures of scenarios with a
// repo/ folder name; the test serves repo/ and puts its URL in its place.
const placeholderRepo = "http://charts.invalid/"

// commitIDs matches the commit ids in a comment's footer.
var commitIDs = regexp.MustCompile("base `[0-9a-f]{7,}` ↔ head `[0-9a-f]{7,}`")

// helmRepoFixture packages every chart folder of dir/repo (<name>-<version>/)
// with Helm's library, serves them as a Helm HTTP repository on 127.0.0.1, and
// returns a copy of dir naming that repository, a fetcher whose policy allows it
// (explicitly: it is a loopback address) and the repository.
func helmRepoFixture(t *testing.T, dir string) (string, *remote.Fetcher, *remotetest.Repo) {
	t.Helper()
	charts, err := os.ReadDir(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []remotetest.Chart
	for _, c := range charts {
		root := filepath.Join(dir, "repo", c.Name())
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
		i := strings.LastIndex(c.Name(), "-")
		specs = append(specs, remotetest.Chart{Name: c.Name()[:i], Version: c.Name()[i+1:], Files: files})
	}
	repo := remotetest.NewHelmRepo(t, specs...)
	dst := t.TempDir()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), placeholderRepo, repo.URL)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := remote.NewFetcher(remote.Policy{Allow: []remote.Prefix{{URL: repo.URL}}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return dst, f, repo
}

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
