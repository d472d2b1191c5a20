package preview

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/render"
)

// blobKeyTree is a repository layout with a kustomize overlay over a shared
// base and a local chart: the inputs content keys are made of.
func blobKeyTree() fstest.MapFS {
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o644} }
	return fstest.MapFS{
		"apps/a/kustomization.yaml": f("resources: [cm.yaml, ../../base]\n"),
		"apps/a/cm.yaml":            f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
		"base/kustomization.yaml":   f("resources: [deploy.yaml]\n"),
		"base/deploy.yaml":          f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"),
		"charts/c/Chart.yaml":       f("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
		"charts/c/values.yaml":      f("x: 1\n"),
		"charts/c/templates/x.yaml": f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
		"other/unrelated.yaml":      f("a: 1\n"),
	}
}

var blobKeyTargets = []struct {
	path string
	opts render.Options
}{
	{"apps/a", render.Options{Renderer: render.RendererKustomize}},
	{"charts/c", render.Options{Renderer: render.RendererHelm, Helm: render.HelmOptions{ReleaseName: "c"}}},
}

// keysOf checks out base and head as a run does and returns each target's
// content key at both, from git's blob ids (and fails when one is not), and
// the keys from reading the files.
func keysOf(t *testing.T, dir, base, head string) (baseKeys, headKeys, readKeys [2][]string) {
	t.Helper()
	r := repo{dir: dir}
	ctx := context.Background()
	b, err := r.resolve(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.resolve(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	co, err := r.checkoutBoth(ctx, b, h, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i, side := range []struct {
		dir  string
		tree render.GitTree
		keys *[]string
	}{{co.baseDir, co.baseTree.entries, &baseKeys[0]}, {co.headDir, co.headTree.entries, &headKeys[0]}} {
		f, plain := render.NewInputFinderTree(side.dir, side.tree), render.NewInputFinder(side.dir)
		for _, tg := range blobKeyTargets {
			sameInputs(t, f, plain, tg.path, tg.opts)
			k, ok := f.ContentKey(tg.path, tg.opts)
			rk, rok := plain.ContentKey(tg.path, tg.opts)
			if !ok || !rok {
				t.Fatalf("%s at %s: no content key (blob ids %v, read %v)", tg.path, side.dir, ok, rok)
			}
			*side.keys = append(*side.keys, k)
			readKeys[i] = append(readKeys[i], rk)
		}
		f.Close()
		plain.Close()
	}
	baseKeys[1], headKeys[1] = readKeys[0], readKeys[1]
	return baseKeys, headKeys, readKeys
}

// TestContentKeyFromBlobIDs: keyed from git's blob ids, a render's key is
// the same in two checkouts of the same tree, and changes when any input
// changes (a file's content, a file in a shared base, a file added to a
// chart, a file's mode, a second kustomization file where the walker looked
// for one), as the key from reading the files does; a file outside the
// inputs changes neither. The keys are not the read ones (their header
// differs), so the two kinds never meet in a cache.
func TestContentKeyFromBlobIDs(t *testing.T) {
	base := blobKeyTree()
	variant := func(change func(m fstest.MapFS)) fstest.MapFS {
		m := maps.Clone(base)
		change(m)
		return m
	}
	f := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s), Mode: 0o644} }
	changes := []struct {
		tag     string
		tree    fstest.MapFS
		changed [2]bool // which targets' keys change
	}{
		{"same", variant(func(fstest.MapFS) {}), [2]bool{false, false}},
		{"unrelated", variant(func(m fstest.MapFS) { m["other/unrelated.yaml"] = f("a: 2\n") }), [2]bool{false, false}},
		{"overlay-file", variant(func(m fstest.MapFS) {
			m["apps/a/cm.yaml"] = f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a2}\n")
		}), [2]bool{true, false}},
		{"base-file", variant(func(m fstest.MapFS) {
			m["base/deploy.yaml"] = f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n")
		}), [2]bool{true, false}},
		{"second-kustomization", variant(func(m fstest.MapFS) { m["base/kustomization.yml"] = f("resources: []\n") }), [2]bool{true, false}},
		{"chart-file-added", variant(func(m fstest.MapFS) {
			m["charts/c/templates/y.yaml"] = f("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n")
		}), [2]bool{false, true}},
		{"chart-value", variant(func(m fstest.MapFS) { m["charts/c/values.yaml"] = f("x: 2\n") }), [2]bool{false, true}},
		{"chart-mode", variant(func(m fstest.MapFS) { m["charts/c/values.yaml"] = &fstest.MapFile{Data: []byte("x: 1\n"), Mode: 0o755} }), [2]bool{false, true}},
	}
	commits := []gitfixture.Commit{{Tag: "base", Tree: base}}
	for _, c := range changes {
		commits = append(commits, gitfixture.Commit{Tag: c.tag, Tree: c.tree})
	}
	dir := t.TempDir()
	if err := gitfixture.Make(dir, commits...); err != nil {
		t.Fatal(err)
	}
	// Two checkouts of the same tree (base at base, and again at "same").
	bk, hk, rk := keysOf(t, dir, "base", "base")
	for i, tg := range blobKeyTargets {
		if bk[0][i] != hk[0][i] {
			t.Errorf("%s: two checkouts of one tree have different keys", tg.path)
		}
		if bk[0][i] == rk[0][i] {
			t.Errorf("%s: the key from blob ids is the read key", tg.path)
		}
	}
	for _, c := range changes {
		t.Run(c.tag, func(t *testing.T) {
			bk, hk, _ := keysOf(t, dir, "base", c.tag)
			for i, tg := range blobKeyTargets {
				if got := bk[0][i] != hk[0][i]; got != c.changed[i] {
					t.Errorf("%s: key changed %v, want %v", tg.path, got, c.changed[i])
				}
				if got := bk[1][i] != hk[1][i]; got != c.changed[i] && c.tag != "chart-mode" {
					t.Errorf("%s: read key changed %v, want %v", tg.path, got, c.changed[i])
				}
			}
		})
	}
}

