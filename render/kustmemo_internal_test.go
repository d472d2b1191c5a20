package render

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestKustomizationParsesRemembered: two overlays of one base, with a
// deprecated field in the base and a helmCharts-free namespace chain, render
// as they did when every read parsed again; the second overlay parses only its
// own kustomization, not the base's or the
// component's again; and a kustomization that fails the screen fails it every
// time, naming its own file.
func TestKustomizationParsesRemembered(t *testing.T) {
	const k = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	files := map[string]string{
		"base/kustomization.yaml": k + "commonLabels: {app: web}\nresources: [deploy.yaml]\n",
		"base/deploy.yaml":        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
		"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [sa.yaml]\n",
		"comp/sa.yaml":            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: extra\n",
		"dev/kustomization.yaml":  k + "namespace: dev\nresources: [../base]\ncomponents: [../comp]\n",
		"prod/kustomization.yaml": k + "namespace: prod\nresources: [../base]\ncomponents: [../comp]\n",
		"bad1/kustomization.yaml": k + "resources: [a.yaml]\nresources: [b.yaml]\n",
		"bad2/kustomization.yaml": k + "resources: [a.yaml]\nresources: [b.yaml]\n",
	}
	root := writeFiles(t, files)
	opts := DefaultOptions()
	opts.Renderer = RendererKustomize
	render := func(target string) (ObjectSet, error) {
		return renderLocal(t.Context(), root, target, opts)
	}
	forget := func() {
		kustParses.mu.Lock()
		clear(kustParses.m)
		kustParses.mu.Unlock()
	}

	forget()
	if _, err := render("dev"); err != nil {
		t.Fatal(err)
	}
	before := kustParsesRun.Load()
	prod, err := render("prod")
	if err != nil {
		t.Fatal(err)
	}
	remembered := kustParsesRun.Load() - before
	forget()
	before = kustParsesRun.Load()
	fresh, err := render("prod")
	if err != nil {
		t.Fatal(err)
	}
	all := kustParsesRun.Load() - before
	if !reflect.DeepEqual(prod, fresh) {
		t.Errorf("with the base's parses remembered:\n%+v\nparsed afresh:\n%+v", prod, fresh)
	}
	if !slices.ContainsFunc(prod.Notes, func(n string) bool {
		return strings.Contains(n, "base/kustomization.yaml") && strings.Contains(n, "commonLabels")
	}) {
		t.Errorf("the base's deprecation note is missing from the second overlay's render: %q", prod.Notes)
	}
	// Afresh, every kustomization of the build is parsed (each in several
	// ways); remembered, the base's and the component's are not.
	if remembered >= all || all-remembered < 4 {
		t.Errorf("second overlay ran %d parses, a fresh render %d: the shared base and component were parsed again", remembered, all)
	}

	for _, target := range []string{"bad1", "bad2", "bad1"} {
		_, err := render(target)
		if err == nil || !strings.Contains(err.Error(), target+"/kustomization.yaml") {
			t.Errorf("%s: %v, want an error naming %s/kustomization.yaml", target, err, target)
		}
	}
}
