package diffing

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

func settings(level, manager, rv string, status bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "shop", "resourceVersion": rv},
		"data":     map[string]any{"LOG_LEVEL": level, "MODE": "a"},
	}}
	if status {
		u.Object["status"] = map[string]any{"seen": rv}
	}
	now := metav1.NewTime(time.Date(2026, 12, 2, 10, 42, 0, 0, time.UTC))
	u.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply, Time: &now, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:MODE":{}}}`)},
		{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &now, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:LOG_LEVEL":{}}}`)},
	})
	return u
}

var settingsKey = render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}

func TestSeenLiveIgnoresStatusAndResourceVersion(t *testing.T) {
	a := SeenLive("prod", settingsKey, "v1", settings("info", "setup", "1", false))
	b := SeenLive("prod", settingsKey, "v1", settings("info", "setup", "2", true))
	if !a.SameAs(&b) {
		t.Errorf("a status and resourceVersion change is a change: %+v vs %+v", a.Fields, b.Fields)
	}
	if a.ResourceVersion != "1" || a.Version != "v1" || a.Fields["/data/LOG_LEVEL"].Manager != "setup" {
		t.Errorf("recorded %+v", a)
	}
	if _, ok := b.Fields["/status/seen"]; ok {
		t.Error("status recorded")
	}
	c := SeenLive("prod", settingsKey, "v1", settings("info", "kubectl-edit", "3", false))
	if a.SameAs(&c) {
		t.Error("a new manager of a field is no change")
	}
	absent := SeenLive("prod", settingsKey, "v1", nil)
	if a.SameAs(&absent) || !absent.SameAs(&LiveObject{Absent: true}) {
		t.Error("absent and present objects compare wrong")
	}
}

func TestLiveChangesNameFieldAndManager(t *testing.T) {
	prev := []LiveObject{
		SeenLive("prod", settingsKey, "v1", settings("info", "setup", "1", false)),
		SeenLive("prod", render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "new"}, "v1", nil),
	}
	cur := []LiveObject{
		SeenLive("prod", settingsKey, "v1", settings("debug", "kubectl-edit", "2", true)),
		SeenLive("prod", render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "new"}, "v1", nil),
	}
	got := LiveChanges(prev, cur)
	if len(got) != 1 || got[0].What != "changed" || got[0].Path != "/data/LOG_LEVEL" || got[0].Manager != "kubectl-edit" || got[0].Key != settingsKey {
		t.Fatalf("changes %+v, want kubectl-edit changed /data/LOG_LEVEL", got)
	}
	if n := len(LiveChanges(cur, cur)); n != 0 {
		t.Errorf("%d changes between a preview and itself", n)
	}
	gone := []LiveObject{SeenLive("prod", settingsKey, "v1", nil), cur[1]}
	if got := LiveChanges(cur, gone); len(got) != 1 || got[0].What != "deleted" {
		t.Errorf("deletion: %+v", got)
	}
}