// TestContentKeyBlobIDsFallBack: where the checkout is not the blobs (a
// .gitattributes that converts line ends), or an input is not a file of the
// tree (a symlink in a chart), the key is made as before, by reading the
// files: the same as a finder without the tree, or none for the symlink.
func TestContentKeyBlobIDsFallBack(t *testing.T) {
	crlf := blobKeyTree()
	crlf[".gitattributes"] = &fstest.MapFile{Data: []byte("apps/** text eol=crlf\n"), Mode: 0o644}
	dir := t.TempDir()
	if err := gitfixture.Make(dir, gitfixture.Commit{Tag: "crlf", Tree: crlf}); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, dir, "config", "core.autocrlf", "false")
	r := repo{dir: dir}
	ctx := context.Background()
	sha, _ := r.resolve(ctx, "crlf")
	co, err := r.checkoutBoth(ctx, sha, sha, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(co.baseDir, "apps/a/cm.yaml")); string(data[len(data)-2:]) != "\r\n" {
		t.Fatalf("the checkout did not convert line ends: %q", data)
	}
	if e := co.baseTree.entries["apps/a/cm.yaml"]; e.ID != "" || e.Mode != "100644" {
		t.Errorf("a converted file is listed as %+v, want its mode without an ID", e)
	}
	if e := co.baseTree.entries["charts/c/values.yaml"]; e.ID == "" {
		t.Error("a file git writes as its blob has no ID")
	}
	f, plain := render.NewInputFinderTree(co.baseDir, co.baseTree.entries), render.NewInputFinder(co.baseDir)
	defer f.Close()
	defer plain.Close()
	tg := blobKeyTargets[0]
	k, ok := f.ContentKey(tg.path, tg.opts)
	rk, rok := plain.ContentKey(tg.path, tg.opts)
	if !ok || !rok || k != rk {
		t.Errorf("converted input: key %q (%v), want the read key %q (%v)", k, ok, rk, rok)
	}
	tc := blobKeyTargets[1]
	if k, _ := f.ContentKey(tc.path, tc.opts); k == "" || k == func() string { k, _ := plain.ContentKey(tc.path, tc.opts); return k }() {
		t.Errorf("unconverted chart: key %q is not from blob ids", k)
	}

	// A symlink in the chart: no key, as without the tree.
	link := t.TempDir()
	if err := gitfixture.Make(link, gitfixture.Commit{Tag: "link", Tree: blobKeyTree()}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("values.yaml", filepath.Join(link, "charts/c/templates/link.yaml")); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, link, "add", "-A")
	gitfixture.Git(t, link, "commit", "-q", "-m", "link")
	r = repo{dir: link}
	sha, _ = r.resolve(ctx, "HEAD")
	co, err = r.checkoutBoth(ctx, sha, sha, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if e := co.baseTree.entries["charts/c/templates/link.yaml"]; e.Mode != "120000" {
		t.Fatalf("the symlink is listed as %+v", e)
	}
	f2, plain2 := render.NewInputFinderTree(co.baseDir, co.baseTree.entries), render.NewInputFinder(co.baseDir)
	defer f2.Close()
	defer plain2.Close()
	for _, tg := range blobKeyTargets {
		sameInputs(t, f2, plain2, tg.path, tg.opts)
	}
	for _, p := range []string{"charts/c/templates/link.yaml", "charts/c/templates/link.yaml/x", "nosuch", "apps/a/cm.yaml/x"} {
		sameInputs(t, f2, plain2, p, render.Options{})
	}
	if k, ok := f2.ContentKey(tc.path, tc.opts); ok {
		t.Errorf("a chart holding a symlink has key %q", k)
	}
	if k, ok := f2.ContentKey(tg.path, tg.opts); !ok || k == "" {
		t.Error("the overlay beside it has no key")
	}
}

// sameInputs checks that a finder that looks paths up in git's tree finds the
// inputs one that asks the file system finds.
func sameInputs(t *testing.T, tree, plain *render.InputFinder, target string, opts render.Options) {
	t.Helper()
	got, want := tree.Find(target, opts), plain.Find(target, opts)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: inputs from the tree %+v, from the file system %+v", target, got, want)
	}
}
