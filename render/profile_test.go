package render_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestProfileRenders: with ProfileRenders on, each render process writes a CPU
// profile of its life when it ends (here at Shutdown), although render
// processes otherwise may write no file.
func TestProfileRenders(t *testing.T) {
	root := writeTree(t, map[string]string{"ok/cm.yaml": cm})
	dir := t.TempDir()
	render.Shutdown() // processes started before are not profiled
	if err := render.ProfileRenders(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = render.ProfileRenders("") })
	if _, err := render.Render(t.Context(), root, "ok", render.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	render.Shutdown()
	files, _ := filepath.Glob(filepath.Join(dir, "render-*.cpu.pprof"))
	if len(files) == 0 {
		t.Fatal("no render process wrote a profile")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b { // pprof profiles are gzipped
			t.Errorf("%s is not a pprof profile (%d bytes)", f, len(data))
		}
	}
	if err := render.ProfileRenders(filepath.Join(dir, "missing")); err == nil {
		t.Error("a directory that does not exist is accepted")
	}
}
