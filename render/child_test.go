package render_test

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// TestRenderMemoryBombStopsAtTheMemoryLimit renders a chart whose template asks
// for a 100 GB string. In process that is a fatal out-of-memory for the whole
// program (the test binary here, serve in production); in the render process it
// is a render error naming the memory limit, and the next render works.
func TestRenderMemoryBombStopsAtTheMemoryLimit(t *testing.T) {
	root := writeTree(t, map[string]string{
		"chart/Chart.yaml":          chartYAML,
		"chart/templates/bomb.yaml": cm + "data:\n  x: {{ repeat 100000000000 \"x\" | quote }}\n",
		"ok/cm.yaml":                cm,
	})
	opts := render.DefaultOptions()
	_, err := render.Render(t.Context(), root, "chart", opts)
	var re *render.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "512 MiB memory limit") {
		t.Fatalf("got %v, want a *render.Error naming the 512 MiB memory limit", err)
	}
	if re.File != "chart" {
		t.Errorf("error names %q, want the target chart", re.File)
	}
	// A gradual bomb: many strings, none huge, past a small limit and past
	// the default one (where the render process reserves the most heap for
	// huge pages, render/hugeheap.go: the limit must still be what stops it).
	root2 := writeTree(t, map[string]string{
		"chart/Chart.yaml": chartYAML,
		"chart/templates/bomb.yaml": "{{- $l := list }}{{- range until 2000 }}{{- $l = append $l (repeat 1000000 \"y\") }}{{- end }}" +
			cm + "data:\n  n: {{ len $l | quote }}\n",
	})
	for _, mib := range []int64{256, 512} {
		opts.MaxMemoryBytes = mib << 20
		want := fmt.Sprintf("%d MiB memory limit", mib)
		if _, err := render.Render(t.Context(), root2, "chart", opts); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("gradual bomb: got %v, want the %s", err, want)
		}
	}
	set, err := render.Render(t.Context(), root, "ok", render.DefaultOptions())
	if err != nil || len(set.Objects) != 1 {
		t.Fatalf("render after the bomb: %d objects, %v", len(set.Objects), err)
	}
}

// TestRenderCPULimit renders a template that loops for minutes with a wall-clock
// timeout far away: the kernel's CPU-time limit stops it.
func TestRenderCPULimit(t *testing.T) {
	root := writeTree(t, map[string]string{
		"chart/Chart.yaml":          chartYAML,
		"chart/templates/spin.yaml": "{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}\n" + cm,
	})
	opts := render.DefaultOptions()
	opts.MaxCPUTime = time.Second
	opts.Timeout = 2 * time.Minute
	start := time.Now()
	_, err := render.Render(t.Context(), root, "chart", opts)
	if err == nil || !strings.Contains(err.Error(), "1s CPU-time limit") {
		t.Fatalf("got %v, want a render error naming the 1s CPU-time limit", err)
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("stopped after %s", waited)
	}
}

// TestRenderTimeoutStopsTheWork checks that a render past its timeout stops
// working, not only that Render returns: in process, text/template cannot be
// interrupted and the goroutine kept burning CPU for seconds after the timeout.
func TestRenderTimeoutStopsTheWork(t *testing.T) {
	root := writeTree(t, map[string]string{
		"chart/Chart.yaml":          chartYAML,
		"chart/templates/spin.yaml": "{{- range until 100000 }}{{- range until 100000 }}{{- end }}{{- end }}\n" + cm,
	})
	opts := render.DefaultOptions()
	opts.Timeout = 500 * time.Millisecond
	_, err := render.Render(t.Context(), root, "chart", opts)
	if err == nil || !strings.Contains(err.Error(), "took longer than 500ms") {
		t.Fatalf("got %v, want the timeout error", err)
	}
	before := cpuTime(t)
	time.Sleep(2 * time.Second)
	if burnt := cpuTime(t) - before; burnt > 500*time.Millisecond {
		t.Errorf("this process used %s of CPU in the 2s after the timeout: the render is still running", burnt)
	}
}

func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
