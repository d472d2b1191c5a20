package render_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// sharedBaseTree is two overlays of one base, which also reads a component.
func sharedBaseTree(t *testing.T) string {
	return writeTree(t, map[string]string{
		"base/kustomization.yaml":       kustHeader + "resources:\n  - cm.yaml\n  - more.yaml\n",
		"base/cm.yaml":                  cm,
		"base/more.yaml":                strings.Replace(cm, "name: cm", "name: more", 1),
		"comp/kustomization.yaml":       "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nlabels:\n  - pairs:\n      comp: \"yes\"\n",
		"overlays/a/kustomization.yaml": kustHeader + "resources:\n  - ../../base\ncomponents:\n  - ../../comp\nnamePrefix: a-\n",
		"overlays/b/kustomization.yaml": kustHeader + "resources:\n  - ../../base\ncomponents:\n  - ../../comp\nnamePrefix: b-\n",
	})
}

// TestCheckoutCacheReadsASharedBaseOnce renders two overlays of one base in
// this process: with the checkout named, the second render reads only its own
// kustomization from the file system; unnamed, it reads the base again. The
// renders are the same either way.
func TestCheckoutCacheReadsASharedBaseOnce(t *testing.T) {
	render.NoSourceMarkerCheck(t)
	root := sharedBaseTree(t)
	render.DropCheckouts()
	t.Cleanup(render.DropCheckouts)
	reads := func(id string) (int64, int64, []render.ObjectSet) {
		opts := render.DefaultOptions()
		opts.Checkout = id
		var n [2]int64
		var sets []render.ObjectSet
		for i, target := range []string{"overlays/a", "overlays/b"} {
			before := render.KernelReads()
			set, err := render.RenderInProcess(t.Context(), root, target, opts)
			if err != nil {
				t.Fatalf("%s: %v", target, err)
			}
			n[i] = render.KernelReads() - before
			sets = append(sets, set)
		}
		return n[0], n[1], sets
	}
	ua, ub, unnamed := reads("")
	if ua != ub || ub < 5 {
		t.Fatalf("unnamed: %d and %d files read, want the same (overlay, base and its 2 files, component)", ua, ub)
	}
	na, nb, named := reads(render.NewCheckoutID())
	if na != ua {
		t.Errorf("named, first render: %d files read, want %d as unnamed", na, ua)
	}
	if nb != 1 {
		t.Errorf("named, second render: %d files read, want 1 (its own kustomization)", nb)
	}
	if !reflect.DeepEqual(named, unnamed) {
		t.Errorf("named renders differ from unnamed ones")
	}
	// Another name is another checkout: everything is read again.
	if na2, _, _ := reads(render.NewCheckoutID()); na2 != ua {
		t.Errorf("a new name, first render: %d files read, want %d", na2, ua)
	}
}

