package diffing

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// normalizedEqual reports, without copying either object, that Normalize(a) and
// Normalize(b) hold the same content, so objectDiff has nothing to show for them.
// It answers true only when that is certain; false means "compare the slow way".
// Secrets (whose stringData Normalize folds into data and whose values are
// masked) and objects with a nil content map are always left to the slow way.
// Most objects of a preview are unchanged between base and head and equal to
// their live selves, and copying each twice (Normalize, Mask) to learn that was
// a sixth of a large preview's CPU.
func normalizedEqual(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil || a.Object == nil || b.Object == nil || isSecret(a) || isSecret(b) {
		return false
	}
	if a == b {
		return true // a prediction of an apply that changes nothing is live itself
	}
	if !sameTopLevel(a.Object, b.Object) || !sameTopLevel(b.Object, a.Object) {
		return false
	}
	am, aMap := a.Object["metadata"].(map[string]any)
	bm, bMap := b.Object["metadata"].(map[string]any)
	if aMap != bMap {
		return false
	}
	if !aMap {
		return true // compared as any other field by sameTopLevel
	}
	return sameMetadata(am, bm) && sameMetadata(bm, am)
}

// sameTopLevel reports whether every top-level field of a that Normalize keeps is
// in b with the same value. metadata, when a map, is compared by sameMetadata.
func sameTopLevel(a, b map[string]any) bool {
	for k, av := range a {
		if k == "status" {
			continue
		}
		if _, isMap := av.(map[string]any); isMap && k == "metadata" {
			continue
		}
		bv, ok := b[k]
		if !ok || !JSONEqual(av, bv) {
			return false
		}
	}
	return true
}

// sameMetadata reports whether every metadata field of a that Normalize keeps is
// kept in b with the same value, as Normalize leaves it: without the server-set
// fields, the noisy annotations, and empty annotations, labels and finalizers.
func sameMetadata(a, b map[string]any) bool {
	for k, av := range a {
		if slices.Contains(serverMetadata, k) {
			continue
		}
		av, aKept := normalMetaValue(k, av)
		if !aKept {
			continue
		}
		bv, bKept := b[k]
		if bKept {
			bv, bKept = normalMetaValue(k, bv)
		}
		if !bKept {
			return false
		}
		if k == "annotations" {
			if am, ok := av.(map[string]any); ok {
				bm, ok := bv.(map[string]any)
				if !ok || !sameAnnotations(am, bm) {
					return false
				}
				continue
			}
		}
		if !JSONEqual(av, bv) {
			return false
		}
	}
	return true
}

// normalMetaValue says whether Normalize keeps metadata field k with value v: an
// annotations map left empty without the noisy annotations, and empty labels and
// finalizers are dropped.
func normalMetaValue(k string, v any) (any, bool) {
	switch k {
	case "annotations":
		if m, ok := v.(map[string]any); ok && annotationCount(m) == 0 {
			return nil, false
		}
	case "labels":
		if m, ok := v.(map[string]any); ok && len(m) == 0 {
			return nil, false
		}
	case "finalizers":
		if l, ok := v.([]any); ok && len(l) == 0 {
			return nil, false
		}
	}
	return v, true
}

// annotationCount counts the annotations Normalize keeps.
func annotationCount(m map[string]any) int {
	n := 0
	for k := range m {
		if !slices.Contains(noisyAnnotations, k) {
			n++
		}
	}
	return n
}

// sameAnnotations compares two annotation maps without the noisy annotations.
func sameAnnotations(a, b map[string]any) bool {
	if annotationCount(a) != annotationCount(b) {
		return false
	}
	for k, av := range a {
		if slices.Contains(noisyAnnotations, k) {
			continue
		}
		bv, ok := b[k]
		if !ok || !JSONEqual(av, bv) {
			return false
		}
	}
	return true
}

// JSONEqual is reflect.DeepEqual for unstructured content, without reflection for
// the types JSON decodes to (other types go to reflect.DeepEqual): a nil and an
// empty map (or list) differ, and one map is equal to itself, as there.
// diffing/live compares head, base and live objects with it too.
func JSONEqual(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case nil:
		return b == nil
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		if reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() {
			return true // one map, as reflect.DeepEqual finds
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !JSONEqual(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !JSONEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
