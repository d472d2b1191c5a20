package render_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

func TestDecodeYAML(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  []any
		lines []int
	}{
		{
			name: "scalars become JSON types; timestamps stay text",
			in:   "i: 3\nf: 1.5\nb: true\nn: null\nt: 2024-01-02\ns: '007'\nbig: 99999999999999999999\nnan: .nan\n",
			want: []any{map[string]any{
				"i": int64(3), "f": 1.5, "b": true, "n": nil, "t": "2024-01-02", "s": "007",
				"big": 1e20, "nan": ".nan",
			}},
			lines: []int{1},
		},
		{
			name: "merge keys, explicit keys win",
			in:   "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
			want: []any{map[string]any{
				"base":    map[string]any{"x": int64(1), "y": int64(2)},
				"derived": map[string]any{"x": int64(1), "y": int64(3)},
			}},
			lines: []int{1},
		},
		{
			name:  "empty documents are dropped; lines are per document",
			in:    "---\n# only a comment\n---\na: 1\n---\n---\n- x\n",
			want:  []any{map[string]any{"a": int64(1)}, []any{"x"}},
			lines: []int{4, 7},
		},
		{
			name:  "non-string keys become strings",
			in:    "1: one\ntrue: yes\n",
			want:  []any{map[string]any{"1": "one", "true": "yes"}},
			lines: []int{1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := render.DecodeYAML([]byte(tc.in), "f.yaml")
			if err != nil {
				t.Fatalf("DecodeYAML: %v", err)
			}
			var got []any
			var lines []int
			for _, d := range docs {
				got = append(got, d.Value)
				lines = append(lines, d.Line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.lines, lines); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeYAMLErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantLine int
		wantMsg  string
	}{
		{"self-referencing alias", "a: &a [*a]\n", 1, "alias"},
		{"mapping value in wrong place", "a: b\nc: d: e\n", 2, "mapping values are not allowed"},
		{"unclosed flow mapping", "a: 1\nb: {x: 1\nc: 2\n", 2, "did not find expected"},
		{"complex key", "? [a]\n: b\n", 1, "mapping keys must be scalars"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render.DecodeYAML([]byte(tc.in), "f.yaml")
			var re *render.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *render.Error", err)
			}
			if re.File != "f.yaml" || re.Line != tc.wantLine || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("got %q (line %d), want f.yaml line %d containing %q", err, re.Line, tc.wantLine, tc.wantMsg)
			}
		})
	}
}

func TestParse(t *testing.T) {
	in := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: ns}\n" +
		"- just: data\n---\nkind: NoVersion\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n"
	objs, notes, err := render.Parse([]byte(in), "m.yaml")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key.String()+" from "+o.Source)
	}
	wantKeys := []string{"ConfigMap/ns/a from m.yaml", "Deployment/web from m.yaml"}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantNotes := []string{
		"m.yaml:7: skipped a list item that is not a Kubernetes object (no apiVersion/kind)",
		"m.yaml:9: skipped a document that is not a Kubernetes object (no apiVersion/kind)",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
}

func TestClusterScoped(t *testing.T) {
	tests := []struct {
		gk   schema.GroupKind
		want bool
	}{
		{schema.GroupKind{Kind: "Namespace"}, true},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, true},
		{schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, true},
		{schema.GroupKind{Kind: "ConfigMap"}, false},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, false},
		{schema.GroupKind{Group: "example.com", Kind: "ClusterRole"}, false},
	}
	for _, tc := range tests {
		if got := render.ClusterScoped(tc.gk); got != tc.want {
			t.Errorf("ClusterScoped(%v) = %v, want %v", tc.gk, got, tc.want)
		}
	}
}

