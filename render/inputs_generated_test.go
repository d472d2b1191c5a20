package render_test

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// generatedTree is a directory of apps without a kustomization, as a Flux
// home lab's Kustomization over ./kubernetes/apps builds it (issue 25):
// kustomize-controller generates a kustomization naming its .yaml files and
// the subdirectories that hold a kustomization, and does not descend into
// those.
var generatedTree = map[string]string{
	"apps/top.yaml":                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: top\n",
	"apps/notes.md":                     "not a manifest\n",
	"apps/ns/kustomization.yaml":        kustHeader + "namespace: ns\nresources: [a/ks.yaml]\ncomponents: [../../comp]\n",
	"apps/ns/a/ks.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-ks\ndata:\n  path: ./apps/ns/a/app\n",
	"apps/ns/a/app/kustomization.yaml":  kustHeader + "resources: [cm.yaml]\n",
	"apps/ns/a/app/cm.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-app\n",
	"apps/ns/a/unlisted.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unlisted\n",
	"apps/plain/x.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	"comp/kustomization.yaml":           "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [ns.yaml]\n",
	"comp/ns.yaml":                      "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n",
	"elsewhere/kustomization.yaml":      kustHeader + "resources: [cm.yaml]\n",
	"elsewhere/cm.yaml":                 cm,
	"apps/plain/deeper/y.yml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
	"apps/plain/deeper/readme.txt":      "x\n",
	"apps/ns/a/app/nested/extra.yaml":   cm,
	"apps/ns/kustomization-notes.txt":   "x\n",
	"apps/ns/a/app/kustomization-x.yml": cm,
}

// TestFindInputsGenerated: the inputs of a target directory without a
// kustomization are what the generated kustomization reads, not the whole
// tree. For every file of the tree, a change that is not an input leaves
// the render (and its content key) as it was; one that is an input touches
// the target.
func TestFindInputsGenerated(t *testing.T) {
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererKustomize
	root := writeTree(t, generatedTree)
	in := render.FindInputs(root, "apps", opts)
	if in.Unknown != "" {
		t.Fatalf("unknown: %s", in.Unknown)
	}
	base, err := render.Render(t.Context(), root, "apps", opts)
	if err != nil {
		t.Fatal(err)
	}
	baseKey, ok := render.ContentKey(root, "apps", opts)
	if !ok {
		t.Fatal("no content key")
	}
	wantInput := map[string]bool{
		"apps/top.yaml": true, "apps/ns/kustomization.yaml": true, "apps/ns/a/ks.yaml": true,
		"apps/plain/x.yaml": true, "apps/plain/deeper/y.yml": true, "comp/kustomization.yaml": true, "comp/ns.yaml": true,
	}
	for file := range generatedTree {
		_, touched := in.Touched([]string{file})
		if touched != wantInput[file] {
			t.Errorf("a change to %s: touched %v, want %v (inputs %v, dirs %v)", file, touched, wantInput[file], in.Files, in.Dirs)
		}
		edited := maps.Clone(generatedTree)
		// A manifest gets a label (a render that reads it changes), any
		// other file a comment.
		edited[file] = strings.Replace(generatedTree[file], "\nmetadata:\n", "\nmetadata:\n  labels: {edited: \"yes\"}\n", 1)
		if edited[file] == generatedTree[file] {
			edited[file] += "# edited\n"
		}
		r2 := writeTree(t, edited)
		set, err := render.Render(t.Context(), r2, "apps", opts)
		if err != nil {
			t.Fatalf("%s edited: %v", file, err)
		}
		key, _ := render.ContentKey(r2, "apps", opts)
		if !touched {
			if !reflect.DeepEqual(objectsOf(set), objectsOf(base)) {
				t.Errorf("a change to %s is not an input but changes the render", file)
			}
			if key != baseKey {
				t.Errorf("a change to %s is not an input but changes the content key", file)
			}
		} else if key == baseKey {
			t.Errorf("a change to %s is an input but leaves the content key", file)
		}
	}
	// Files added at head are found by walking the head: a new manifest in the
	// generated part, or a kustomization that turns a plain subdirectory into
	// one the generator names.
	for _, added := range []string{"apps/new.yaml", "apps/plain/kustomization.yaml", "apps/newdir/z.yaml"} {
		edited := maps.Clone(generatedTree)
		edited[added] = kustHeader + "resources: [x.yaml]\n"
		if added != "apps/plain/kustomization.yaml" {
			edited[added] = cm
		}
		r2 := writeTree(t, edited)
		if _, ok := render.FindInputs(r2, "apps", opts).Touched([]string{added}); !ok {
			t.Errorf("adding %s does not touch the target at head", added)
		}
		if key, _ := render.ContentKey(r2, "apps", opts); key == baseKey {
			t.Errorf("adding %s leaves the content key", added)
		}
	}
	// Adding a file no render reads: neither touched nor another key.
	edited := maps.Clone(generatedTree)
	edited["apps/ns/a/app/more.yaml"] = cm
	r2 := writeTree(t, edited)
	if _, ok := render.FindInputs(r2, "apps", opts).Touched([]string{"apps/ns/a/app/more.yaml"}); ok {
		t.Error("a file under an app's kustomization that it does not name touches the directory of apps")
	}
	if key, _ := render.ContentKey(r2, "apps", opts); key != baseKey {
		t.Error("a file no render reads changes the content key")
	}
	// A symlink in the generated part makes the inputs unknown.
	if err := os.Symlink("top.yaml", filepath.Join(r2, "apps", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	if in := render.FindInputs(r2, "apps", opts); in.Unknown == "" {
		t.Error("a symlink in the generated part leaves the inputs known")
	}
}

// objectsOf is a render's objects, for comparing two renders.
func objectsOf(set render.ObjectSet) []map[string]any {
	var out []map[string]any
	for _, o := range set.Objects {
		if o.Obj != nil {
			out = append(out, o.Obj.Object)
		}
	}
	return out
}
