package diffing

import (
	"strings"
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
		{Path: "spec.template.spec.containers[name=app].ports[containerPort=80]", Before: `{"containerPort":80}`, Removed: true},
		{Path: "spec.template.spec.containers[name=app].ports[containerPort=8080]", After: `{"containerPort":8080}`, Added: true},
		{Path: "spec.template.spec.containers[name=log]", After: `{"image":"fluent:2","name":"log"}`, Added: true},
		{Path: "spec.template.spec.containers[name=sidecar]", Before: `{"image":"envoy:1","name":"sidecar"}`, Removed: true},
	}
	if diff := cmp.Diff(want, got); diff != "" || more != 0 {
		t.Errorf("FieldChanges (-want +got):\n%s\nmore = %d", diff, more)
	}
	if cut, more := FieldChanges(before.Object, after.Object, 4); len(cut) != 4 || more != 6 || cut[3].Path != "spec.args" {
		t.Errorf("limit 4: %d listed, %d more, last %q; want 4, 6 more, spec.args", len(cut), more, cut[len(cut)-1].Path)
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

// TestFieldChangesKeyedLists: list items are matched by their strategic merge
// key (mountPath, ip, containerPort, name), a keyed list in another order is
// one "reordered" change (beside its items' own changes), a pure reorder of
// an unkeyed list too, and a multi-line string counts its changed lines
// (issue 23).
func TestFieldChangesKeyedLists(t *testing.T) {
	before := obj(t, `
spec:
  hostAliases: [{ip: 10.0.0.1, hostnames: [a]}, {ip: 10.0.0.2, hostnames: [b]}]
  args: [--a, --b, --c]
  containers:
  - name: app
    env: [{name: A, value: "1"}, {name: B, value: "2"}]
    volumeMounts: [{mountPath: /data, name: data}, {mountPath: /tmp, name: tmp}]
  - name: proxy
    ports: [{containerPort: 80, name: http}, {containerPort: 9090, name: admin}]
  script: "set -e\necho one\necho two\n"
`)
	after := obj(t, `
spec:
  hostAliases: [{ip: 10.0.0.1, hostnames: [a, c]}, {ip: 10.0.0.2, hostnames: [b]}]
  args: [--c, --a, --b]
  containers:
  - name: proxy
    ports: [{containerPort: 80, name: web}, {containerPort: 9090, name: admin}]
  - name: app
    env: [{name: B, value: "2"}, {name: A, value: "1"}]
    volumeMounts: [{mountPath: /data, name: data2}, {mountPath: /tmp, name: tmp}]
  script: "set -e\necho uno\necho two\necho three\n"
`)
	got, _ := FieldChanges(before.Object, after.Object, 0)
	want := []FieldChange{
		{Path: "spec.args", Before: `["--a","--b","--c"]`, After: `["--c","--a","--b"]`, Reordered: true},
		{Path: "spec.containers", Before: "app, proxy", After: "proxy, app", Reordered: true},
		{Path: "spec.containers[name=app].env", Before: "A, B", After: "B, A", Reordered: true},
		{Path: "spec.containers[name=app].volumeMounts[mountPath=/data].name", Before: "data", After: "data2"},
		{Path: "spec.containers[name=proxy].ports[containerPort=80].name", Before: "http", After: "web"},
		{Path: "spec.hostAliases[ip=10.0.0.1].hostnames", Before: `["a"]`, After: `["a","c"]`},
		{Path: "spec.script", Lines: 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FieldChanges (-want +got):\n%s", diff)
	}
}

// TestMultiLineStringDiffedByLine: the unified diff shows a changed embedded
// script line by line (a YAML block scalar), so the summary's "N lines
// changed" points at lines the reader sees.
func TestMultiLineStringDiffedByLine(t *testing.T) {
	cm := func(script string) render.ObjectSet {
		return set(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: a}\ndata:\n  run.sh: |\n"+script)
	}
	tr := Diff(Input{Name: "t", Base: cm("    set -e\n    echo one\n    echo two\n"), Head: cm("    set -e\n    echo uno\n    echo two\n")}, DefaultOptions())
	if len(tr.Changes) != 1 {
		t.Fatalf("changes: %+v", tr.Changes)
	}
	c := tr.Changes[0]
	for _, want := range []string{"\n-    echo one\n", "\n+    echo uno\n", "\n     echo two\n"} {
		if !strings.Contains(c.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, c.Diff)
		}
	}
	if want := []FieldChange{{Path: `data["run.sh"]`, Lines: 2}}; !cmp.Equal(want, c.Fields) {
		t.Errorf("Fields = %+v, want %+v", c.Fields, want)
	}
}