// TestCheckoutCacheInTheRenderProcess changes a file of a checkout between two
// renders in a render process (which a named checkout promises never to
// happen) to see what the process read: under the same name it serves what it
// kept; under a new name (a new checkout, here at the same path) it reads the
// file again.
func TestCheckoutCacheInTheRenderProcess(t *testing.T) {
	root := sharedBaseTree(t)
	render.Shutdown() // a process of this test's own
	t.Cleanup(render.Shutdown)
	opts := render.DefaultOptions()
	opts.Checkout = render.NewCheckoutID()
	name := func(set render.ObjectSet) string {
		for _, o := range set.Objects {
			if strings.Contains(o.Key.Name, "more") {
				return o.Key.Name
			}
		}
		return ""
	}
	set, err := render.Render(t.Context(), root, "overlays/a", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(set); got != "a-more" {
		t.Fatalf("first render: %q, want a-more", got)
	}
	if err := os.WriteFile(filepath.Join(root, "base/more.yaml"), []byte(strings.Replace(cm, "name: cm", "name: changed", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err = render.Render(t.Context(), root, "overlays/b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(set); got != "b-more" {
		t.Errorf("same name: %q, want b-more (kept from the first render)", got)
	}
	if n := render.ProcessesStarted(); n < 1 {
		t.Fatalf("no render process started")
	}
	opts.Checkout = render.NewCheckoutID()
	set, err = render.Render(t.Context(), root, "overlays/b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(set); got != "" {
		t.Errorf("new name: still renders %q, want the changed file read again", got)
	}
	if !strings.Contains(objectNames(set), "b-changed") {
		t.Errorf("new name: objects %s, want b-changed", objectNames(set))
	}
}

func objectNames(set render.ObjectSet) string {
	var names []string
	for _, o := range set.Objects {
		names = append(names, o.Key.Name)
	}
	return strings.Join(names, ",")
}

// TestCheckoutCacheKeepsTheChecks renders what the sandbox refuses (files over
// the limits, symlinks leaving the checkout, missing and special files) with
// the checkout unnamed and named, the second named render answered from the
// cache: every answer, error text included, is the same. A file a render with
// a high limit read (and the cache kept) is still refused by a render with a
// lower one.
func TestCheckoutCacheKeepsTheChecks(t *testing.T) {
	big := padded("big") // about 700 bytes
	root := writeTree(t, map[string]string{
		"big/kustomization.yaml":     kustHeader + "resources:\n  - cm.yaml\n",
		"big/cm.yaml":                big,
		"total/kustomization.yaml":   kustHeader + "resources:\n  - a.yaml\n  - b.yaml\n",
		"total/a.yaml":               padded("a"),
		"total/b.yaml":               padded("b"),
		"missing/kustomization.yaml": kustHeader + "resources:\n  - nothere.yaml\n",
		"linkout/kustomization.yaml": kustHeader + "resources:\n  - out.yaml\n",
		"dirlink/kustomization.yaml": kustHeader + "resources:\n  - sub\n",
		"inner/kustomization.yaml":   kustHeader + "resources:\n  - ../big/cm.yaml\n  - in.yaml\n",
		"viadir/kustomization.yaml":  kustHeader + "resources:\n  - ../dl\n",
		"nodir/kustomization.yaml":   kustHeader + "resources:\n  - ../absent/dir/x.yaml\n",
		"isdir/kustomization.yaml":   kustHeader + "resources:\n  - cm.yaml\n",
		"isdir/cm.yaml/x":            "",
		"plain/cm.yaml":              cm,
		"plain/big.yaml":             big,
		"chart/Chart.yaml":           chartYAML,
		"chart/templates/cm.yaml":    cm,
		"chart/values.yaml":          "x: 1\n",
		"chart/values-big.yaml":      "x: '" + strings.Repeat("v", 900) + "'\n",
	})
	symlink("../../outside.yaml", "linkout/out.yaml")(t, root)
	symlink("../..", "dirlink/sub")(t, root)
	symlink("../big/cm.yaml", "inner/in.yaml")(t, root)
	symlink("big", "dl")(t, root)
	render.DropCheckouts()
	t.Cleanup(render.DropCheckouts)
	type answer struct {
		set render.ObjectSet
		err string
	}
	cases := []struct {
		target string
		opts   func(*render.Options)
	}{
		{"big", nil},
		{"big", func(o *render.Options) { o.MaxFileBytes = 500 }},
		{"big", nil},
		{"total", func(o *render.Options) { o.MaxTotalBytes = 1500 }},
		{"total", nil},
		{"missing", nil},
		{"linkout", nil},
		{"dirlink", nil},
		{"inner", nil},
		{"inner", func(o *render.Options) { o.MaxFileBytes = 500 }},
		{"viadir", nil},
		{"viadir", func(o *render.Options) { o.MaxFileBytes = 500 }},
		{"nodir", nil},
		{"isdir", nil},
		{"plain", nil},
		{"plain", func(o *render.Options) { o.MaxFileBytes = 500 }},
		{"plain", func(o *render.Options) { o.Plain.Recurse = true }},
		{"chart", func(o *render.Options) { o.Helm.ValuesFiles = []string{"chart/values-big.yaml"} }},
		{"chart", func(o *render.Options) {
			o.Helm.ValuesFiles = []string{"chart/values-big.yaml"}
			o.MaxFileBytes = 500
		}},
		{"chart", func(o *render.Options) {
			o.Helm.ValuesFiles = []string{"chart/none.yaml"}
			o.Helm.IgnoreMissingValuesFiles = true
		}},
		{"chart", func(o *render.Options) { o.Helm.ValuesFiles = []string{"chart/none.yaml"} }},
		{"nothere", nil},
	}
	run := func(id string) []answer {
		var out []answer
		for _, c := range cases {
			opts := render.DefaultOptions()
			opts.Checkout = id
			if c.opts != nil {
				c.opts(&opts)
			}
			set, err := render.RenderInProcess(t.Context(), root, c.target, opts)
			a := answer{set: set}
			if err != nil {
				a.err = err.Error()
			}
			out = append(out, a)
		}
		return out
	}
	want := run("")
	id := render.NewCheckoutID()
	cold := run(id)
	warmBefore := render.KernelReads()
	warm := run(id)
	for i, c := range cases {
		if !reflect.DeepEqual(cold[i], want[i]) {
			t.Errorf("%s (case %d), named, first: %q, want %q", c.target, i, cold[i].err, want[i].err)
		}
		if !reflect.DeepEqual(warm[i], want[i]) {
			t.Errorf("%s (case %d), named, from the cache: %q, want %q", c.target, i, warm[i].err, want[i].err)
		}
	}
	for _, w := range []string{"big", "over the 500-byte limit per file"} {
		if !strings.Contains(want[1].err, w) {
			t.Errorf("big with a 500-byte limit: %q, want it to contain %q", want[1].err, w)
		}
	}
	if !strings.Contains(want[3].err, "more than 1500 bytes") {
		t.Errorf("total: %q, want the per-target limit", want[3].err)
	}
	if want[10].err != "" || len(want[10].set.Objects) != 1 {
		t.Errorf("viadir: %q, want the file through the directory symlink", want[11].err)
	}
	if !strings.Contains(want[6].err, "symlink") {
		t.Errorf("linkout: %q, want the symlink named", want[6].err)
	}
	// The files over the lower limit are the only ones read again.
	if n := render.KernelReads() - warmBefore; n > 5 {
		t.Errorf("from the cache: %d files read from the file system, want at most the 5 refused over a limit", n)
	}
}

// TestCheckoutCacheBounded keeps a process's cache of a checkout within its
// bytes (a 32nd of the memory limit, at most 16 MiB), whatever the checkout
// holds: files past it are read from the file system each time, and renders
// are the same. Past two checkouts, the least recently used is dropped, and a
// checkout whose directory is removed goes when another arrives.
func TestCheckoutCacheBounded(t *testing.T) {
	if got := render.CheckoutCacheBytes(512 << 20); got != 16<<20 {
		t.Errorf("cache for 512 MiB: %d, want 16 MiB", got)
	}
	if got := render.CheckoutCacheBytes(64 << 20); got != 2<<20 {
		t.Errorf("cache for 64 MiB: %d, want 2 MiB", got)
	}
	files := map[string]string{}
	var list strings.Builder
	list.WriteString(kustHeader + "resources:\n")
	for i := range 8 {
		n := string(rune('a'+i)) + ".yaml"
		// About 300 KiB each: 2.4 MiB in all, past the 2 MiB of a 64 MiB process.
		files["app/"+n] = strings.Replace(cm, "name: cm", "name: cm-"+string(rune('a'+i)), 1) + "data:\n  x: " + strings.Repeat("z", 300<<10) + "\n"
		list.WriteString("  - " + n + "\n")
	}
	files["app/kustomization.yaml"] = list.String()
	root := writeTree(t, files)
	render.DropCheckouts()
	t.Cleanup(render.DropCheckouts)
	opts := render.DefaultOptions()
	opts.MaxMemoryBytes = 64 << 20
	opts.Checkout = render.NewCheckoutID()
	var sets []render.ObjectSet
	var reads []int64
	for range 2 {
		before := render.KernelReads()
		set, err := render.RenderInProcess(t.Context(), root, "app", opts)
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, set)
		reads = append(reads, render.KernelReads()-before)
	}
	if !reflect.DeepEqual(sets[0], sets[1]) || len(sets[0].Objects) != 8 {
		t.Errorf("renders differ or miss objects: %d objects", len(sets[0].Objects))
	}
	ids, sizes := render.CheckoutsKept()
	if len(ids) != 1 || sizes[0] > 2<<20 || sizes[0] < 1<<20 {
		t.Errorf("kept %v of %v bytes, want one checkout of 1 to 2 MiB", sizes, ids)
	}
	if reads[1] == 0 || reads[1] >= reads[0] {
		t.Errorf("second render read %d files (first %d): want those past the bound only", reads[1], reads[0])
	}

	// Three checkouts: the first is dropped.
	second, third := render.NewCheckoutID(), render.NewCheckoutID()
	other := sharedBaseTree(t)
	for _, id := range []string{second, third} {
		o := render.DefaultOptions()
		o.Checkout = id
		if _, err := render.RenderInProcess(t.Context(), other, "overlays/a", o); err != nil {
			t.Fatal(err)
		}
	}
	if ids, _ := render.CheckoutsKept(); !reflect.DeepEqual(ids, []string{third, second}) {
		t.Errorf("kept %v, want the last two", ids)
	}
	// The directory of third is removed: the next checkout drops it at once.
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	fourth := render.NewCheckoutID()
	o := render.DefaultOptions()
	o.Checkout = fourth
	if _, err := render.RenderInProcess(t.Context(), sharedBaseTree(t), "overlays/b", o); err != nil {
		t.Fatal(err)
	}
	if ids, _ := render.CheckoutsKept(); !reflect.DeepEqual(ids, []string{fourth}) {
		t.Errorf("kept %v, want only the new one (the others' directory is gone)", ids)
	}
}
