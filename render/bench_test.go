package render_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/fixtures/bench"
	"github.com/driftpreview/driftpreview/render"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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

// BenchmarkRenderProcess measures what the render process costs per render: the
// same targets in process and in a child process (warm, from the pool).
// cpu-ms/op counts this process and its ended children: the pool's warm
// processes still run, so their CPU time is not in it; compare ns/op.
//
//	go test ./render -run '^$' -bench RenderProcess -benchtime 20x
func BenchmarkRenderProcess(b *testing.B) {
	cases := []struct {
		name, root, target string
		opts               func(*render.Options)
	}{
		{"plain", "testdata/plain", "manifests", func(o *render.Options) { o.Plain.Recurse = true }},
		{"kustomize", "testdata/kustomize", "overlays/prod", nil},
		{"helm", "testdata/helm", "chart", func(o *render.Options) { o.Helm.ValuesFiles = []string{"values-prod.yaml"} }},
	}
	for _, c := range cases {
		opts := render.DefaultOptions()
		if c.opts != nil {
			c.opts(&opts)
		}
		for _, mode := range []struct {
			name string
			fn   func(context.Context, string, string, render.Options) (render.ObjectSet, error)
		}{{"in-process", render.RenderInProcess}, {"child", render.Render}} {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				start := cpuNow()
				for b.Loop() {
					if _, err := mode.fn(b.Context(), c.root, c.target, opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuNow()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

func cpuNow() time.Duration {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
}

// BenchmarkRenderBenchTarget renders one target of each kind of `make bench`'s
// generated repository (fixtures/bench), in this process and in a warm render
// process, so a CPU profile of the in-process case shows where a render goes:
//
//	go test ./render -run '^$' -bench RenderBenchTarget -cpuprofile cpu.out
func BenchmarkRenderBenchTarget(b *testing.B) {
	r, dir := benchRepo(b, 10)
	seen := map[bench.Kind]bool{}
	for _, t := range r.Targets {
		if seen[t.Kind] {
			continue
		}
		seen[t.Kind] = true
		opts := t.RenderOptionsFor(r.Variant)
		for _, mode := range []struct {
			name string
			fn   func(context.Context, string, string, render.Options) (render.ObjectSet, error)
		}{{"in-process", render.RenderInProcess}, {"child", render.Render}} {
			b.Run(string(t.Kind)+"/"+mode.name, func(b *testing.B) {
				b.ReportAllocs()
				start := cpuNow()
				for b.Loop() {
					if _, err := mode.fn(b.Context(), dir, t.Path, opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64((cpuNow()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
	}
}

// BenchmarkFindInputs finds the inputs of every target of `make bench`'s
// repository at T=200 (what a preview does at base and at head to tell the
// targets a PR does not touch): each target on its own (FindInputs), and with
// one InputFinder for the checkout, as the preview does.
func BenchmarkFindInputs(b *testing.B) {
	r, dir := benchRepo(b, 200)
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, t := range r.Targets {
				render.FindInputs(dir, t.Path, t.RenderOptions())
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f := render.NewInputFinder(dir)
			for _, t := range r.Targets {
				f.Find(t.Path, t.RenderOptions())
			}
			f.Close()
		}
	})
}

// BenchmarkSetPipe measures carrying one rendered target of `make bench`'s
// repository (25 objects) from a render process to the parent: EncodeSet is
// what the child writes (and the disk cache keeps), DecodeSet what the parent
// (and a disk cache lookup) pays to read it back.
//
//	go test ./render -run '^$' -bench SetPipe -benchmem
func BenchmarkSetPipe(b *testing.B) {
	r, dir := benchRepo(b, 10)
	var set render.ObjectSet
	var err error
	for _, t := range r.Targets {
		if t.Kind == bench.Kustomize {
			if set, err = render.RenderInProcess(b.Context(), dir, t.Path, t.RenderOptionsFor(r.Variant)); err != nil {
				b.Fatal(err)
			}
			break
		}
	}
	var buf bytes.Buffer
	if err := render.EncodeSet(&buf, set); err != nil {
		b.Fatal(err)
	}
	data := buf.Bytes()
	b.Run("encode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		var w bytes.Buffer
		start := cpuNow()
		for b.Loop() {
			w.Reset()
			if err := render.EncodeSet(&w, set); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuNow()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		start := cpuNow()
		for b.Loop() {
			if _, err := render.DecodeSet(data); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuNow()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// benchRepo writes `make bench`'s repository of t targets (configured variant)
// into a temporary directory.
func benchRepo(b *testing.B, t int) (*bench.Repo, string) {
	b.Helper()
	r, err := bench.Generate(t, bench.Config)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := bench.Write(dir, r.Files); err != nil {
		b.Fatal(err)
	}
	return r, dir
}

// BenchmarkRenderCheckout renders every target of `make bench`'s repository at
// T=200 the way a preview renders one side: two at a time (one per CPU of the
// bench machine) in the pool's render processes, started fresh and ended
// (Shutdown) in each run so cpu-ms/op counts all they used. "named" gives the
// checkout a name (Options.Checkout, new in each run, as a preview's
// checkout), so the processes keep what they read of it; "unnamed" reads every
// file from the file system for every render.
//
//	go test ./render -run '^$' -bench RenderCheckout -benchtime 3x
func BenchmarkRenderCheckout(b *testing.B) {
	r, dir := benchRepo(b, 200)
	for _, named := range []bool{false, true} {
		name := "unnamed"
		if named {
			name = "named"
		}
		b.Run(name, func(b *testing.B) {
			render.Shutdown()
			start := cpuNow()
			for b.Loop() {
				id := ""
				if named {
					id = render.NewCheckoutID()
				}
				next := make(chan bench.Target)
				errs := make(chan error, 2)
				for range 2 {
					go func() {
						var first error
						for t := range next {
							opts := t.RenderOptionsFor(r.Variant)
							opts.Checkout = id
							if _, err := render.Render(context.Background(), dir, t.Path, opts); err != nil && first == nil {
								first = err
							}
						}
						errs <- first
					}()
				}
				for _, t := range r.Targets {
					next <- t
				}
				close(next)
				for range 2 {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				render.Shutdown()
			}
			b.ReportMetric(float64((cpuNow()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkPRWideRenders renders what a cold PR-wide of `make bench` renders at
// T=200, both trees, target after target in this process (no render process,
// no cache): every target through render.RenderInProcess ("render": kustomize
// builds with source markers, markers.go), and the 240 kustomize builds alone
// with krusty.Run:
//   - "kustomize": over a wrapper like the one renderKustomize generates, with
//     origin annotations (what every build cost before source markers, and
//     what a build the markers cannot account for still costs);
//   - "kustomize-no-origins": the same without origin annotations;
//   - "kustomize-direct": started at each target instead, as renders with
//     markers and no overrides now build (kustomize's own work: the floor of
//     the kustomize part of "render");
//   - "kustomize-bases-prebuilt": over wrappers, without origin annotations,
//     each app's base built once beforehand (what sharing base builds among
//     overlays could save at most).
//
// cpu-s/op is the CPU time of one run of all of them; render processes run
// with GOGC 800 (child.go), so compare with GOGC=800 in the environment.
//
//	GOGC=800 go test ./render -run '^$' -bench PRWideRenders -benchtime 2x
func BenchmarkPRWideRenders(b *testing.B) {
	r, base := benchRepo(b, 200)
	files, _, err := r.Head(bench.PRWide)
	if err != nil {
		b.Fatal(err)
	}
	head := b.TempDir()
	if err := bench.Write(head, files); err != nil {
		b.Fatal(err)
	}
	trees := []string{base, head}
	report := func(b *testing.B, start time.Duration) {
		b.ReportMetric((cpuNow()-start).Seconds()/float64(b.N), "cpu-s/op")
	}
	b.Run("render", func(b *testing.B) {
		start := cpuNow()
		for b.Loop() {
			for _, tree := range trees {
				for _, t := range r.Targets {
					if _, err := render.RenderInProcess(b.Context(), tree, t.Path, t.RenderOptionsFor(r.Variant)); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		report(b, start)
	})
	// wrappers writes, in each tree, a kustomization over each kustomize
	// target, as renderKustomize does, and returns their directories.
	wrappers := func(b *testing.B, trees []string, meta string) []string {
		var ws []string
		for _, tree := range trees {
			for _, t := range r.Targets {
				if t.Kind != bench.Kustomize {
					continue
				}
				w := filepath.Join(tree, "wrap", t.Name)
				k := "resources: [" + filepath.Join("../..", t.Path) + "]\n" + meta
				if err := os.MkdirAll(w, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(w, "kustomization.yaml"), []byte(k), 0o644); err != nil {
					b.Fatal(err)
				}
				ws = append(ws, w)
			}
		}
		return ws
	}
	fsys := filesys.MakeFsOnDisk()
	build := func(b *testing.B, dir string) resmap.ResMap {
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	buildAll := func(b *testing.B, ws []string) {
		start := cpuNow()
		for b.Loop() {
			for _, w := range ws {
				build(b, w)
			}
		}
		report(b, start)
		b.ReportMetric(float64(len(ws)), "builds/op")
	}
	for _, origins := range []bool{true, false} {
		name, meta := "kustomize", "buildMetadata: [originAnnotations]\n"
		if !origins {
			name, meta = "kustomize-no-origins", ""
		}
		b.Run(name, func(b *testing.B) {
			buildAll(b, wrappers(b, trees, meta))
		})
	}
	// kustomize-direct: the same builds started at each target's
	// kustomization, as buildKustomize does when no override needs a wrapper.
	b.Run("kustomize-direct", func(b *testing.B) {
		var ds []string
		for _, tree := range trees {
			for _, t := range r.Targets {
				if t.Kind == bench.Kustomize {
					ds = append(ds, filepath.Join(tree, t.Path))
				}
			}
		}
		buildAll(b, ds)
	})
	// kustomize-bases-prebuilt bounds what sharing the build of a base among
	// the overlays that use it could save: copies of both trees in which each
	// app's base (three overlays each, the same at base and at head) is built
	// once, before the clock starts, and its kustomization lists only that
	// output. For this layout the overlays' output is the same (checked
	// first). Against kustomize-no-origins it measures the overlays' own share.
	b.Run("kustomize-bases-prebuilt", func(b *testing.B) {
		var copies []string
		for _, tree := range trees {
			c := b.TempDir()
			if err := os.CopyFS(c, os.DirFS(tree)); err != nil {
				b.Fatal(err)
			}
			copies = append(copies, c)
		}
		ws, orig := wrappers(b, copies, ""), wrappers(b, trees, "")
		done := map[string]bool{}
		for _, c := range copies {
			for _, t := range r.Targets {
				base := filepath.Join(c, t.Path, "../../base")
				if t.Kind != bench.Kustomize || done[base] {
					continue
				}
				done[base] = true
				out, err := build(b, base).AsYaml()
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(base, "built.yaml"), out, 0o644); err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(base, "kustomization.yaml"), []byte("resources: [built.yaml]\n"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		for i := range ws {
			got, err := build(b, ws[i]).AsYaml()
			if err != nil {
				b.Fatal(err)
			}
			want, err := build(b, orig[i]).AsYaml()
			if err != nil {
				b.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				b.Fatalf("%s: a prebuilt base changes the overlay's output", ws[i])
			}
		}
		buildAll(b, ws)
	})
}
