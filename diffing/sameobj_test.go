package diffing

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// normalizeVariants are versions of one Deployment that differ in what Normalize
// drops, in what it keeps, and in the forms it treats alike (nil, empty, absent).
func normalizeVariants(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	base := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  annotations: {team: a}
  finalizers: [x]
spec:
  replicas: 2
  template: {spec: {containers: [{name: web, image: "web:1"}]}}
`)
	muts := []func(o map[string]any, md map[string]any){
		func(o, md map[string]any) {},
		func(o, md map[string]any) { o["status"] = map[string]any{"ready": int64(1)} },
		func(o, md map[string]any) { o["status"] = "x" },
		func(o, md map[string]any) {
			md["resourceVersion"], md["uid"], md["generation"] = "7", "u", int64(3)
			md["managedFields"] = []any{map[string]any{"manager": "m"}}
			md["creationTimestamp"] = nil
		},
		func(o, md map[string]any) { md["annotations"].(map[string]any)[lastApplied] = "{}" },
		func(o, md map[string]any) {
			md["annotations"] = map[string]any{"deployment.kubernetes.io/revision": "3"}
		},
		func(o, md map[string]any) { md["annotations"] = map[string]any{} },
		func(o, md map[string]any) { md["annotations"] = map[string]any(nil) },
		func(o, md map[string]any) { md["annotations"] = nil },
		func(o, md map[string]any) { delete(md, "annotations") },
		func(o, md map[string]any) { md["annotations"] = "team" },
		func(o, md map[string]any) { md["annotations"] = map[string]any{"team": "b"} },
		func(o, md map[string]any) { md["annotations"] = map[string]any{"team": "a", "other": "x"} },
		func(o, md map[string]any) { md["annotations"] = map[string]any{"team": int64(1)} },
		func(o, md map[string]any) { md["labels"] = map[string]any{} },
		func(o, md map[string]any) { md["labels"] = map[string]any(nil) },
		func(o, md map[string]any) { delete(md, "labels") },
		func(o, md map[string]any) { md["labels"] = nil },
		func(o, md map[string]any) { md["labels"] = map[string]any{"app": "web", "x": "y"} },
		func(o, md map[string]any) { md["finalizers"] = []any{} },
		func(o, md map[string]any) { md["finalizers"] = []any(nil) },
		func(o, md map[string]any) { delete(md, "finalizers") },
		func(o, md map[string]any) { md["finalizers"] = []any{"y"} },
		func(o, md map[string]any) {
			delete(md, "labels")
			delete(md, "annotations")
			delete(md, "finalizers")
		},
		func(o, md map[string]any) { md["name"] = "other" },
		func(o, md map[string]any) { o["spec"].(map[string]any)["replicas"] = 2.0 },
		func(o, md map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(2) },
		func(o, md map[string]any) { o["spec"] = nil },
		func(o, md map[string]any) { delete(o, "spec") },
		func(o, md map[string]any) { o["data"] = map[string]any{} },
		func(o, md map[string]any) { o["metadata"] = map[string]any{} },
		func(o, md map[string]any) { o["metadata"] = map[string]any(nil) },
		func(o, md map[string]any) { o["metadata"] = "meta" },
		func(o, md map[string]any) { o["metadata"] = nil },
		func(o, md map[string]any) { delete(o, "metadata") },
	}
	var out []*unstructured.Unstructured
	for _, m := range muts {
		o := runtime.DeepCopyJSON(base.Object)
		md, _ := o["metadata"].(map[string]any)
		m(o, md)
		out = append(out, &unstructured.Unstructured{Object: o})
		// The same change on top of a status and server-set metadata.
		o2 := runtime.DeepCopyJSON(o)
		o2["status"] = map[string]any{"observedGeneration": int64(4)}
		if md2, ok := o2["metadata"].(map[string]any); ok && md2 != nil {
			md2["resourceVersion"] = "99"
		}
		out = append(out, &unstructured.Unstructured{Object: o2})
	}
	return out
}

// TestNormalizedEqualMatchesNormalize checks the copy-free comparison against its
// definition: for every pair of variants it answers exactly whether Normalize
// gives both the same content.
func TestNormalizedEqualMatchesNormalize(t *testing.T) {
	vs := normalizeVariants(t)
	equal := 0
	for i, a := range vs {
		for j, b := range vs {
			want := reflect.DeepEqual(Normalize(a).Object, Normalize(b).Object)
			if got := normalizedEqual(a, b); got != want {
				t.Errorf("variants %d and %d: normalizedEqual = %v, Normalize says %v\n%v\n%v", i, j, got, want, a.Object, b.Object)
			}
			if want && i != j {
				equal++
			}
		}
	}
	if equal < 50 {
		t.Errorf("only %d pairs of distinct variants normalise alike; the variants test little", equal)
	}
}

// TestNormalizedEqualLeavesSecretsAndNil checks the cases always left to the full
// comparison: Secrets (folded and masked), nil objects and nil content.
func TestNormalizedEqualLeavesSecretsAndNil(t *testing.T) {
	s := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==}\n")
	d := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	for _, c := range [][2]*unstructured.Unstructured{{s, s}, {nil, nil}, {d, nil}, {{}, {}}, {d, {}}} {
		if normalizedEqual(c[0], c[1]) {
			t.Errorf("normalizedEqual(%v, %v) = true", c[0], c[1])
		}
	}
	if !normalizedEqual(d, d.DeepCopy()) {
		t.Error("a ConfigMap and its copy are not equal")
	}
}

// TestNormalizedViewMatchesNormalize checks that the copy-free view has
// Normalize's content and leaves the object it views as it was, for Secrets whose
// stringData folds into data too.
func TestNormalizedViewMatchesNormalize(t *testing.T) {
	vs := normalizeVariants(t)
	vs = append(vs,
		obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, annotations: {"+lastApplied+": '{}', a: b}}\ndata: {a: YQ==}\nstringData: {b: two, a: one}\n"),
		obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {b: two}\n"),
		obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==}\n"),
		&unstructured.Unstructured{}, nil)
	for i, o := range vs {
		var before map[string]any
		if o != nil {
			before = runtime.DeepCopyJSON(o.Object)
		}
		view, want := normalizedView(o), Normalize(o)
		if (view == nil) != (want == nil) || (view != nil && !reflect.DeepEqual(view.Object, want.Object)) {
			t.Errorf("variant %d: view %v, Normalize %v", i, view, want)
		}
		if o != nil && !reflect.DeepEqual(o.Object, before) {
			t.Errorf("variant %d: normalizedView changed the object: %v, was %v", i, o.Object, before)
		}
	}
}

// TestMaskReadMatchesMask checks that maskRead copies when Mask changes
// something (and not for the plain variants), and has Mask's content either way.
func TestMaskReadMatchesMask(t *testing.T) {
	vs := append(normalizeVariants(t),
		obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==}\n"),
		obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {"+lastApplied+": '{\"data\":1}'}}\n"),
		obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, annotations: {"+lastApplied+": '{}', n: 1}}\n"))
	for i, o := range vs {
		got, want := maskRead(o), Mask(o)
		if !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("variant %d: maskRead %v, Mask %v", i, got.Object, want.Object)
		}
		if got == o && !reflect.DeepEqual(o.Object, want.Object) {
			t.Errorf("variant %d: maskRead returned the object itself, but Mask changes it", i)
		}
		if i < 70 && got != o && reflect.DeepEqual(o.Object, want.Object) {
			t.Errorf("variant %d: maskRead copied an object Mask leaves as it is", i)
		}
	}
}

// TestJSONEqualMatchesDeepEqual compares JSONEqual with reflect.DeepEqual on
// every pair of tricky values (NaN, which DeepEqual finds equal to itself only
// inside one map, is left out).
func TestJSONEqualMatchesDeepEqual(t *testing.T) {
	var vals []any
	for _, v := range trickyValues() {
		if f, ok := v.(float64); ok && f != f {
			continue
		}
		vals = append(vals, v, []any{v}, map[string]any{"k": v})
	}
	vals = append(vals, []any{int64(1), int64(2)}, []any{int64(2), int64(1)}, map[string]any{"k": "v", "l": "w"}, map[string]any{"k": "v", "m": "w"})
	for i, a := range vals {
		for j, b := range vals {
			if got, want := JSONEqual(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("%d %#v, %d %#v: jsonEqual %v, DeepEqual %v", i, a, j, b, got, want)
			}
		}
	}
}
