package gitops

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render"
)

// TestFluxFixtureEndToEnd renders the apps target of the Flux fixture with the real
// renderer and applies its postBuild variables, as the pipeline does.
func TestFluxFixtureEndToEnd(t *testing.T) {
	res, root := discoverFixture(t, "flux", fluxOrigin)
	var found bool
	for _, tg := range res.Targets {
		if tg.Name != "apps" {
			continue
		}
		found = true
		// The render process applies the variables (Options.Substitute).
		tg.Render.Substitute = tg.Substitute
		out, err := realRenderer(t.Context(), root, tg)
		if err != nil {
			t.Fatalf("rendering apps: %v", err)
		}
		idx := out.Index()
		dep := idx[render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}]
		cm := idx[render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}]
		if dep == nil || cm == nil {
			t.Fatalf("rendered keys: %v", keys(out))
		}
		replicas, _, _ := unstructured.NestedInt64(dep.Obj.Object, "spec", "replicas")
		if replicas != 3 {
			t.Errorf("replicas = %d, want 3 from the ConfigMap cluster-vars", replicas)
		}
		image := dep.Obj.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"]
		if image != "nginx:1.27.3" {
			t.Errorf("image = %v, want the Kustomization's images override nginx:1.27.3", image)
		}
		data, _, _ := unstructured.NestedStringMap(cm.Obj.Object, "data")
		want := map[string]string{
			"cluster":   "prod",
			"url":       "https://shop.prod.example.com",
			"api_token": "(hidden Secret cluster-secrets/api_token)",
			"log_level": "info",
			"literal":   "${not_a_variable}",
		}
		if diff := cmp.Diff(want, data); diff != "" {
			t.Errorf("settings data (-want +got):\n%s", diff)
		}
		b, _ := yaml.Marshal(cm.Obj.Object)
		if strings.Contains(string(b), secretValue) {
			t.Error("the Secret value reached a rendered object")
		}
	}
	if !found {
		t.Fatal("no apps target")
	}
}

func keys(set render.ObjectSet) []string {
	var out []string
	for _, o := range set.Objects {
		out = append(out, o.Key.String())
	}
	return out
}
