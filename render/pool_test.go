package render_test

import (
	"strings"
	"testing"
	"time"

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
