package gitops

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render"
)

func objectSet(t *testing.T, manifests ...string) render.ObjectSet {
	t.Helper()
	var set render.ObjectSet
	for _, m := range manifests {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		set.Objects = append(set.Objects, render.Object{Key: render.KeyOf(u), Obj: u, Source: "apps/x.yaml"})
	}
	set.Sort()
	return set
}

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"domain": "example.com", "replicas": "3", "empty": "", "name": "web"}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "plain, defaults and escapes",
			in: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {
				url: "https://${domain}/x", unset: "[${missing}]", dflt: "${missing:=fallback}",
				dash: "${empty:-was-empty}", eq: "${empty=kept-empty}", eqUnset: "${missing=used}",
				literal: "$${domain}", dollar: "costs $5", notvar: "${1abc}"}}`,
			want: `apiVersion: v1
data:
  dash: was-empty
  dflt: fallback
  dollar: costs $5
  eq: null
  eqUnset: used
  literal: ${domain}
  notvar: ${1abc}
  unset: '[]'
  url: https://example.com/x
kind: ConfigMap
metadata:
  name: c
`,
		},
		{
			name: "a number substituted into YAML text becomes a number, and names change keys",
			in:   `{apiVersion: apps/v1, kind: Deployment, metadata: {name: "${name}-app"}, spec: {replicas: "${replicas}"}}`,
			want: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-app
spec:
  replicas: 3
`,
		},
		{
			name: "disabled by annotation",
			in:   `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}}, data: {a: "${domain}"}}`,
			want: `apiVersion: v1
data:
  a: ${domain}
kind: ConfigMap
metadata:
  annotations:
    kustomize.toolkit.fluxcd.io/substitute: disabled
  name: c
`,
		},
		{
			name:    "an unsupported operator names the variable only",
			in:      `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${domain^^}"}}`,
			wantErr: "apps/x.yaml: substituting variables in ConfigMap/c: variable domain: unsupported operator in ${domain…}",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := objectSet(t, tc.in)
			got, err := Substitute(in, vars)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Objects) != 1 {
				t.Fatalf("got %d objects", len(got.Objects))
			}
			b, err := yaml.Marshal(got.Objects[0].Obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.Objects[0].Key != render.KeyOf(got.Objects[0].Obj) {
				t.Errorf("key %v does not match object %v", got.Objects[0].Key, render.KeyOf(got.Objects[0].Obj))
			}
			if in.Objects[0].Obj.GetName() == "web-app" {
				t.Error("Substitute modified its input")
			}
		})
	}
}

func TestSubstituteNeverLeaksValues(t *testing.T) {
	// A value that breaks the YAML must not be quoted back in the error.
	vars := map[string]string{"token": "hunter2\n  bad: [unclosed"}
	in := objectSet(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${token}"}}`)
	_, err := Substitute(in, vars)
	if err == nil {
		t.Fatal("want an error for a value that breaks the YAML")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the value: %v", err)
	}
}

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
		set, err := realRenderer(t.Context(), root, tg)
		if err != nil {
			t.Fatalf("rendering apps: %v", err)
		}
		out, err := Substitute(set, tg.Substitute)
		if err != nil {
			t.Fatalf("Substitute: %v", err)
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
