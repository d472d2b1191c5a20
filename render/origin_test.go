package render_test

import (
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestKustomizeOriginsThroughTransformers: every object of a kustomize target
// keeps the file it came from (or, when a generator made it, the kustomization
// with the generator) through a chain of transformers at several levels, with
// the generator's hash suffix marked; and no kustomize build annotation reaches
// the output, not even when a kustomization asks for transformer annotations
// (the wrapper's buildMetadata is the one kustomize uses at every level, and
// render/kustomize.go relies on that to skip kustomize's transformer list).
func TestKustomizeOriginsThroughTransformers(t *testing.T) {
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.example/web:1.0\n"
	svc := "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  annotations:\n    keep: \"yes\"\nspec:\n  ports:\n  - port: 80\n"
	root := writeTree(t, map[string]string{
		"base/kustomization.yaml": kustHeader + "resources: [deploy.yaml, svc.yaml]\nlabels:\n- pairs: {tier: web}\ncommonAnnotations: {team: shop}\n" +
			"configMapGenerator:\n- name: settings\n  literals: [A=1]\n",
		"base/deploy.yaml": deploy,
		"base/svc.yaml":    svc,
		"overlay/kustomization.yaml": kustHeader + "buildMetadata: [transformerAnnotations]\nresources: [../base, extra.yaml]\nnamespace: prod\nnamePrefix: p-\n" +
			"images:\n- name: registry.example/web\n  newTag: \"2.0\"\nreplicas:\n- name: web\n  count: 3\n" +
			"configMapGenerator:\n- name: settings\n  behavior: merge\n  literals: [B=2]\n- name: flags\n  literals: [C=3]\n" +
			"patches:\n- patch: |-\n    apiVersion: v1\n    kind: Service\n    metadata:\n      name: web\n    spec:\n      type: NodePort\n" +
			"- target: {kind: Deployment}\n  patch: |-\n    - op: add\n      path: /metadata/annotations/patched\n      value: \"true\"\n",
		"overlay/extra.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n",
	})
	set, err := render.Render(t.Context(), root, "overlay", render.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range set.Objects {
		for k := range o.Obj.GetAnnotations() {
			switch k {
			case "config.kubernetes.io/origin", "alpha.config.kubernetes.io/transformations":
				t.Errorf("%s: build annotation %s in the output", o.Key, k)
			}
		}
	}
	bySource := map[string]string{}
	hashes := map[string]bool{}
	for _, o := range set.Objects {
		name := o.Key.Kind + "/" + o.Key.Name
		if o.HashSuffix != "" {
			name = o.Key.Kind + "/" + o.Key.Name[:len(o.Key.Name)-len(o.HashSuffix)-1]
			hashes[name] = true
		}
		bySource[name] = o.Source
	}
	wantSources := map[string]string{
		"Deployment/p-web":        "base/deploy.yaml",
		"Service/p-web":           "base/svc.yaml",
		"ServiceAccount/p-runner": "overlay/extra.yaml",
		"ConfigMap/p-settings":    "base/kustomization.yaml",
		"ConfigMap/p-flags":       "overlay/kustomization.yaml",
	}
	for name, src := range wantSources {
		if bySource[name] != src {
			t.Errorf("%s: source %q, want %q (all: %v)", name, bySource[name], src, bySource)
		}
	}
	if len(bySource) != len(wantSources) {
		t.Errorf("objects %v, want %v", bySource, wantSources)
	}
	for _, name := range []string{"ConfigMap/p-settings", "ConfigMap/p-flags"} {
		if !hashes[name] {
			t.Errorf("%s: generator hash suffix not marked (marked: %v)", name, hashes)
		}
	}
}
