package render_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// TestPoolReusesAProcess renders several targets one after another: one warm
// render process serves them all.
func TestPoolReusesAProcess(t *testing.T) {
	root := writeTree(t, map[string]string{
		"k/kustomization.yaml": kustHeader + "resources: [cm.yaml]\n",
		"k/cm.yaml":            cm,
		"plain/cm.yaml":        cm,
	})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = 59 * time.Second // a pool of its own, whatever ran before
	before := render.ProcessesStarted()
	for range 3 {
		for _, target := range []string{"k", "plain"} {
			set, err := render.Render(t.Context(), root, target, opts)
			if err != nil || len(set.Objects) != 1 {
				t.Fatalf("%s: %d objects, %v", target, len(set.Objects), err)
			}
		}
	}
	if started := render.ProcessesStarted() - before; started != 1 {
		t.Errorf("6 renders started %d render processes, want 1 reused", started)
	}
}

// TestPoolCrashFailsOnlyItsRequest renders, in a warm process, a template that
// exhausts its memory limit: that render fails naming the limit (after a second
// try in a new process), and the renders after it work, in a new process.
func TestPoolCrashFailsOnlyItsRequest(t *testing.T) {
	root := writeTree(t, map[string]string{
		"chart/Chart.yaml":          chartYAML,
		"chart/templates/bomb.yaml": cm + "data:\n  x: {{ repeat 100000000000 \"x\" | quote }}\n",
		"ok/cm.yaml":                cm,
	})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = 58 * time.Second
	before := render.ProcessesStarted()
	if _, err := render.Render(t.Context(), root, "ok", opts); err != nil {
		t.Fatal(err)
	}
	_, err := render.Render(t.Context(), root, "chart", opts)
	if err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("bomb: got %v, want the memory limit", err)
	}
	for range 2 {
		if set, err := render.Render(t.Context(), root, "ok", opts); err != nil || len(set.Objects) != 1 {
			t.Fatalf("render after the bomb: %d objects, %v", len(set.Objects), err)
		}
	}
	// The first process served "ok" and died of the bomb; the bomb's second try
	// ran in a second one, which died too; a third served both renders after.
	if started := render.ProcessesStarted() - before; started != 3 {
		t.Errorf("started %d render processes, want 3", started)
	}
}

// TestPoolOpenAPISchemaDoesNotLeak renders, in one warm process, a kustomization
// with a custom OpenAPI schema (its `openapi:` field) between two renders of one
// without. kyaml keeps the schema in package state and krusty only resets the
// built-in version, so without a reset the schema of one render decides how the
// next one merges its patches (here: a list merged by key instead of replaced).
func TestPoolOpenAPISchemaDoesNotLeak(t *testing.T) {
	const widget = `apiVersion: example.com/v1alpha1
kind: Widget
metadata: {name: w}
spec:
  items:
  - {name: a, value: "1"}
  - {name: b, value: "2"}
`
	const patch = `apiVersion: example.com/v1alpha1
kind: Widget
metadata: {name: w}
spec:
  items:
  - {name: a, value: "9"}
`
	const schema = `{"definitions": {
  "v1alpha1.Widget": {
    "type": "object",
    "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "Widget", "version": "v1alpha1"}],
    "properties": {
      "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
      "spec": {"type": "object", "properties": {"items": {
        "type": "array", "items": {"$ref": "#/definitions/v1alpha1.Item"},
        "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"}}}}},
  "v1alpha1.Item": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}
}}`
	root := writeTree(t, map[string]string{
		"plain/kustomization.yaml": kustHeader + "resources: [widget.yaml]\npatches: [{path: patch.yaml}]\n",
		"plain/widget.yaml":        widget,
		"plain/patch.yaml":         patch,
		"schema/kustomization.yaml": kustHeader + "openapi: {path: schema.json}\n" +
			"resources: [widget.yaml]\npatches: [{path: patch.yaml}]\n",
		"schema/widget.yaml": widget,
		"schema/patch.yaml":  patch,
		"schema/schema.json": schema,
	})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = 57 * time.Second // a pool of its own
	items := func(target string) int {
		t.Helper()
		set, err := render.Render(t.Context(), root, target, opts)
		if err != nil || len(set.Objects) != 1 {
			t.Fatalf("%s: %d objects, %v", target, len(set.Objects), err)
		}
		list, _, _ := unstructured.NestedSlice(set.Objects[0].Obj.Object, "spec", "items")
		return len(list)
	}
	before := render.ProcessesStarted()
	if n := items("plain"); n != 1 {
		t.Fatalf("without a schema the patch replaces the list: %d items, want 1", n)
	}
	if n := items("schema"); n != 2 {
		t.Fatalf("with the schema the patch merges by name: %d items, want 2", n)
	}
	if n := items("plain"); n != 1 {
		t.Errorf("after a render with a custom schema in the same process: %d items, want 1 (the schema leaked)", n)
	}
	if started := render.ProcessesStarted() - before; started != 1 {
		t.Errorf("3 renders started %d processes, want 1 (the test needs a reused process)", started)
	}
}

