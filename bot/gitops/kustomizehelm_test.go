package gitops

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestArgoKustomizeHelm reads Argo CD's kustomize.buildOptions as the repo
// server passes them to kustomize build: --enable-helm turns helmCharts on,
// --helm-kube-version and --helm-api-versions set every chart's
// capabilities.
func TestArgoKustomizeHelm(t *testing.T) {
	for _, tc := range []struct {
		options string
		enabled bool
		kube    string
		apis    []string
	}{
		{"", false, "", nil},
		{"--load-restrictor LoadRestrictionsNone", false, "", nil},
		{"--enable-helm", true, "", nil},
		{"--enable-helm=false", false, "", nil},
		{"--load-restrictor LoadRestrictionsNone --enable-helm --helm-kube-version 1.30.0 --helm-api-versions=a/v1,b/v2", true, "1.30.0", []string{"a/v1", "b/v2"}},
	} {
		kh := ArgoKustomizeHelm(tc.options, "test")
		if (kh.RefusedBy == "") != tc.enabled || kh.KubeVersion != tc.kube || !slices.Equal(kh.APIVersions, tc.apis) {
			t.Errorf("%q: %+v", tc.options, kh)
		}
		if !tc.enabled && !strings.Contains(kh.RefusedBy, "Argo CD") {
			t.Errorf("%q: refusal %q does not name Argo CD", tc.options, kh.RefusedBy)
		}
	}
}

// TestDiscoverKustomizeHelm: an Application's targets inflate helmCharts as
// the live argocd-cm says, else as the repo config says, else not (Argo
// CD's default); a Flux Kustomization's never (kustomize-controller).
func TestDiscoverKustomizeHelm(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"argocd/web.yaml":             "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: web\n  namespace: argocd\nspec:\n  source:\n    repoURL: https://example.com/repo.git\n    path: apps/web\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: web\n",
		"clusters/test/web.yaml":      "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: fweb\n  namespace: flux-system\nspec:\n  path: ./apps/web\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"apps/web/kustomization.yaml": "resources: []\n",
	})
	fromRepo := "--enable-helm"
	for _, tc := range []struct {
		name    string
		live    func(context.Context, string) (string, string, bool)
		repo    *string
		enabled bool
	}{
		{"default", nil, nil, false},
		{"repo config", nil, &fromRepo, true},
		{"live wins", func(_ context.Context, ns string) (string, string, bool) { return "", "argocd-cm of " + ns, true }, &fromRepo, false},
		{"live unreadable", func(context.Context, string) (string, string, bool) { return "", "", false }, &fromRepo, true},
		{"live", func(context.Context, string) (string, string, bool) { return "--enable-helm", "argocd-cm", true }, nil, true},
	} {
		opts := DefaultOptions()
		opts.RepoURLs = []string{"https://example.com/repo.git"}
		opts.ArgoBuildOptions, opts.ArgoDefaultBuildOptions = tc.live, tc.repo
		res, err := Discover(t.Context(), root, opts)
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, tg := range res.Targets {
			switch tg.Controller.Kind {
			case "Application":
				seen++
				if (tg.Render.Kustomize.Helm.RefusedBy == "") != tc.enabled {
					t.Errorf("%s: Application: %+v", tc.name, tg.Render.Kustomize.Helm)
				}
			case "Kustomization":
				seen++
				if tg.Render.Kustomize.Helm.RefusedBy != "Flux's kustomize-controller" {
					t.Errorf("%s: Flux Kustomization: %+v", tc.name, tg.Render.Kustomize.Helm)
				}
			}
		}
		if seen != 2 {
			t.Fatalf("%s: targets %+v, notrendered %+v", tc.name, res.Targets, res.NotRendered)
		}
	}
}
