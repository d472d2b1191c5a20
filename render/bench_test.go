package render_test

import (
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// Speed goals are measured here, never asserted in tests:
//
//	go test ./render -run '^$' -bench . -benchmem

func BenchmarkRenderKustomize(b *testing.B) {
	opts := render.DefaultOptions()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Render(b.Context(), "testdata/kustomize", "overlays/prod", opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderHelm(b *testing.B) {
	opts := render.DefaultOptions()
	opts.Helm.ValuesFiles = []string{"values-prod.yaml"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Render(b.Context(), "testdata/helm", "chart", opts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderPlain(b *testing.B) {
	opts := render.DefaultOptions()
	opts.Plain.Recurse = true
	b.ReportAllocs()
	for b.Loop() {
		if _, err := render.Render(b.Context(), "testdata/plain", "manifests", opts); err != nil {
			b.Fatal(err)
		}
	}
}
