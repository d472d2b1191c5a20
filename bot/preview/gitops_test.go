package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// Pipeline tests of zero-config previews on real GitOps repositories (issue 5):
// targets discovered from Argo CD Applications and Flux Kustomizations, the live
// controller objects read from the test cluster (inventory, sync policy), and what
// the report says about them.

// The origins the fixture repositories in fixtures/repos name themselves by (see
// their README.md).
const (
	argoFixtureURL = "https://github.com/example/gitops-argocd"
	fluxFixtureURL = "ssh://git@github.com/example/gitops-flux"
)

// copyTree copies src into a new temp dir and applies edits (file → old → new); an
// edit whose old text is missing fails the test, so a fixture change cannot turn a
// test into a no-op.
func copyTree(t *testing.T, src string, edits map[string][2]string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	for file, e := range edits {
		p := filepath.Join(dst, filepath.FromSlash(file))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("editing %s: %v", file, err)
		}
		if !strings.Contains(string(b), e[0]) {
			t.Fatalf("editing %s: %q is not in the file", file, e[0])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// targetView is what must agree between a discovered target and the same target
// written out in a config file.
type targetView struct {
	Name, Path, Cluster, Manager, LiveMode string
	Changes                                []string // key action
	Findings                               []string // rule key path
}

func viewTargets(rep *diffing.Report, skip func(diffing.TargetReport) bool) []targetView {
	var out []targetView
	for _, tr := range rep.Targets {
		if skip != nil && skip(tr) {
			continue
		}
		v := targetView{Name: tr.Name, Path: tr.Path, Cluster: tr.Cluster, Manager: tr.Manager, LiveMode: tr.LiveMode}
		for _, c := range tr.Changes {
			v.Changes = append(v.Changes, c.Key.String()+" "+string(c.Action))
		}
		for _, f := range tr.Findings {
			v.Findings = append(v.Findings, findingLine(f))
		}
		out = append(out, v)
	}
	return out
}

func findingLine(f diffing.Finding) string {
	parts := []string{string(f.Rule)}
	if f.Key != (render.ObjectKey{}) {
		parts = append(parts, f.Key.String())
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	return strings.Join(parts, " ")
}

// notRendered says whether a discovered target was only listed: its source cannot
// be rendered from the repository, so a config file has no equivalent of it.
func notRendered(tr diffing.TargetReport) bool {
	return slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool { return f.Rule == diffing.RuleNotRendered })
}

// TestDiscoveryMatchesEquivalentConfig runs the whole pipeline on each fixture GitOps
// repository twice, once with no config (targets discovered from the Applications or
// Kustomizations) and once with the fixture's equivalent.driftpreview.yaml, and
// requires the same report for every rendered target.
func TestDiscoveryMatchesEquivalentConfig(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		url     string
		// edit is the pull request: a realistic one-line change in one app.
		edit map[string][2]string
		// changed is the change the edit must show in the report.
		changed string
		// listed are the targets only discovery knows: not rendered, with a reason.
		listed []string
		// discoveryOnly are findings only discovery can make (a suspended
		// Kustomization); a config file cannot express them.
		discoveryOnly []string
	}{
		{
			fixture: "argocd", url: argoFixtureURL,
			edit:    map[string][2]string{"shop/base/deployment.yaml": {"image: nginx:1.27", "image: nginx:1.27.4"}},
			changed: "shop Deployment/shop/prod-shop-web modified",
			listed:  []string{"external-dns", "fleet", "monitoring"},
		},
		{
			fixture: "flux", url: fluxFixtureURL,
			edit:          map[string][2]string{"charts/podinfo/templates/deployment.yaml": {"podinfo:6.7.0", "podinfo:6.7.1"}},
			changed:       "podinfo Deployment/podinfo/podinfo modified",
			listed:        []string{"addons", "cert-manager"},
			discoveryOnly: []string{"sync-disabled Kustomization/flux-system/legacy"},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			src := filepath.Join("..", "..", "fixtures", "repos", tc.fixture)
			repo := gitRepo(t, src, copyTree(t, src, tc.edit))
			// The server config knows the prod cluster (by the API URL the shop
			// Application names); live comparison stays off.
			prod := Cluster{Name: "prod", Config: &rest.Config{Host: "https://prod.example.com"}, LiveMode: "off"}
			req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{tc.url},
				Clusters: map[string]Cluster{"prod": prod}}

			discovered, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("preview without config: %v", err)
			}
			req.ConfigFile = filepath.Join(src, "equivalent.driftpreview.yaml")
			configured, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("preview with %s: %v", req.ConfigFile, err)
			}

			var listed []string
			for _, tr := range discovered.Targets {
				if notRendered(tr) {
					listed = append(listed, tr.Name)
				}
			}
			if diff := cmp.Diff(tc.listed, listed); diff != "" {
				t.Errorf("not-rendered targets (-want +got):\n%s", diff)
			}
			got := viewTargets(discovered, notRendered)
			for i := range got {
				got[i].Findings = slices.DeleteFunc(got[i].Findings, func(f string) bool {
					return slices.Contains(tc.discoveryOnly, f)
				})
			}
			want := viewTargets(configured, nil)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("report targets differ (-config +discovered):\n%s", diff)
			}
			if !slices.ContainsFunc(got, func(v targetView) bool {
				return slices.ContainsFunc(v.Changes, func(c string) bool { return v.Name+" "+c == tc.changed })
			}) {
				t.Errorf("the pull request's change %q is missing; got %s", tc.changed, fmt.Sprint(got))
			}
			for _, f := range tc.discoveryOnly {
				if !slices.ContainsFunc(discovered.Targets, func(tr diffing.TargetReport) bool {
					return slices.ContainsFunc(tr.Findings, func(g diffing.Finding) bool { return findingLine(g) == f })
				}) {
					t.Errorf("discovery lost the finding %q", f)
				}
			}
		})
	}
}
