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

// TestSubstitute pins Flux's own expansion (github.com/fluxcd/pkg/envsubst, as
// fluxcd/pkg kustomize/kustomize_varsub.go runs it): nested defaults, string
// operators, escapes, and strict mode (kustomize-controller's default since
// v1.9) failing on a variable that is neither set nor defaulted.
func TestSubstitute(t *testing.T) {
	vars := map[string]string{"domain": "example.com", "replicas": "3", "empty": "", "name": "web", "multi": "a\nb"}
	tests := []struct {
		name    string
		in      string
		strict  bool
		want    string
		wantErr string
	}{
		{
			name: "plain, defaults, nested defaults, operators and escapes",
			in: `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {
				url: "https://${domain}/x", unset: "[${missing}]", dflt: "${missing:=fallback}",
				dash: "${empty:-was-empty}", eq: "${empty=empty-too}", eqUnset: "${missing=used}",
				nested: "${KOPIUR_CLAIM:-${name}}", nestedSuffix: "${KOPIUR_CLAIM:-${name}-data}",
				upper: "${name^^}", literal: "$${domain}", dollar: "costs $5", bare: "$domain", newline: "${multi}"}}`,
			want: `apiVersion: v1
data:
  bare: $domain
  dash: was-empty
  dflt: fallback
  dollar: costs $5
  eq: empty-too
  eqUnset: used
  literal: ${domain}
  nested: web
  nestedSuffix: web-data
  newline: ab
  unset: '[]'
  upper: WEB
  url: https://example.com/x
kind: ConfigMap
metadata:
  name: c
`,
		},
		{
			name:   "strict: defaults still apply",
			in:     `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${missing:-${name}}"}}`,
			strict: true,
			want: `apiVersion: v1
data:
  a: web
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
			name:   "disabled by label",
			in:     `{apiVersion: v1, kind: ConfigMap, metadata: {name: c, labels: {kustomize.toolkit.fluxcd.io/substitute: disabled}}, data: {a: "${missing}"}}`,
			strict: true,
			want: `apiVersion: v1
data:
  a: ${missing}
kind: ConfigMap
metadata:
  labels:
    kustomize.toolkit.fluxcd.io/substitute: disabled
  name: c
`,
		},
		{
			name:    "strict: an unset variable without a default names the variable only",
			in:      `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${domain}-${missing}"}}`,
			strict:  true,
			wantErr: "apps/x.yaml: substituting variables in ConfigMap/c: variable missing is not set and has no default",
		},
		{
			name:    "an unclosed reference",
			in:      `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${domain"}}`,
			wantErr: "apps/x.yaml: substituting variables in ConfigMap/c: variable substitution failed: missing closing brace",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := objectSet(t, tc.in)
			got, err := substitute(in, vars, tc.strict, 1<<20)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
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

func TestSubstituteRefusesBadVarNames(t *testing.T) {
	in := objectSet(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${x}"}}`)
	_, err := substitute(in, map[string]string{"bad-name": "v"}, false, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "'bad-name' var name is invalid") {
		t.Fatalf("error = %v, want the var name refused as kustomize-controller does", err)
	}
}

func TestSubstituteBoundsOutput(t *testing.T) {
	big := strings.Repeat("x", 1000)
	in := objectSet(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "`+strings.Repeat("${big}", 200)+`"}}`)
	_, err := substitute(in, map[string]string{"big": big}, false, 50_000)
	if err == nil || !strings.Contains(err.Error(), "more than 50000 bytes after substitution") {
		t.Fatalf("error = %v, want the output limit", err)
	}
}

func TestSubstituteNeverLeaksValues(t *testing.T) {
	// A value that breaks the YAML must not be quoted back in the error.
	// (Flux removes newlines from values, so a quote breaks it.)
	vars := map[string]string{"token": "hunter2\" bad: [unclosed"}
	in := objectSet(t, `{apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: "${token}"}}`)
	_, err := substitute(in, vars, false, 1<<20)
	if err == nil {
		t.Fatal("want an error for a value that breaks the YAML")
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error leaks the value: %v", err)
	}
}
