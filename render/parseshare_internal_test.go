package render

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestShareParses: the finders of a pair of checkouts parse a file whose blob
// both hold once (base and head share the parse), a file whose blob differs
// once per side, and find the inputs that finders of their own find (issue
// 25).
func TestShareParses(t *testing.T) {
	files := func(patch string) (string, GitTree) {
		root := t.TempDir()
		tree := GitTree{}
		for name, f := range map[string]struct{ text, blob string }{
			"app/base/kustomization.yaml":    {"resources: [cm.yaml]\n", "b1"},
			"app/base/cm.yaml":               {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n", "b2"},
			"app/overlay/kustomization.yaml": {"resources: [../base]\npatches: [{path: " + patch + "}]\n", "b3-" + patch},
			"app/overlay/" + patch:           {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n", "b4"},
		} {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(f.text), 0o644); err != nil {
				t.Fatal(err)
			}
			tree[name] = GitFile{Mode: "100644", ID: f.blob}
		}
		return root, tree
	}
	baseDir, baseTree := files("p1.yaml")
	headDir, headTree := files("p2.yaml")
	base, head := NewInputFinderTree(baseDir, baseTree), NewInputFinderTree(headDir, headTree)
	defer base.Close()
	defer head.Close()
	ShareParses(base, head)
	gotBase, gotHead := base.Find("app/overlay", Options{}), head.Find("app/overlay", Options{})

	parse := func(f *InputFinder, rel string) *parsedYAML {
		t.Helper()
		f.mu.Lock()
		defer f.mu.Unlock()
		for k, r := range f.reads {
			if k.rel == rel {
				return r.yamlOf
			}
		}
		t.Fatalf("%s was not read", rel)
		return nil
	}
	if parse(base, "app/base/kustomization.yaml") != parse(head, "app/base/kustomization.yaml") {
		t.Errorf("the base's kustomization, one blob at both sides, was parsed once per side")
	}
	if parse(base, "app/overlay/kustomization.yaml") == parse(head, "app/overlay/kustomization.yaml") {
		t.Errorf("the overlay's kustomization, another blob at each side, shares one parse")
	}

	own := func(dir string, tree GitTree) Inputs {
		f := NewInputFinderTree(dir, tree)
		defer f.Close()
		return f.Find("app/overlay", Options{})
	}
	if want := own(baseDir, baseTree); !reflect.DeepEqual(gotBase, want) {
		t.Errorf("base inputs %+v, want %+v", gotBase, want)
	}
	if want := own(headDir, headTree); !reflect.DeepEqual(gotHead, want) || !reflect.DeepEqual(gotHead.Files, []string{"app/overlay/kustomization.yaml", "app/overlay/kustomization.yml", "app/overlay/Kustomization", "app/base/kustomization.yaml", "app/base/kustomization.yml", "app/base/Kustomization", "app/base/cm.yaml", "app/overlay/p2.yaml"}) {
		t.Errorf("head inputs %+v, want %+v", gotHead, want)
	}
}
