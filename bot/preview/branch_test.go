package preview

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// The branch a PR merges into decides which GitOps sources of this repository the
// PR changes: a Flux GitRepository following another branch is not affected.
// branchOf reads it from a remote-tracking --base (CI passes origin/main), never
// from a local scratch branch name.
func TestBaseBranch(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "flux-clusters")
	dir := gitRepo(t, src, copyTree(t, src, map[string][2]string{
		"apps/staging/web-values.yaml": {"replicaCount: 2", "replicaCount: 4"},
	}))
	gitfixture.Git(t, dir, "update-ref", "refs/remotes/origin/release", "base")
	r := repo{dir: dir}
	for ref, want := range map[string]string{"origin/release": "release", "refs/remotes/origin/release": "release", "base": "", "HEAD": ""} {
		if got := r.branchOf(t.Context(), ref); got != want {
			t.Errorf("branchOf(%q) = %q, want %q", ref, got, want)
		}
	}

	// The fixture's clusters follow main. Merging into release, they are other
	// revisions: listed as not affected, never rendered from the PR.
	rep, err := Run(t.Context(), Request{RepoDir: dir, Base: "origin/release", Head: "head", Now: scenarioNow, RepoURLs: []string{"https://github.com/example/fleet"}})
	if err != nil {
		t.Fatal(err)
	}
	var rendered []string
	for _, tr := range rep.Targets {
		if tr.Controller == nil || tr.Cluster == "" {
			continue // not reached through a cluster's flux-system source
		}
		if tr.Skipped == "" {
			rendered = append(rendered, tr.Name+"@"+tr.Cluster)
		} else if strings.Contains(tr.Name, "apps") && !strings.Contains(tr.Skipped, "not affected") {
			t.Errorf("%s@%s skipped for another reason: %s", tr.Name, tr.Cluster, tr.Skipped)
		}
	}
	if len(rendered) != 0 {
		t.Errorf("merging into release, targets following main were rendered: %v", rendered)
	}
}
