package preview

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/diffing"
)

// Issue 9: Flux multi-cluster repositories previewed end to end (live comparison
// off): a change reaches the targets of the cluster it is made for, and only those.

// changeLines lists name@cluster kind/ns/name action for every change that is not
// "unchanged", and the targets listed as not rendered.
func changeLines(rep *diffing.Report) (changes, notRendered []string) {
	for _, tr := range rep.Targets {
		at := tr.Name + "@" + tr.Cluster
		if tr.Skipped != "" {
			notRendered = append(notRendered, at)
		}
		for _, c := range tr.Changes {
			if c.Action != diffing.ActionUnchanged {
				changes = append(changes, at+" "+c.Key.String()+" "+string(c.Action))
			}
		}
	}
	return changes, notRendered
}

func noRenderErrors(t *testing.T, rep *diffing.Report) {
	t.Helper()
	for _, tr := range rep.Targets {
		if tr.Error != "" {
			t.Errorf("%s@%s failed to render: %s", tr.Name, tr.Cluster, tr.Error)
		}
		for _, f := range tr.Findings {
			if f.Rule == diffing.RuleRenderError {
				t.Errorf("%s@%s: %s", tr.Name, tr.Cluster, f.Message)
			}
		}
	}
}

// TestFluxStagingValuesChangeStaysOnStaging: fixtures/repos/flux-clusters, a PR that
// edits the HelmRelease values patch in apps/staging. Both clusters declare
// Kustomization flux-system/apps; the change shows in apps@staging (the
// HelmRelease) and web@staging (the Deployment its chart renders), nothing changes
// on production, and the tenant on another branch is listed, not rendered.
func TestFluxStagingValuesChangeStaysOnStaging(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "flux-clusters")
	repo := gitRepo(t, src, copyTree(t, src, map[string][2]string{
		"apps/staging/web-values.yaml": {"replicaCount: 2", "replicaCount: 4"},
	}))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{"https://github.com/example/fleet"}})
	if err != nil {
		t.Fatal(err)
	}
	noRenderErrors(t, rep)
	changes, notRendered := changeLines(rep)
	want := []string{
		"apps@staging HelmRelease/web/web modified",
		"web@staging Deployment/web/web modified",
	}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"team-a@production", "team-a@staging"}, notRendered); diff != "" {
		t.Errorf("not rendered (-want +got):\n%s", diff)
	}
	if rep.Failing {
		t.Errorf("a values change fails the check: %+v", rep.Findings)
	}

	// --target apps selects the apps target of every cluster, apps@staging one.
	for sel, want := range map[string][]string{"apps": {"apps@production", "apps@staging"}, "apps@staging": {"apps@staging"}} {
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow,
			RepoURLs: []string{"https://github.com/example/fleet"}, Targets: []string{sel}})
		if err != nil {
			t.Fatalf("--target %s: %v", sel, err)
		}
		var got []string
		for _, tr := range rep.Targets {
			got = append(got, tr.Name+"@"+tr.Cluster)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("--target %s (-want +got):\n%s", sel, diff)
		}
	}
}

// TestFluxHelmReleaseRemovalIsAPruneCascade: fixtures/repos/flux-artifacts, whose
// Kustomizations read ExternalArtifacts of an ArtifactGenerator over this
// repository. A PR that drops the HelmRelease metrics from platform/controllers:
// Kustomization platform prunes it on both clusters, and helm-controller then
// uninstalls everything the release deployed.
func TestFluxHelmReleaseRemovalIsAPruneCascade(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "flux-artifacts")
	repo := gitRepo(t, src, copyTree(t, src, map[string][2]string{
		"platform/controllers/kustomization.yaml": {"resources:\n  - metrics.yaml", "resources: []"},
	}))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{"https://github.com/example/fleet-artifacts"}})
	if err != nil {
		t.Fatal(err)
	}
	noRenderErrors(t, rep)
	var cascades []string
	for _, tr := range rep.Targets {
		for _, f := range tr.Findings {
			if f.Rule == diffing.RulePruneCascade {
				cascades = append(cascades, tr.Name+"@"+tr.Cluster+" "+f.Key.String())
			}
		}
	}
	want := []string{
		"platform@production HelmRelease/flux-system/metrics",
		"platform@staging HelmRelease/flux-system/metrics",
	}
	if diff := cmp.Diff(want, cascades); diff != "" {
		t.Errorf("prune-cascade findings (-want +got):\n%s", diff)
	}
	if !rep.Failing {
		t.Error("the report does not fail on a prune-cascade")
	}
	changes, _ := changeLines(rep)
	if slices.ContainsFunc(changes, func(c string) bool { return strings.HasPrefix(c, "apps@") }) {
		t.Errorf("apps changed: %q", changes)
	}
}
