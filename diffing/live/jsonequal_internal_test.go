package live

import (
	"math"
	"reflect"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
)

// TestJSONEqualIsDeepEqual: diffing.JSONEqual, which the reuse comparison uses, answers what reflect.DeepEqual answers for
// unstructured content: nested maps and lists, nil against empty, numbers of
// different Go types, NaN, values of other types, one map compared with itself.
func TestJSONEqualIsDeepEqual(t *testing.T) {
	shared := map[string]any{"a": []any{int64(1)}}
	values := []any{
		nil, "", "x", true, false, int64(1), int64(2), float64(1), math.NaN(), 1, int32(1),
		map[string]any(nil), map[string]any{}, map[string]any{"a": nil}, map[string]any{"a": "x"},
		map[string]any{"b": "x"}, map[string]any{"a": "x", "b": int64(1)},
		map[string]any{"a": map[string]any{"b": []any{int64(1), "x"}}},
		map[string]any{"a": map[string]any{"b": []any{int64(1), "y"}}},
		map[string]any{"a": map[string]any{"b": []any{float64(1), "x"}}},
		[]any(nil), []any{}, []any{nil}, []any{"x"}, []any{"x", "y"}, []any{"y", "x"},
		[]any{map[string]any{}}, []any{map[string]any(nil)}, []any{[]any{}}, []any{[]any(nil)},
		map[string]string{"a": "x"}, []string{"x"}, shared,
	}
	for i, a := range values {
		for j, b := range values {
			if got, want := diffing.JSONEqual(a, b), reflect.DeepEqual(a, b); got != want {
				t.Errorf("diffing.JSONEqual(%#v, %#v) = %v, reflect.DeepEqual says %v (%d, %d)", a, b, got, want, i, j)
			}
		}
	}
	if !diffing.JSONEqual(shared, shared) {
		t.Error("a map is not equal to itself")
	}
}