// TestRenderNamespaceDefaultUsesCRDScope checks that custom resources whose CRD in
// the same render is cluster-scoped get no namespace, and namespaced ones do.
func TestRenderNamespaceDefaultUsesCRDScope(t *testing.T) {
	crd := func(kind, scope string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " +
			strings.ToLower(kind) + "s.example.com\nspec:\n  group: example.com\n  scope: " + scope +
			"\n  names:\n    kind: " + kind + "\n    plural: " + strings.ToLower(kind) + "s\n"
	}
	root := writeTree(t, map[string]string{
		"app/crds.yaml": crd("Fleet", "Cluster") + "---\n" + crd("Ship", "Namespaced"),
		"app/cr.yaml": "apiVersion: example.com/v1\nkind: Fleet\nmetadata:\n  name: f\n---\n" +
			"apiVersion: example.com/v1\nkind: Ship\nmetadata:\n  name: s\n---\n" +
			"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n",
	})
	opts := render.DefaultOptions()
	opts.Namespace = "fleet"
	set, err := render.Render(t.Context(), root, "app", opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	var keys []string
	for _, o := range set.Objects {
		keys = append(keys, o.Key.String())
		if o.Obj.GetNamespace() != o.Key.Namespace {
			t.Errorf("%s: object namespace %q differs from key", o.Key, o.Obj.GetNamespace())
		}
	}
	want := []string{
		"Namespace/n", "CustomResourceDefinition/fleets.example.com",
		"CustomResourceDefinition/ships.example.com", "Fleet/f", "Ship/fleet/s",
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

// TestRenderTimeout checks that a template that runs too long is stopped with an
// *Error instead of holding the caller.
func TestRenderTimeout(t *testing.T) {
	root := writeTree(t, map[string]string{
		"chart/Chart.yaml":          chartYAML,
		"chart/templates/slow.yaml": "{{- range until 3000 }}{{- range until 3000 }}{{- end }}{{- end }}\n" + cm,
	})
	opts := render.DefaultOptions()
	opts.Timeout = 50 * time.Millisecond
	start := time.Now()
	_, err := render.Render(t.Context(), root, "chart", opts)
	var re *render.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "took longer than 50ms") {
		t.Fatalf("got %v, want a timeout *render.Error", err)
	}
	if re.File != "chart" {
		t.Errorf("error names %q, want the target chart", re.File)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("Render returned after %s", waited)
	}
}

func TestUnmarshalYAML(t *testing.T) {
	type refs struct {
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
	}
	var r refs
	if err := render.UnmarshalYAML([]byte("kind: Component\nresources: [a, b]\n"), "k.yaml", &r); err != nil || r.Kind != "Component" || len(r.Resources) != 2 {
		t.Fatalf("UnmarshalYAML = %+v, %v", r, err)
	}
	var n map[string]any
	if err := render.UnmarshalYAML([]byte("n: 1000000\n"), "v.yaml", &n); err != nil || n["n"] != 1e6 {
		t.Fatalf("numbers are float64 in an any, as with sigs.k8s.io/yaml: %#v, %v", n, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"a: 1\n---\nb: 2\n", `k.yaml:3: invalid YAML: only one document is allowed here; remove the "---" separator`},
		{"kind: [x]\nresources: [a]\n", "k.yaml:1: kind: a array where string is expected"},
		{"a: 1\na: 2\n", `k.yaml:2: invalid YAML: duplicate key "a" (first defined on line 1)`},
		{strings.Repeat("[", render.MaxDepth+2) + strings.Repeat("]", render.MaxDepth+2), fmt.Sprintf("k.yaml:1: invalid YAML: nested more than %d levels deep", render.MaxDepth)},
	} {
		var r refs
		if err := render.UnmarshalYAML([]byte(tc.in), "k.yaml", &r); err == nil || err.Error() != tc.want {
			t.Errorf("render.UnmarshalYAML(%q) error = %v, want %q", tc.in, err, tc.want)
		}
	}
	r = refs{Kind: "kept"}
	if err := render.UnmarshalYAML([]byte("# nothing\n"), "k.yaml", &r); err != nil || r.Kind != "kept" {
		t.Errorf("an empty document changed the value: %+v, %v", r, err)
	}
}

// TestDecodeYAMLLastKeyWins: a repeated key reads as go-yaml v2 reads it
// (sigs.k8s.io/yaml.Unmarshal, Argo CD's manifest decoder): the last value,
// in nested mappings too, each repeated key listed once even when an alias
// converts its mapping again; DecodeYAML still refuses it.
func TestDecodeYAMLLastKeyWins(t *testing.T) {
	in := "a: 1\nm: &m\n  x: one\n  x: two\na: 3\ncopy: *m\n"
	docs, dups, err := render.DecodeYAMLLastKeyWins([]byte(in), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": int64(3), "m": map[string]any{"x": "two"}, "copy": map[string]any{"x": "two"}}
	if len(docs) != 1 || !reflect.DeepEqual(docs[0].Value, want) {
		t.Errorf("value %#v, want %#v", docs, want)
	}
	wantDups := []render.DuplicateKey{{File: "f.yaml", Key: "x", Line: 4, First: 3}, {File: "f.yaml", Key: "a", Line: 5, First: 1}}
	if !reflect.DeepEqual(dups, wantDups) {
		t.Errorf("duplicates %+v, want %+v", dups, wantDups)
	}
	if _, err := render.DecodeYAML([]byte(in), "f.yaml"); err == nil || !strings.Contains(err.Error(), `f.yaml:4: invalid YAML: duplicate key "x"`) {
		t.Errorf("DecodeYAML error = %v, want the duplicate refused", err)
	}
}
