package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func objectSet(t *testing.T, manifests ...string) ObjectSet {
	t.Helper()
	var set ObjectSet
	for _, m := range manifests {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(m), &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		set.Objects = append(set.Objects, Object{Key: KeyOf(u), Obj: u, Source: "apps/x.yaml"})
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
			got, err := substitute(in, vars, 1<<20)
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
			if got.Objects[0].Key != KeyOf(got.Objects[0].Obj) {
				t.Errorf("key %v does not match object %v", got.Objects[0].Key, KeyOf(got.Objects[0].Obj))
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
	_, err := substitute(in, vars, 1<<20)
	if err == nil {
		t.Fatal("want an error for a value that breaks the YAML")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the value: %v", err)
	}
}
