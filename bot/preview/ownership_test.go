package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
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
// the renders the PR cannot change unsearched (gitops.Prune), and lists the
// targets their files declare where those renders would put them.
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
	}{
		{name: "readme", edits: map[string][2]string{"README.md": {"# Home lab", "# Home lab, edited"}}, noRenders: true, coldNoRenders: true},
		{name: "one app", edits: map[string][2]string{"kubernetes/apps/g100/lounge/app/helmrelease.yaml": {"memory: 512Mi", "memory: 768Mi"}},
			rendered: []string{"g100-lounge", "lounge"}},
		{name: "shared component", edits: map[string][2]string{"kubernetes/components/g100-backup/snapshotpolicy.yaml": {`keepDaily: "7"`, `keepDaily: "14"`}},
			rendered: []string{"g100-echo", "g100-lounge"}},
		{name: "one app's ks.yaml", edits: map[string][2]string{"kubernetes/apps/g100/echo/ks.yaml": {"interval: 1h", "interval: 2h"}},
			rendered: []string{"g100-apps", "g100-echo"}},
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
			rendered: []string{"g100-apps"}},
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
			if slices.Sort(all); !slices.Equal(all, []string{"g100-apps", "g100-echo", "g100-lounge", "lounge"}) {
				t.Errorf("targets %v, want g100-apps, g100-echo, g100-lounge and lounge's HelmRelease", all)
			}
		})
	}
}

// TestPrunedDiscoveryListsAsFull previews a README-only pull request on
// repositories of every layout, where discovery renders nothing
// (gitops.Prune), and compares the targets it lists with those of a full
// search (AllTargets): the same targets, of the same clusters, for the
// same controller objects (kind, namespace, name), except those only a
// render makes (none in these repositories but the ones named).
func TestPrunedDiscoveryListsAsFull(t *testing.T) {
	for _, tc := range []struct {
		name, src, url, readme string
		renderMade             []string
		// searched counts the unchanged targets whose renders may make
		// targets of their own (an app-of-apps chart), searched all the same.
		searched int
	}{
		// Each cluster's tenants Kustomization patches team-a's spec.path:
		// searched, so that team-a is listed with the path it has.
		{name: "flux clusters", src: filepath.Join("..", "..", "fixtures", "repos", "flux-clusters"), url: "https://github.com/example/fleet", readme: "README.md", searched: 2},
		{name: "flux", src: filepath.Join("..", "..", "fixtures", "repos", "flux"), url: fluxFixtureURL, readme: "README.md"},
		// redis is an Application the platform chart's templates make: that
		// chart is searched although it is unchanged (gitops opaque). A
		// directory source there excludes README.md by name: a file of that
		// name may be read (discover.unread), and both sides are searched
		// in full; a new docs file no manifest names is not.
		{name: "argocd", src: filepath.Join("..", "..", "fixtures", "repos", "argocd"), url: argoFixtureURL, readme: "docs/CHANGES.md", searched: 1},
		{name: "home lab", src: filepath.Join(homeLabScenario, "base"), url: gitopsRepoURL, readme: "README.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := copyTree(t, tc.src, nil)
			f := filepath.Join(head, filepath.FromSlash(tc.readme))
			b, err := os.ReadFile(f)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, append(b, "\nA line.\n"...), 0o644); err != nil {
				t.Fatal(err)
			}
			repo := gitRepo(t, tc.src, head)
			req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{tc.url}}
			asked := rendersAsked.Load()
			pruned, err := Run(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			// An Application an ApplicationSet generates is searched all
			// the same (its set's generators read what its inputs do not
			// name): asked once per side, the second taken from the first.
			generated := 0
			for _, tr := range pruned.Targets {
				if tr.Controller != nil && tr.Controller.Generator != "" {
					generated++
				}
			}
			if n := rendersAsked.Load() - asked; n > int64(2*(generated+tc.searched)) {
				t.Errorf("a README-only pull request asked for %d renders, want none but those of the %d generated Applications and %d app-of-apps", n, generated, tc.searched)
			}
			req.AllTargets = true
			full, err := Run(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			listed := func(rep *diffing.Report) []string {
				var out []string
				for _, tr := range rep.Targets {
					c := tr.Controller
					if c == nil {
						c = &diffing.Controller{}
					}
					out = append(out, fmt.Sprintf("%s@%s %s %s/%s skipped=%v", tr.Name, tr.Cluster, c.Kind, c.Namespace, c.Name, tr.Skipped != ""))
				}
				slices.Sort(out)
				return out
			}
			want := slices.DeleteFunc(listed(full), func(l string) bool {
				return slices.ContainsFunc(tc.renderMade, func(n string) bool { return strings.HasPrefix(l, n+"@") })
			})
			if diff := cmp.Diff(want, listed(pruned)); diff != "" {
				t.Errorf("targets listed (-full +pruned):\n%s", diff)
			}
			for _, tr := range pruned.Targets {
				if tr.NotAffected == "" && tr.Skipped == "" {
					t.Errorf("%s@%s is compared, want not affected", tr.Name, tr.Cluster)
				}
			}
		})
	}
}
