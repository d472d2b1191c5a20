package preview

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// diskFiles is a kustomize target (a base, a generator, an int and a float),
// a Helm chart and a target whose inputs cannot be told.
var diskFiles = map[string]string{
	"app/kustomization.yaml":  "resources: [../base]\nconfigMapGenerator: [{name: gen, literals: [a=1]}]\n",
	"base/kustomization.yaml": "resources: [deploy.yaml]\n",
	"base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n" +
		"  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}, annotations: {ratio: '0.5'}}\n" +
		"    spec: {containers: [{name: web, image: 'web:1', resources: {limits: {cpu: 0.5}}}]}\n",
	"gen/kustomization.yaml": "generators: [g.yaml]\n",
	"gen/g.yaml":             "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nliterals: [a=1]\n",
	"bad/kustomization.yaml": "resources: [missing.yaml]\n",
}

// diskRun renders path in root the way one preview run does, with the render
// cache on disk in dir and nothing in memory from other runs.
func diskRun(t *testing.T, dir, root, path string) (render.ObjectSet, *DiskCache, *renderCache, error) {
	t.Helper()
	d, err := OpenDiskCache(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newRenderCache()
	c.content = nil
	c.disk = d
	set, err := c.render(t.Context(), root, path, render.DefaultOptions())
	d.Trim()
	return set, d, c, err
}

func diskEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := filepath.Glob(filepath.Join(dir, "objects", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// TestDiskCacheHitMiss: a render is kept on disk and a later run (a new cache
// opened on the same directory, as a new process does) takes it from there,
// equal to the render, numbers and all; another checkout with the same inputs
// hits too; a changed input misses.
func TestDiskCacheHitMiss(t *testing.T) {
	dir := t.TempDir()
	base := writeFiles(t, diskFiles, nil)
	first, d, c, err := diskRun(t, dir, base, "app")
	if err != nil {
		t.Fatal(err)
	}
	if c.misses != 1 || d.hits.Load() != 0 || len(diskEntries(t, dir)) != 1 {
		t.Fatalf("first run: %d renders, %d hits, %d entries; want 1, 0, 1", c.misses, d.hits.Load(), len(diskEntries(t, dir)))
	}
	head := writeFiles(t, diskFiles, nil)
	again, d, c, err := diskRun(t, dir, head, "app")
	if err != nil {
		t.Fatal(err)
	}
	if c.misses != 0 || c.shared != 1 || d.hits.Load() != 1 {
		t.Fatalf("second run: %d renders, %d shared, %d disk hits; want 0, 1, 1", c.misses, c.shared, d.hits.Load())
	}
	if !reflect.DeepEqual(first.Objects, again.Objects) || !reflect.DeepEqual(first.Notes, again.Notes) {
		t.Errorf("the render read back differs:\n%+v\nwant\n%+v", again.Objects, first.Objects)
	}
	if first.OutputBytes == 0 || again.OutputBytes == 0 {
		t.Errorf("output bytes %d and %d: both count against the per-preview limit", first.OutputBytes, again.OutputBytes)
	}
	for _, o := range again.Objects {
		if o.Key.Kind == "Deployment" {
			if r, _, _ := unstructuredInt(o.Obj.Object, "spec", "replicas"); r != 3 {
				t.Errorf("replicas read back as %#v, want int64 3", o.Obj.Object["spec"].(map[string]any)["replicas"])
			}
		}
		if o.Key.Kind == "ConfigMap" && o.HashSuffix == "" {
			t.Errorf("the generated ConfigMap lost its hash suffix")
		}
	}
	changed := writeFiles(t, diskFiles, map[string]string{"base/deploy.yaml": strings.Replace(diskFiles["base/deploy.yaml"], "web:1", "web:2", 1)})
	if _, _, c, err = diskRun(t, dir, changed, "app"); err != nil || c.misses != 1 {
		t.Errorf("a changed input: %d renders (err %v), want 1", c.misses, err)
	}
}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	var v any = obj
	for _, f := range fields {
		m, ok := v.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		v = m[f]
	}
	i, ok := v.(int64)
	return i, ok, nil
}

// TestDiskCacheNeverKeepsFailuresOrUnknownInputs: a failed render, and one whose
// inputs cannot be told (a generators: entry), are not written.
func TestDiskCacheNeverKeepsFailuresOrUnknownInputs(t *testing.T) {
	dir := t.TempDir()
	root := writeFiles(t, diskFiles, nil)
	if _, _, _, err := diskRun(t, dir, root, "bad"); err == nil {
		t.Fatal("bad: want a render error")
	}
	if _, _, _, err := diskRun(t, dir, root, "gen"); err != nil {
		t.Fatal(err)
	}
	if es := diskEntries(t, dir); len(es) != 0 {
		t.Errorf("kept %v, want nothing", es)
	}
	if _, _, c, err := diskRun(t, dir, root, "bad"); err == nil || c.misses != 1 {
		t.Errorf("bad again: %d renders (err %v), want 1 and an error", c.misses, err)
	}
}

// TestDiskCacheCorruptEntry: a truncated entry, or one whose bytes changed, is
// detected by its checksum, removed and rendered again; the new entry is good.
func TestDiskCacheCorruptEntry(t *testing.T) {
	root := writeFiles(t, diskFiles, nil)
	for name, spoil := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"flipped":   func(b []byte) []byte { return bytes.Replace(b, []byte(`"web:1"`), []byte(`"web:9"`), 1) },
		"empty":     func([]byte) []byte { return nil },
		"no header": func(b []byte) []byte { _, body, _ := bytes.Cut(b, []byte("\n")); return body },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			want, _, _, err := diskRun(t, dir, root, "app")
			if err != nil {
				t.Fatal(err)
			}
			es := diskEntries(t, dir)
			if len(es) != 1 {
				t.Fatalf("%d entries, want 1", len(es))
			}
			data, err := os.ReadFile(es[0])
			if err != nil {
				t.Fatal(err)
			}
			spoilt := spoil(data)
			if bytes.Equal(spoilt, data) {
				t.Fatal("the test did not change the entry")
			}
			if err := os.WriteFile(es[0], spoilt, 0o600); err != nil {
				t.Fatal(err)
			}
			got, d, c, err := diskRun(t, dir, root, "app")
			if err != nil {
				t.Fatal(err)
			}
			if c.misses != 1 || d.corrupt.Load() != 1 {
				t.Errorf("%d renders, %d corrupt entries; want 1 and 1", c.misses, d.corrupt.Load())
			}
			if !reflect.DeepEqual(got.Objects, want.Objects) {
				t.Errorf("the render after a corrupt entry differs")
			}
			if _, d, c, _ := diskRun(t, dir, root, "app"); c.misses != 0 || d.hits.Load() != 1 {
				t.Errorf("after re-rendering: %d renders, %d hits; want a hit", c.misses, d.hits.Load())
			}
		})
	}
}

