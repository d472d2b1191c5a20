package render_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/bench"
	"github.com/driftpreview/driftpreview/render"
)

// TestRenderEncoded: the encoding RenderEncoded hands out with a set (the
// render process's answer without its CPU time) is byte for byte what
// EncodeSet writes for that set, and DecodeSet reads it back as the set: a
// cache may keep it instead of encoding the set again. Renders of every kind
// are checked, with notes and without objects too.
func TestRenderEncoded(t *testing.T) {
	r, err := bench.Generate(10, bench.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := r.Files
	// A target with a note (kustomize's deprecation warning) and an empty one.
	files["notes/kustomization.yaml"] = "bases: [../kustomize/common]\n"
	files["empty/empty.yaml"] = "# nothing\n"
	if err := bench.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	type target struct {
		path string
		opts render.Options
	}
	var targets []target
	for _, tg := range r.Targets {
		targets = append(targets, target{tg.Path, tg.RenderOptionsFor(r.Variant)})
	}
	targets = append(targets, target{"notes", render.Options{}}, target{"empty", render.Options{Renderer: render.RendererPlain}})
	sawNotes, sawEmpty := false, false
	for _, tg := range targets {
		set, body, err := render.RenderEncoded(t.Context(), dir, tg.path, tg.opts)
		if err != nil {
			t.Fatalf("%s: %v", tg.path, err)
		}
		if body == nil {
			t.Fatalf("%s: no encoding from the render process's answer", tg.path)
		}
		var want bytes.Buffer
		if err := render.EncodeSet(&want, set); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, want.Bytes()) {
			t.Fatalf("%s: the answer's encoding differs from EncodeSet's:\n%s\nwant:\n%s", tg.path, body, want.Bytes())
		}
		if cap(body) != len(body) {
			t.Errorf("%s: the encoding holds %d bytes for %d", tg.path, cap(body), len(body))
		}
		got, err := render.DecodeSet(body)
		if err != nil {
			t.Fatalf("%s: %v", tg.path, err)
		}
		if !reflect.DeepEqual(got.Objects, set.Objects) || !reflect.DeepEqual(got.Notes, set.Notes) {
			t.Errorf("%s: DecodeSet of the encoding is not the set rendered", tg.path)
		}
		again, err := render.Render(t.Context(), dir, tg.path, tg.opts)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.Objects, set.Objects) || !reflect.DeepEqual(again.Notes, set.Notes) {
			t.Errorf("%s: Render and RenderEncoded return different sets", tg.path)
		}
		sawNotes = sawNotes || len(set.Notes) > 0
		sawEmpty = sawEmpty || len(set.Objects) == 0
	}
	if !sawNotes || !sawEmpty {
		t.Errorf("no render with notes (%v) or without objects (%v) was checked", sawNotes, sawEmpty)
	}
}
