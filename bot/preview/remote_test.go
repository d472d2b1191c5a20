package preview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
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