// TestDiskCacheBoundedLRU: past its size the cache drops the least recently
// used entries, keeping the one just used.
func TestDiskCacheBoundedLRU(t *testing.T) {
	dir := t.TempDir()
	var roots []string
	for i := range 6 {
		roots = append(roots, writeFiles(t, diskFiles, map[string]string{"base/deploy.yaml": strings.Replace(diskFiles["base/deploy.yaml"], "web:1", fmt.Sprintf("web:%d", 10+i), 1)}))
	}
	_, _, _, _ = diskRun(t, dir, roots[0], "app")
	size := entrySize(t, dir)
	maxBytes := 3*size + size/2 // room for three entries
	run := func(root string) *renderCache {
		d, err := OpenDiskCache(dir, maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		c := newRenderCache()
		c.content, c.disk = nil, d
		if _, err := c.render(t.Context(), root, "app", render.DefaultOptions()); err != nil {
			t.Fatal(err)
		}
		d.Trim()
		return c
	}
	for _, r := range roots[1:] {
		run(r)
	}
	if n := len(diskEntries(t, dir)); n != 3 {
		t.Errorf("%d entries after 6 renders, want 3 (the limit)", n)
	}
	if c := run(roots[5]); c.misses != 0 {
		t.Errorf("the most recent entry was evicted")
	}
	if c := run(roots[0]); c.misses != 1 {
		t.Errorf("the least recent entry was kept")
	}
}

func entrySize(t *testing.T, dir string) int64 {
	t.Helper()
	es := diskEntries(t, dir)
	if len(es) != 1 {
		t.Fatalf("%d entries, want 1", len(es))
	}
	fi, err := os.Stat(es[0])
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestDiskCacheTwoProcesses: two processes render the same targets into one
// cache directory at the same time; every entry is whole, and a third run
// takes every target from it.
func TestDiskCacheTwoProcesses(t *testing.T) {
	if dir := os.Getenv("DRIFTPREVIEW_DISKCACHE_HELPER"); dir != "" {
		diskCacheWorker(t, dir, os.Getenv("DRIFTPREVIEW_DISKCACHE_ROOT"))
		return
	}
	dir := t.TempDir()
	root := writeFiles(t, diskCacheManyFiles(), nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheTwoProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DRIFTPREVIEW_DISKCACHE_HELPER="+dir, "DRIFTPREVIEW_DISKCACHE_ROOT="+root)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	diskCacheWorker(t, dir, root)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v\n%s", err, out.String())
	}
	d, err := OpenDiskCache(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newRenderCache()
	c.content, c.disk = nil, d
	for i := range diskCacheTargets {
		if _, err := c.render(t.Context(), root, fmt.Sprintf("app%d", i), render.DefaultOptions()); err != nil {
			t.Fatal(err)
		}
	}
	if c.misses != 0 || d.corrupt.Load() != 0 {
		t.Errorf("after two processes: %d renders, %d corrupt entries; want 0 and 0", c.misses, d.corrupt.Load())
	}
	if es := diskEntries(t, dir); len(es) != diskCacheTargets {
		t.Errorf("%d entries, want %d", len(es), diskCacheTargets)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, "tmp", "*")); len(tmp) != 0 {
		t.Errorf("left temporary files: %v", tmp)
	}
}

const diskCacheTargets = 8

func diskCacheManyFiles() map[string]string {
	files := map[string]string{"base/kustomization.yaml": diskFiles["base/kustomization.yaml"], "base/deploy.yaml": diskFiles["base/deploy.yaml"]}
	for i := range diskCacheTargets {
		files[fmt.Sprintf("app%d/kustomization.yaml", i)] = fmt.Sprintf("resources: [../base]\nnamePrefix: p%d-\n", i)
	}
	return files
}

// diskCacheWorker renders every target of diskCacheManyFiles, two at a time.
func diskCacheWorker(t *testing.T, dir, root string) {
	d, err := OpenDiskCache(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := newRenderCache()
	c.content, c.disk = nil, d
	var wg sync.WaitGroup
	errs := make([]error, diskCacheTargets)
	for i := range diskCacheTargets {
		wg.Go(func() {
			_, errs[i] = c.render(context.Background(), root, fmt.Sprintf("app%d", i), render.DefaultOptions())
		})
	}
	wg.Wait()
	d.Trim()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if d.corrupt.Load() != 0 {
		t.Errorf("%d corrupt entries read", d.corrupt.Load())
	}
}

// TestRenderCacheBaseAndHeadAtOnce: base and head of a target alike at both
// render at the same time (the pipeline does); the second waits for the first
// and shares its render.
func TestRenderCacheBaseAndHeadAtOnce(t *testing.T) {
	base, head := writeFiles(t, diskFiles, nil), writeFiles(t, diskFiles, nil)
	c := newRenderCache()
	c.content = newContentCache(maxSharedRenderBytes)
	var wg sync.WaitGroup
	sets := make([]render.ObjectSet, 2)
	for i, root := range []string{base, head} {
		wg.Go(func() {
			var err error
			if sets[i], err = c.render(t.Context(), root, "app", render.DefaultOptions()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c.misses != 1 || c.shared != 1 {
		t.Errorf("%d renders, %d shared; want 1 and 1", c.misses, c.shared)
	}
	if !reflect.DeepEqual(sets[0].Objects, sets[1].Objects) || sets[0].Objects[0].Obj == sets[1].Objects[0].Obj {
		t.Errorf("base and head must get equal objects, each its own")
	}
}

// TestTreeKeyConvertedFiles: a checkout whose files git converted
// (.gitattributes text=auto: no blob ids) is keyed by the bytes it holds,
// and a symlink by its target, so discovery's Results are kept for it too
// (issue 25); a changed byte changes the key.
func TestTreeKeyConvertedFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.yaml"), []byte("kind: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.yaml", filepath.Join(root, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	tree := render.GitTree{"a.yaml": {Mode: "100644"}, "link.yaml": {Mode: "120000"}, "b.yaml": {Mode: "100644", ID: "0123abcd"}}
	if err := os.WriteFile(filepath.Join(root, "b.yaml"), []byte("kind: B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	k1 := treeKey(root, tree)
	if k1 == "" {
		t.Fatal("a checkout of converted files and a symlink has no key")
	}
	if err := os.WriteFile(filepath.Join(root, "a.yaml"), []byte("kind: C\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if k2 := treeKey(root, tree); k2 == k1 || k2 == "" {
		t.Errorf("key %q after a converted file changed, want another than %q", k2, k1)
	}
	if err := os.Remove(filepath.Join(root, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if k := treeKey(root, tree); k != "" {
		t.Errorf("key %q with a converted file missing, want none", k)
	}
}

// BenchmarkDiskCachePut writes render cache entries of about a bench target's
// size (30 KB) from two goroutines at once, as base and head renders of a
// preview finish, through DiskCache.put ("put", one entry at a time) and
// straight into its store ("store", both at once): cpu-ms/op is the process's
// CPU time per entry.
//
//	go test ./bot/preview -run '^$' -bench DiskCachePut
func BenchmarkDiskCachePut(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 30000)
	cpu := func() time.Duration {
		var r syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	dir := b.TempDir()
	for i, how := range []string{"put", "store"} {
		b.Run(how, func(b *testing.B) {
			d, err := OpenDiskCache(filepath.Join(dir, fmt.Sprint(i)), 1<<40)
			if err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			start := cpu()
			b.SetParallelism(1) // GOMAXPROCS goroutines: two on the bench machine
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := d.key(fmt.Sprintf("bench-entry-%d", n.Add(1)))
					if how == "put" {
						d.putBody(key, diskCacheMagic, body)
					} else {
						_ = d.store.Put(key, func(w io.Writer) error { _, err := w.Write(body); return err })
					}
				}
			})
			b.ReportMetric(float64((cpu()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
