package live

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestWithServerDefaults(t *testing.T) {
	u := func(m map[string]any) *unstructured.Unstructured { return &unstructured.Unstructured{Object: m} }
	vct := func(extra map[string]any, storage string) []any {
		item := map[string]any{
			"metadata": map[string]any{"name": "data"},
			"spec":     map[string]any{"resources": map[string]any{"requests": map[string]any{"storage": storage}}},
		}
		for k, v := range extra {
			item[k] = v
		}
		return []any{item}
	}
	defaults := map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": map[string]any{"phase": "Pending"}}
	live := u(map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(defaults, "10Gi"), "stale": "x"}})
	base := map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(nil, "10Gi")}}
	head := map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(nil, "50Gi")}}
	predicted := u(map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(nil, "50Gi")}})

	got := withServerDefaults(predicted, live, base, head)
	want := map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(defaults, "50Gi")}}
	if diff := cmp.Diff(want, got.Object); diff != "" {
		t.Errorf("defaults inside the atomic list are restored, the dropped top-level field is not (-want +got):\n%s", diff)
	}
	if _, ok := predicted.Object["spec"].(map[string]any)["volumeClaimTemplates"].([]any)[0].(map[string]any)["kind"]; ok {
		t.Errorf("withServerDefaults must not change its input")
	}

	// A field the PR removes from a list item stays removed.
	baseWithMode := map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(map[string]any{"volumeMode": "Block"}, "10Gi")}}
	liveWithMode := u(map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(map[string]any{"volumeMode": "Block"}, "10Gi")}})
	got = withServerDefaults(predicted, liveWithMode, baseWithMode, head)
	if diff := cmp.Diff(map[string]any{"spec": map[string]any{"volumeClaimTemplates": vct(nil, "50Gi")}}, got.Object); diff != "" {
		t.Errorf("a field git set and the PR removed must stay removed (-want +got):\n%s", diff)
	}
}
