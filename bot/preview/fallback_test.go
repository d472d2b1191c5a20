package preview

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Issue 9, defect 5: the directory fallback of a repository without config and
// without Argo CD or Flux objects (fixtures/repos/dirs-fallback), end to end with
// live comparison off.

// TestFallbackPreviewsEveryTouchedDirectory: a PR that edits kustomize-guestbook/,
// an app of its own and the base of pre-post-sync/, previews both; the Deployment
// changes in each.
func TestFallbackPreviewsEveryTouchedDirectory(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "dirs-fallback")
	repo := gitRepo(t, src, copyTree(t, src, map[string][2]string{
		"kustomize-guestbook/deployment.yaml": {"replicas: 1", "replicas: 2"},
	}))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow})
	if err != nil {
		t.Fatal(err)
	}
	noRenderErrors(t, rep)
	changes, _ := changeLines(rep)
	want := []string{
		"kustomize-guestbook@ Deployment/default/kustomize-guestbook-ui modified",
		"pre-post-sync@ Deployment/default/pre-post-sync-kustomize-guestbook-ui modified",
	}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if rep.Failing {
		t.Errorf("a replicas change fails the check: %+v", rep.Findings)
	}
}

// TestFallbackDocsOnlyPRHasNothingToFailOn: a PR of README, docs, CI workflow and
// an app's README touches no file any render reads: no target, no finding, the
// check passes.
func TestFallbackDocsOnlyPRHasNothingToFailOn(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "dirs-fallback")
	repo := gitRepo(t, src, copyTree(t, src, map[string][2]string{
		"README.md":                     {"# Directory fallback fixture", "# Directory fallback fixture (edited)"},
		"docs/layout.md":                {"one app.", "one app, named after it."},
		"docs/mkdocs.yml":               {"site_name: fixture", "site_name: fixture docs"},
		".github/workflows/ci.yaml":     {"echo lint", "echo lint all"},
		"kustomize-guestbook/README.md": {"built with kustomize.", "built with kustomize 5."},
	}))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tr := range rep.Targets {
		names = append(names, tr.Name)
	}
	if len(names) > 0 {
		t.Errorf("a docs-only PR has targets %q, want none", names)
	}
	if rep.Failing || len(rep.Findings) > 0 {
		t.Errorf("a docs-only PR: failing %v, findings %+v", rep.Failing, rep.Findings)
	}
}
