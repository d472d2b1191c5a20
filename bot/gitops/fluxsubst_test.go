package gitops

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

// componentRepo is a Flux layout in which a shared kustomize component holds a
// HelmRelease named by a postBuild variable (${APP}-anubis) and an app's
// Kustomization includes it with components: and postBuild.substitute (issue
// 21): the component's files must never become targets of their own, and the
// rendered copy is the target, substituted.
func componentRepo(t *testing.T) string {
	return writeFiles(t, map[string]string{
		"clusters/main/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`,
		"apps/forgejo/ks.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: forgejo, namespace: flux-system}
spec:
  path: ./apps/forgejo/app
  prune: true
  targetNamespace: forgejo
  components: [../../../components/anubis]
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {APP: forgejo}
`,
		"apps/forgejo/app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [settings.yaml]\n",
		"apps/forgejo/app/settings.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: "${APP}-settings"}
data:
  claim: "${KOPIUR_CLAIM:-${APP}}"
  upper: "${APP^^}"
  literal: "$${APP}"
`,
		"components/anubis/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [helmrelease.yaml]\n",
		"components/anubis/helmrelease.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: "${APP}-anubis"}
spec:
  interval: 1h
  chart:
    spec:
      chart: ./charts/anubis
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  values:
    target: "${APP}"
    claim: "${KOPIUR_CLAIM:-${APP}}-data"
`,
		"charts/anubis/Chart.yaml": "apiVersion: v2\nname: anubis\nversion: 1.0.0\n",
		"charts/anubis/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Release.Name }}}
data:
  target: {{ .Values.target | quote }}
  claim: {{ .Values.claim | quote }}
`,
	})
}

func TestSubstitutedComponentDiscovery(t *testing.T) {
	root := componentRepo(t)
	res := discoverAt(t, root, thisRepo)
	var names []string
	for _, tg := range append(res.Targets, res.NotRendered...) {
		names = append(names, tg.Name)
		if strings.Contains(tg.Name, "${") || strings.Contains(tg.Skip, "${") {
			t.Errorf("target %q (skip %q) is named by an unsubstituted variable", tg.Name, tg.Skip)
		}
	}
	if diff := cmp.Diff([]string{"apps", "forgejo", "forgejo-anubis"}, names); diff != "" {
		t.Fatalf("targets (-want +got):\n%s", diff)
	}
	for _, tg := range res.Targets {
		switch tg.Name {
		case "forgejo":
			if diff := cmp.Diff(map[string]string{"APP": "forgejo"}, tg.Render.Substitute); diff != "" {
				t.Errorf("forgejo renders with variables (-want +got):\n%s", diff)
			}
			data := renderedData(t, root, tg, "forgejo-settings")
			if diff := cmp.Diff(map[string]string{"claim": "forgejo", "upper": "FORGEJO", "literal": "${APP}"}, data); diff != "" {
				t.Errorf("settings (-want +got):\n%s", diff)
			}
		case "forgejo-anubis":
			if tg.Controller == nil || tg.Controller.Kind != "HelmRelease" || tg.Controller.Namespace != "forgejo" {
				t.Errorf("forgejo-anubis controller = %+v", tg.Controller)
			}
			data := renderedData(t, root, tg, "forgejo-anubis")
			if diff := cmp.Diff(map[string]string{"target": "forgejo", "claim": "forgejo-data"}, data); diff != "" {
				t.Errorf("anubis values (-want +got):\n%s", diff)
			}
		}
	}
}

// renderedData renders the target as the pipeline does and returns the data of
// its ConfigMap forgejo/name.
func renderedData(t *testing.T, root string, tg config.Target, name string) map[string]string {
	t.Helper()
	set, err := realRenderer(t.Context(), root, tg)
	if err != nil {
		t.Fatal(err)
	}
	cm := set.Index()[render.ObjectKey{Kind: "ConfigMap", Namespace: "forgejo", Name: name}]
	if cm == nil {
		t.Fatalf("%s renders %v", tg.Name, keys(set))
	}
	data, _, _ := unstructured.NestedStringMap(cm.Obj.Object, "data")
	return data
}

// TestHelmReleaseFidelityDiscovery reads what helm-controller applies to a
// chart's output and values: spec.postRenderers and commonMetadata into the
// render options, valuesFrom typed as ChartValuesFromReferences types it, the
// default release name shortened past 53 characters as ShortenName does.
func TestHelmReleaseFidelityDiscovery(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"clusters/main/web.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web-with-a-rather-long-name-for-a-release, namespace: flux-system}
spec:
  targetNamespace: shop-production
  chart:
    spec:
      chart: ./charts/web
      sourceRef: {kind: GitRepository, name: flux-system}
  valuesFrom:
    - {kind: ConfigMap, name: web-values}
    - {kind: ConfigMap, name: web-values, valuesKey: replicas, targetPath: replicas}
    - {kind: ConfigMap, name: web-values, valuesKey: quoted, targetPath: quoted}
    - {kind: ConfigMap, name: web-values, valuesKey: list, targetPath: literal, literal: true}
    - {kind: Secret, name: web-secret, valuesKey: values.yaml}
    - {kind: Secret, name: web-secret, valuesKey: token, targetPath: auth.token}
    - {kind: ConfigMap, name: absent, optional: true}
  values:
    env: prod
  postRenderStrategy: NoHooks
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment}
            patch: |
              - {op: add, path: /spec/paused, value: true}
        images:
          - {name: nginx, newTag: "1.28"}
  commonMetadata:
    labels: {team: shop}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-values, namespace: flux-system}
data:
  values.yaml: |
    env: staging
    image: {tag: "1.0"}
  replicas: "3"
  quoted: "'3'"
  list: "a,b"
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: flux-system}
stringData:
  values.yaml: |
    db: {password: s3cret-value}
  token: s3cret-token
`,
	})
	res := discoverAt(t, root, thisRepo)
	if len(res.Targets) != 1 {
		t.Fatalf("targets %v", project(res.Targets))
	}
	h := res.Targets[0].Render.Helm
	// 53 characters at most: 40, a dash and 12 hex digits of the SHA-256 of
	// shop-production-web-with-a-rather-long-name-for-a-release.
	if want := "shop-production-web-with-a-rather-long-n-1ebe83ca3716"; h.ReleaseName != want {
		t.Errorf("release name %q, want %q", h.ReleaseName, want)
	}
	wantValues := map[string]any{
		"env":      "prod",
		"image":    map[string]any{"tag": "1.0"},
		"replicas": int64(3),
		"quoted":   "3",
		"literal":  "a,b",
		"db":       map[string]any{"password": "(hidden Secret web-secret/values.yaml)"},
		"auth":     map[string]any{"token": "(hidden Secret web-secret/token)"},
	}
	if diff := cmp.Diff(wantValues, h.Values); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	wantPR := []render.PostRenderer{{
		Patches: []string{"patch: |\n  - {op: add, path: /spec/paused, value: true}\ntarget:\n  kind: Deployment\n"},
		Images:  []string{"nginx:1.28"},
	}}
	if diff := cmp.Diff(wantPR, h.PostRenderers); diff != "" {
		t.Errorf("post-renderers (-want +got):\n%s", diff)
	}
	if h.PostRenderStrategy != "NoHooks" || !cmp.Equal(h.CommonLabels, map[string]string{"team": "shop"}) {
		t.Errorf("strategy %q, common labels %v", h.PostRenderStrategy, h.CommonLabels)
	}
	for _, n := range res.Targets[0].Notes {
		if strings.Contains(n, "s3cret") {
			t.Errorf("a note leaks the Secret: %s", n)
		}
	}
}
