package report

import (
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
)

// TestFieldSummaryReorderAndLines: through the real differ, a reordered keyed
// list is one "reordered" line and a changed embedded script one "N lines
// changed" line, in the comment and the terminal text (issue 23).
func TestFieldSummaryReorderAndLines(t *testing.T) {
	base := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: app}\n"+
		"spec: {template: {spec: {containers: [{name: app, image: 'web:1', env: [{name: A, value: '1'}, {name: B, value: '2'}]}]}}}\n")
	head := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: app}\n"+
		"spec: {template: {spec: {containers: [{name: app, image: 'web:1', env: [{name: B, value: '2'}, {name: A, value: '1'}]}]}}}\n")
	cmBase := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: app}\ndata:\n  run.sh: |\n    set -e\n    echo one\n")
	cmHead := obj(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s, namespace: app}\ndata:\n  run.sh: |\n    set -e\n    echo uno\n")
	r := report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base, cmBase), Head: objs(head, cmHead)}))
	md := Markdown(r, DefaultOptions())
	for _, want := range []string{
		"- `spec.template.spec.containers[name=app].env`: reordered, `A, B` → `B, A`\n",
		"- `data[\"run.sh\"]`: 2 lines changed (see the diff)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("comment lacks %q:\n%s", want, md)
		}
	}
	assertInert(t, "comment", md)
	txt := Text(r, TextOptions{})
	for _, want := range []string{
		"spec.template.spec.containers[name=app].env: reordered, A, B → B, A\n",
		"data[\"run.sh\"]: 2 lines changed (see the diff)\n",
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
}