// TestPoolShutdown: Shutdown ends the idle render processes and reaps them, so
// their CPU time counts as this process's children's; a render afterwards
// starts a new process.
func TestPoolShutdown(t *testing.T) {
	opts := render.DefaultOptions()
	opts.Plain.Recurse = true
	if _, err := render.Render(t.Context(), "testdata/plain", "manifests", opts); err != nil {
		t.Fatal(err)
	}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &before)
	started := render.ProcessesStarted()
	render.Shutdown()
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &after)
	if after.Utime.Nano()+after.Stime.Nano() <= before.Utime.Nano()+before.Stime.Nano() {
		t.Errorf("no children's CPU time was added: the idle render processes were not reaped")
	}
	if _, err := render.Render(t.Context(), "testdata/plain", "manifests", opts); err != nil {
		t.Fatal(err)
	}
	if render.ProcessesStarted() != started+1 {
		t.Errorf("a render after Shutdown started %d processes, want 1", render.ProcessesStarted()-started)
	}
}

// TestPrestart starts two render processes ahead of the renders: the renders
// with the same limits use them (no process is started for them), a render
// with other limits does not, and Shutdown reaps the ones left idle.
func TestPrestart(t *testing.T) {
	root := writeTree(t, map[string]string{"plain/cm.yaml": cm})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = 58 * time.Second // a pool of its own, whatever ran before
	before := render.ProcessesStarted()
	render.Prestart(opts, 2)
	if started := render.ProcessesStarted() - before; started != 2 {
		t.Fatalf("Prestart started %d render processes, want 2", started)
	}
	render.Prestart(opts, 2) // two are idle already
	if started := render.ProcessesStarted() - before; started != 2 {
		t.Fatalf("a second Prestart started %d more render processes, want none", started-2)
	}
	for range 2 {
		set, err := render.Render(t.Context(), root, "plain", opts)
		if err != nil || len(set.Objects) != 1 {
			t.Fatalf("%d objects, %v", len(set.Objects), err)
		}
	}
	if started := render.ProcessesStarted() - before; started != 2 {
		t.Errorf("renders after Prestart started %d render processes, want 0 (the pre-started ones serve them)", started-2)
	}
	other := opts
	other.MaxCPUTime = 57 * time.Second
	if _, err := render.Render(t.Context(), root, "plain", other); err != nil {
		t.Fatal(err)
	}
	if started := render.ProcessesStarted() - before; started != 3 {
		t.Errorf("a render with other limits started %d render processes, want 1 (a pre-started process has the limits it started with)", started-2)
	}

	// Unused pre-started processes are reaped by Shutdown.
	render.Shutdown()
	render.Prestart(opts, 1)
	var rBefore syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rBefore)
	time.Sleep(100 * time.Millisecond) // let it use some CPU starting up
	render.Shutdown()
	var rAfter syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &rAfter)
	if rAfter.Utime.Nano()+rAfter.Stime.Nano() <= rBefore.Utime.Nano()+rBefore.Stime.Nano() {
		t.Errorf("no children's CPU time was added: the unused pre-started process was not reaped")
	}
}

// TestPrestartCold starts a render process ahead without its warm-up: it
// joins the idle ones at once, and a kustomize render (which warms it up
// itself) uses it, with no process started for it.
func TestPrestartCold(t *testing.T) {
	root := writeTree(t, map[string]string{"k/kustomization.yaml": "resources: [cm.yaml]\n", "k/cm.yaml": cm})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = 56 * time.Second // a pool of its own, whatever ran before
	before, warm := render.ProcessesStarted(), render.WarmUpsSent()
	render.PrestartCold(opts, 1)
	if started := render.ProcessesStarted() - before; started != 1 {
		t.Fatalf("PrestartCold started %d render processes, want 1", started)
	}
	set, err := render.Render(t.Context(), root, "k", opts)
	if err != nil || len(set.Objects) != 1 {
		t.Fatalf("%d objects, %v", len(set.Objects), err)
	}
	if started := render.ProcessesStarted() - before; started != 1 {
		t.Errorf("the render after PrestartCold started %d more render processes, want none", started-1)
	}
	if n := render.WarmUpsSent() - warm; n != 0 {
		t.Errorf("PrestartCold asked for %d warm-ups, want none", n)
	}
	render.Prestart(opts, 1) // one is idle already, warm (it rendered): neither started nor warmed
	if n := render.WarmUpsSent() - warm; n != 0 || render.ProcessesStarted()-before != 1 {
		t.Errorf("Prestart beside an idle process started %d and warmed %d, want none", render.ProcessesStarted()-before-1, n)
	}
	render.Shutdown()

	// An idle process PrestartCold started and nothing used is not warm: a
	// Prestart starts and warms one up beside it.
	before, warm = render.ProcessesStarted(), render.WarmUpsSent()
	render.PrestartCold(opts, 1)
	render.PrestartCold(opts, 1) // one is idle already
	render.Prestart(opts, 1)
	if started, n := render.ProcessesStarted()-before, render.WarmUpsSent()-warm; started != 2 || n != 1 {
		t.Errorf("PrestartCold twice, then Prestart: %d processes started and %d warmed up, want 2 and 1", started, n)
	}
	render.Shutdown()
}
