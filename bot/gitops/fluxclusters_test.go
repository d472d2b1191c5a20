package gitops

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/config"
)

// Issue 9, Flux discovery: fixtures/repos/flux-clusters (two clusters, a tenant on
// another branch, a cluster directory without kustomization.yaml) and
// fixtures/repos/flux-artifacts (Flux 2.7 ArtifactGenerator).

const (
	fluxClustersOrigin  = "https://github.com/example/fleet"
	fluxArtifactsOrigin = "https://github.com/example/fleet-artifacts"
)

// brief is one line per target: name@cluster, path, renderer, and why it is not
// rendered.
func brief(ts []config.Target) []string {
	var out []string
	for _, t := range ts {
		s := fmt.Sprintf("%s@%s %s %s", t.Name, t.Cluster, t.Path, t.Render.Renderer)
		if t.Skip != "" {
			s = fmt.Sprintf("%s@%s skip: %s", t.Name, t.Cluster, t.Skip)
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}

func findTarget(t *testing.T, ts []config.Target, name, cluster string) config.Target {
	t.Helper()
	i := slices.IndexFunc(ts, func(c config.Target) bool { return c.Name == name && c.Cluster == cluster })
	if i < 0 {
		t.Fatalf("no target %s@%s in %q", name, cluster, brief(ts))
	}
	return ts[i]
}

// TestFluxClustersEachGetTheirTargets: clusters/staging and clusters/production
// both declare Kustomization flux-system/apps (and flux-system, tenants); every
// cluster keeps its own, and the HelmRelease both apply from apps/base is a target
// per cluster with that cluster's values patch. The tenant's GitRepository follows
// another branch of this repository: listed as not affected by the PR, never
// rendered from the checkout.
func TestFluxClustersEachGetTheirTargets(t *testing.T) {
	res, _ := discoverFixture(t, "flux-clusters", fluxClustersOrigin)
	want := []string{
		"apps@production apps/production kustomize",
		"apps@staging apps/staging kustomize",
		"flux-system@production clusters/production kustomize",
		"flux-system@staging clusters/staging kustomize",
		"tenants@production tenants/production kustomize",
		"tenants@staging tenants/staging kustomize",
		"web@production charts/web helm",
		"web@staging charts/web helm",
	}
	if diff := cmp.Diff(want, brief(res.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	other := "not affected by this PR: GitRepository team-a/team-a follows branch team-a of this repository, not the branch this pull request merges into, so this PR does not change what it deploys"
	wantNR := []string{"team-a@production skip: " + other, "team-a@staging skip: " + other}
	if diff := cmp.Diff(wantNR, brief(res.NotRendered)); diff != "" {
		t.Errorf("not rendered (-want +got):\n%s", diff)
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes = %q, want none", res.Notes)
	}
	for cluster, replicas := range map[string]float64{"staging": 2, "production": 3} {
		web := findTarget(t, res.Targets, "web", cluster)
		if got := web.Render.Helm.Values["replicaCount"]; got != replicas {
			t.Errorf("web@%s replicaCount = %v, want %v (the cluster's own values patch)", cluster, got, replicas)
		}
		if web.Namespace != "web" || web.Controller.Namespace != "web" {
			t.Errorf("web@%s namespace %q / controller namespace %q, want web (set by apps/base/web)", cluster, web.Namespace, web.Controller.Namespace)
		}
		nr := findTarget(t, res.NotRendered, "team-a", cluster)
		if len(nr.Findings) != 1 || nr.Findings[0].Rule != "not-rendered" || !strings.Contains(nr.Findings[0].Message, other) {
			t.Errorf("team-a@%s findings = %+v, want one not-rendered saying %q", cluster, nr.Findings, other)
		}
	}
}

// TestFluxBaseFileSharedByClusters: apps/base/web/release.yaml, which both
// clusters apply, is attributed to each cluster and never left over as a target
// without a cluster ("web@"), whatever namespace the file names: the fixture's
// file names namespace web and the values patches of apps/<env> name none; a file
// naming another namespace is still the origin of the rendered copies, because
// the base kustomization's namespace field overrides it (kustomize's namespace
// transformer), and a patch that repeats the namespace is the same object.
func TestFluxBaseFileSharedByClusters(t *testing.T) {
	for name, edits := range map[string]map[string][2]string{
		"fixture": nil,
		"file names a namespace the kustomization overrides": {
			"apps/base/web/release.yaml": {"  namespace: web\n", "  namespace: legacy\n"},
		},
		"patches repeat the namespace": {
			"apps/staging/web-values.yaml":    {"  name: web\n", "  name: web\n  namespace: web\n"},
			"apps/production/web-values.yaml": {"  name: web\n", "  name: web\n  namespace: web\n"},
		},
		"file names no namespace": {
			"apps/base/web/release.yaml": {"  namespace: web\n", ""},
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := fixtureRepo(t, "flux-clusters", fluxClustersOrigin)
			editFiles(t, root, edits)
			res := discoverAt(t, root, fluxClustersOrigin)
			var webs []string
			for _, tg := range slices.Concat(res.Targets, res.NotRendered) {
				if strings.HasPrefix(tg.Name, "web") || tg.Cluster == "" {
					webs = append(webs, brief([]config.Target{tg})...)
				}
			}
			want := []string{"web@production charts/web helm", "web@staging charts/web helm"}
			if diff := cmp.Diff(want, webs); diff != "" {
				t.Errorf("HelmRelease web targets (-want +got):\n%s", diff)
			}
			for cluster, replicas := range map[string]float64{"staging": 2, "production": 3} {
				web := findTarget(t, res.Targets, "web", cluster)
				if got := web.Render.Helm.Values["replicaCount"]; got != replicas || web.Namespace != "web" {
					t.Errorf("web@%s: replicaCount %v namespace %q, want %v and web (the cluster's patch, the base's namespace)", cluster, got, web.Namespace, replicas)
				}
			}
		})
	}
}

// TestFluxClusterDirWithoutKustomization: clusters/staging has no
// kustomization.yaml, only a flux-system/ subdirectory with its own (which patches
// gotk-sync.yaml). kustomize-controller builds the directory with a generated
// kustomization that takes flux-system/ as one resource; reading every file would
// take the kustomization and its patch for manifests (Kustomization flux-system
// "defined twice").
func TestFluxClusterDirWithoutKustomization(t *testing.T) {
	res, root := discoverFixture(t, "flux-clusters", fluxClustersOrigin)
	fs := findTarget(t, res.Targets, "flux-system", "staging")
	set, err := realRenderer(t.Context(), root, fs)
	if err != nil {
		t.Fatalf("rendering flux-system@staging: %v", err)
	}
	var got []string
	for _, o := range set.Objects {
		got = append(got, o.Key.String())
		if o.Key.Kind == "Kustomization" && o.Key.Name == "flux-system" {
			iv, _, _ := unstructuredString(o.Obj.Object, "spec", "interval")
			if iv != "5m0s" {
				t.Errorf("Kustomization flux-system interval = %q, want 5m0s from flux-system/kustomization.yaml's patch", iv)
			}
		}
	}
	want := []string{
		"Kustomization/flux-system/apps",
		"Kustomization/flux-system/flux-system",
		"Kustomization/flux-system/tenants",
		"GitRepository/flux-system/flux-system",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects of clusters/staging (-want +got):\n%s", diff)
	}
}

func unstructuredString(obj map[string]any, fields ...string) (string, bool, error) {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return "", false, nil
		}
		cur = m[f]
	}
	s, ok := cur.(string)
	return s, ok, nil
}

// TestFluxExternalArtifacts: Kustomizations whose source is an ExternalArtifact of
// an ArtifactGenerator over this repository are rendered from the directories the
// copies come from, per cluster.
func TestFluxExternalArtifacts(t *testing.T) {
	res, _ := discoverFixture(t, "flux-artifacts", fluxArtifactsOrigin)
	want := []string{
		"apps@production apps/production kustomize",
		"apps@staging apps/staging kustomize",
		"platform@production platform/controllers kustomize",
		"platform@staging platform/controllers kustomize",
	}
	if diff := cmp.Diff(want, brief(res.Targets)); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	wantNR := []string{
		"metrics@production skip: source outside this repo: https://charts.example.com/metrics: remote sources are off (--offline, --remote-mode off or remote.mode: off); set remote.mode: public to fetch them",
		"metrics@staging skip: source outside this repo: https://charts.example.com/metrics: remote sources are off (--offline, --remote-mode off or remote.mode: off); set remote.mode: public to fetch them",
	}
	if diff := cmp.Diff(wantNR, brief(res.NotRendered)); diff != "" {
		t.Errorf("not rendered (-want +got):\n%s", diff)
	}
	apps := findTarget(t, res.Targets, "apps", "staging")
	wantNote := "spec.path ./staging of ExternalArtifact flux-system/apps, generated by ArtifactGenerator flux-system/fleet (clusters/staging/artifacts.yaml:1) from this repository, is apps/staging"
	if !slices.Contains(apps.Notes, wantNote) {
		t.Errorf("apps@staging notes = %q, want %q", apps.Notes, wantNote)
	}
}

// TestFluxExternalArtifactNotFollowed: an ExternalArtifact is followed only when
// its copies keep the layout of this repository, from this repository at this
// PR's branch; otherwise the Kustomization is listed with the reason.
func TestFluxExternalArtifactNotFollowed(t *testing.T) {
	gen := func(sourceSpec, copies string) string {
		return `apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: gen, namespace: flux-system}
spec:
  sources:
    - {alias: src, kind: GitRepository, name: ` + sourceSpec + `}
  artifacts:
    - name: art
      copy:
` + copies + `
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app, namespace: flux-system}
spec:
  path: ./deploy
  sourceRef: {kind: ExternalArtifact, name: art}
`
	}
	other := `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: other, namespace: flux-system}
spec: {url: https://github.com/example/elsewhere}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: tagged, namespace: flux-system}
spec: {url: https://github.com/example/fleet, ref: {tag: v1.2.0}}
`
	for _, tc := range []struct {
		name, source, copies, want string
	}{
		{"kept layout", "flux-system", `        - {from: "@src/envs/prod/**", to: "@artifact/"}`, "app@c envs/prod/deploy kustomize"},
		{"directory copied as a subdirectory", "flux-system", `        - {from: "@src/envs/prod/deploy/", to: "@artifact/"}`, "app@c envs/prod/deploy kustomize"},
		{"rearranged", "flux-system", `        - {from: "@src/envs/prod/deploy/**", to: "@artifact/deploy/"}
        - {from: "@src/shared/**", to: "@artifact/lib/"}`,
			`app@c skip: ExternalArtifact flux-system/art of ArtifactGenerator flux-system/gen (clusters/c/gen.yaml:1): copy @src/shared/** → @artifact/lib/ moves shared/ to lib/; driftpreview renders an ExternalArtifact only when its copies keep the layout of one directory of this repository`},
		{"renamed file", "flux-system", `        - {from: "@src/envs/prod/deploy/cm.yaml", to: "@artifact/deploy/other.yaml"}`,
			`app@c skip: ExternalArtifact flux-system/art of ArtifactGenerator flux-system/gen (clusters/c/gen.yaml:1): copy @src/envs/prod/deploy/cm.yaml → @artifact/deploy/other.yaml renames or flattens files; driftpreview renders an ExternalArtifact only when its copies keep the layout of this repository`},
		{"merge strategy", "flux-system", `        - {from: "@src/envs/prod/**", to: "@artifact/", strategy: Merge}`,
			`app@c skip: ExternalArtifact flux-system/art of ArtifactGenerator flux-system/gen (clusters/c/gen.yaml:1): copy @src/envs/prod/** → @artifact/ uses strategy Merge, which driftpreview does not reproduce`},
		{"another repository", "other", `        - {from: "@src/envs/prod/**", to: "@artifact/"}`,
			"app@c skip: source outside this repo: ExternalArtifact flux-system/art copies from https://github.com/example/elsewhere"},
		{"this repository at a tag", "tagged", `        - {from: "@src/envs/prod/**", to: "@artifact/"}`,
			"app@c skip: not affected by this PR: ExternalArtifact flux-system/art copies from GitRepository flux-system/tagged follows tag v1.2.0 of this repository, not the branch this pull request merges into, so this PR does not change what it deploys"},
		{"path outside the copies", "flux-system", `        - {from: "@src/envs/prod/other/**", to: "@artifact/other/"}`,
			"app@c skip: spec.path ./deploy is not in ExternalArtifact flux-system/art (ArtifactGenerator flux-system/gen (clusters/c/gen.yaml:1) copies nothing there)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, map[string]string{
				// Declared in clusters/c/: cluster c.
				"clusters/c/gen.yaml":        gen(tc.source, tc.copies),
				"clusters/c/sources.yaml":    other,
				"envs/prod/deploy/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: a}\n",
				"shared/lib.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: l, namespace: a}\n",
				"envs/prod/deploy/README.md": "not a manifest\n",
			})
			res, err := Discover(t.Context(), root, Options{RepoURLs: []string{fluxClustersOrigin}})
			if err != nil {
				t.Fatal(err)
			}
			got := brief(append(res.Targets, res.NotRendered...))
			if diff := cmp.Diff([]string{tc.want}, got); diff != "" {
				b, _ := json.Marshal(res.Notes)
				t.Errorf("(-want +got):\n%s\nnotes %s", diff, b)
			}
		})
	}
}
