package preview

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftpreview/driftpreview/bot/report"
)

// homeLabScenario is scenario 100: a Flux home-lab layout whose Kustomization
// g100-apps builds ./kubernetes/apps, a directory without a kustomization.
const homeLabScenario = "../../fixtures/gitops-scenarios/100-flux-apps-directory-one-app"

// TestOwnership runs pull requests of each shape on scenario 100's base
// without AllTargets and checks which targets are rendered: a changed file
// touches the targets whose renders read it, and the Kustomization over the
// directory of apps reads the apps' kustomizations and ks.yaml files, not
// every file below it (issue 25). A PR that no render reads renders nothing
// at all, discovery included, even without a render cache: discovery leaves
// the renders the PR cannot change unsearched (gitops.Prune), and lists only
// the targets it found without them.
func TestOwnership(t *testing.T) {
	base := filepath.Join(homeLabScenario, "base")
	cases := []struct {
		name  string
		edits map[string][2]string
		add   map[string]string
		// rendered are the targets compared; the others are not affected.
		rendered []string
		// noRenders: once the base was previewed with a render cache on
		// disk, nothing is rendered at all, discovery included.
		noRenders bool
		// coldNoRenders: nothing is rendered even the first time, without
		// a render cache.
		coldNoRenders bool
		// targets are the targets listed; all four when empty.
		targets []string
	}{
		{name: "readme", edits: map[string][2]string{"README.md": {"# Home lab", "# Home lab, edited"}}, noRenders: true, coldNoRenders: true,
			targets: []string{"g100-apps"}},
		{name: "one app", edits: map[string][2]string{"kubernetes/apps/g100/lounge/app/helmrelease.yaml": {"memory: 512Mi", "memory: 768Mi"}},
			rendered: []string{"g100-lounge", "lounge"}},
		{name: "shared component", edits: map[string][2]string{"kubernetes/components/g100-backup/snapshotpolicy.yaml": {`keepDaily: "7"`, `keepDaily: "14"`}},
			rendered: []string{"g100-echo", "g100-lounge"}},
		{name: "one app's ks.yaml", edits: map[string][2]string{"kubernetes/apps/g100/echo/ks.yaml": {"interval: 1h", "interval: 2h"}},
			rendered: []string{"g100-apps", "g100-echo"}, targets: []string{"g100-apps", "g100-echo", "g100-lounge"}},
		// A YAML file no kustomization names may be read by a render left
		// unsearched (a Kustomization whose path is its directory): both
		// sides are searched in full, and nothing changes.
		{name: "file no kustomization names", add: map[string]string{"kubernetes/apps/g100/echo/app/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\n"},
			noRenders: true},
		// A new ConfigMap may be what a render left unsearched takes values
		// from (gitops.NeedsFullSearch): both sides are searched in full.
		{name: "file in the directory of apps", add: map[string]string{"kubernetes/apps/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: g100\n"},
			rendered: []string{"g100-apps"}},
		{name: "new resource in the directory of apps", add: map[string]string{"kubernetes/apps/extra.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: extra\n  namespace: g100\n"},
			rendered: []string{"g100-apps"}, targets: []string{"g100-apps", "g100-echo", "g100-lounge"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			head := copyTree(t, base, c.edits)
			for name, content := range c.add {
				p := filepath.Join(head, filepath.FromSlash(name))
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			repo := gitRepo(t, base, head)
			req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}}
			cold := rendersAsked.Load()
			rep, err := Run(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if n := rendersAsked.Load() - cold; c.coldNoRenders && n != 0 {
				t.Errorf("the first run asked for %d renders, want none: no render reads the changed files", n)
			}
			// With a render cache on disk, the second run takes discovery's
			// Results from it (discoveryMemo): a PR no render reads asks
			// for no render at all. Every run reports the same.
			disk, err := OpenDiskCache(t.TempDir(), 0)
			if err != nil {
				t.Fatal(err)
			}
			req.RenderCache = disk
			want, _ := report.JSON(rep)
			for run := range 2 {
				asked := rendersAsked.Load()
				again, err := Run(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := report.JSON(again); string(got) != string(want) {
					t.Errorf("run %d with the render cache on disk reports otherwise:\n%s\nwant\n%s", run+1, got, want)
				}
				if n := rendersAsked.Load() - asked; run == 1 && c.noRenders && n != 0 {
					t.Errorf("the second run with the render cache asked for %d renders, want none: no render reads the changed files", n)
				}
			}
			var rendered, all []string
			for _, tr := range rep.Targets {
				all = append(all, tr.Name)
				if tr.Error != "" {
					t.Errorf("%s: %s", tr.Name, tr.Error)
				}
				if tr.NotAffected == "" && tr.Skipped == "" {
					rendered = append(rendered, tr.Name)
				}
			}
			slices.Sort(rendered)
			if !slices.Equal(rendered, c.rendered) {
				t.Errorf("rendered %v, want %v (targets %v)", rendered, c.rendered, all)
			}
			wantTargets := c.targets
			if wantTargets == nil {
				wantTargets = []string{"g100-apps", "g100-echo", "g100-lounge", "lounge"}
			}
			if slices.Sort(all); !slices.Equal(all, wantTargets) {
				t.Errorf("targets %v, want %v", all, wantTargets)
			}
		})
	}
}
