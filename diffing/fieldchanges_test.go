package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

// TestFieldChanges: changed fields are keyed by a path a person reads; lists
// of named items by name, other lists by index, and keys with dots or slashes
// quoted; the list follows the object's sorted keys and is cut at the limit with the rest counted.
func TestFieldChanges(t *testing.T) {
	before := obj(t, `
metadata:
  labels: {app.kubernetes.io/name: web, tier: front}
spec:
  replicas: 2
  args: [a, b]
  template:
    spec:
      containers:
      - {name: app, image: "nginx:1.25", ports: [{containerPort: 80}]}
      - {name: sidecar, image: "envoy:1"}
`)
	after := obj(t, `
metadata:
  labels: {app.kubernetes.io/name: shop, team: x}
spec:
  replicas: 3
  args: [a, c, d]
  template:
    spec:
      containers:
      - {name: app, image: "nginx:1.27", ports: [{containerPort: 8080}]}
      - {name: log, image: "fluent:2"}
`)
	got, more := FieldChanges(before.Object, after.Object, 0)
	want := []FieldChange{
		{Path: `metadata.labels["app.kubernetes.io/name"]`, Before: "web", After: "shop"},
		{Path: "metadata.labels.team", After: "x", Added: true},
		{Path: "metadata.labels.tier", Before: "front", Removed: true},
		{Path: "spec.args", Before: `["a","b"]`, After: `["a","c","d"]`},
		{Path: "spec.replicas", Before: "2", After: "3"},
		{Path: "spec.template.spec.containers[name=app].image", Before: "nginx:1.25", After: "nginx:1.27"},
		{Path: "spec.template.spec.containers[name=app].ports[0].containerPort", Before: "80", After: "8080"},
		{Path: "spec.template.spec.containers[name=log]", After: `{"image":"fluent:2","name":"log"}`, Added: true},
		{Path: "spec.template.spec.containers[name=sidecar]", Before: `{"image":"envoy:1","name":"sidecar"}`, Removed: true},
	}
	if diff := cmp.Diff(want, got); diff != "" || more != 0 {
		t.Errorf("FieldChanges (-want +got):\n%s\nmore = %d", diff, more)
	}
	if cut, more := FieldChanges(before.Object, after.Object, 4); len(cut) != 4 || more != 5 || cut[3].Path != "spec.args" {
		t.Errorf("limit 4: %d listed, %d more, last %q; want 4, 5 more, spec.args", len(cut), more, cut[len(cut)-1].Path)
	}
	if same, more := FieldChanges(before.Object, before.Object, 0); len(same) != 0 || more != 0 {
		t.Errorf("an object against itself: %v", same)
	}
}

// TestChangeFieldsMaskSecrets: Diff fills Change.Fields for a modified object
// from what its diff shows, so a Secret's changed value is listed masked
// (stringData is normalised into data).
func TestChangeFieldsMaskSecrets(t *testing.T) {
	secret := func(pw, rev string) render.ObjectSet {
		return set(t, `
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop, labels: {rev: "`+rev+`"}}
stringData: {password: `+pw+`}
`)
	}
	tr := Diff(Input{Name: "t", Base: secret("hunter2", "1"), Head: secret("correct-horse", "2")}, DefaultOptions())
	if len(tr.Changes) != 1 {
		t.Fatalf("changes: %+v", tr.Changes)
	}
	want := []FieldChange{
		{Path: "data.password", Before: MaskedValue, After: MaskedValue + " (changed)"},
		{Path: "metadata.labels.rev", Before: "1", After: "2"},
	}
	if diff := cmp.Diff(want, tr.Changes[0].Fields); diff != "" {
		t.Errorf("Fields (-want +got):\n%s", diff)
	}
}
