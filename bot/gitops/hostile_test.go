package gitops

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// hostileApp is an Argo CD Application whose spec.info holds extra, so the file
// is one discovery reads.
func hostileApp(extra string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: hostile\nspec:\n  destination: {server: https://kubernetes.default.svc}\n  source: {repoURL: https://github.com/example/repo, path: app}\n" + extra
}

// bombLines are nine levels of nine aliases each: 9^9 nodes from 10 lines.
func bombLines() string {
	var b strings.Builder
	b.WriteString("  a: &a [x, x, x, x, x, x, x, x, x]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		fmt.Fprintf(&b, "  %s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", n, n, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = n
	}
	return b.String()
}

// TestDiscoverHostileYAML: the files discovery reads for GitOps objects go through
// render's decoder, so an alias bomb and nesting past render.MaxDepth are refused with a note naming file and line (for a bomb, the line where
// the expansion passes the limit), as render refuses them, and a
// file over the scan limit is not read at all.
func TestDiscoverHostileYAML(t *testing.T) {
	deep := strings.Repeat("[", render.MaxDepth+1) + strings.Repeat("]", render.MaxDepth+1)
	for _, tc := range []struct {
		name, file, want string
	}{
		{"alias bomb", hostileApp("info:\n" + bombLines()), "apps/hostile.yaml:14: invalid YAML: aliases expand the document to more than 500000 nodes (a YAML alias bomb?): skipped while looking for GitOps objects"},
		{"deep nesting", hostileApp("info: " + deep + "\n"), fmt.Sprintf("apps/hostile.yaml:8: invalid YAML: nested more than %d levels deep: skipped while looking for GitOps objects", render.MaxDepth)},
		{"huge file", hostileApp("info: [" + strings.Repeat("x, ", maxScanBytes/3) + "x]\n"), fmt.Sprintf("apps/hostile.yaml is larger than %d bytes and was not searched for GitOps objects", maxScanBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, map[string]string{"apps/hostile.yaml": tc.file, "app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"})
			res, err := Discover(t.Context(), root, Options{RepoURLs: []string{thisRepo}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Targets)+len(res.NotRendered) != 0 {
				t.Errorf("targets %v, not rendered %v: a refused file must give none", project(res.Targets), project(res.NotRendered))
			}
			if len(res.Notes) != 1 || res.Notes[0] != tc.want {
				t.Errorf("notes = %q\nwant [%q]", res.Notes, tc.want)
			}
		})
	}
}

// TestStringsOfPRHostileYAML: the YAML strings discovery decodes (git generator
// files, elementsYaml, templatePatch, Helm values) meet render's limits too.
func TestStringsOfPRHostileYAML(t *testing.T) {
	bomb := "x:\n" + bombLines()
	e := &expander{}
	if _, err := e.fileParams("config/env.yaml", []byte(bomb), ""); err == nil || !strings.Contains(err.Error(), "config/env.yaml:7: invalid YAML: aliases expand") {
		t.Errorf("git files generator: error = %v, want the alias bomb refused at config/env.yaml:7", err)
	}
	if _, err := e.fileParams("config/env.yaml", []byte("a: 1\na: 2\n"), ""); err == nil || !strings.Contains(err.Error(), `config/env.yaml:2: invalid YAML: duplicate key "a"`) {
		t.Errorf("git files generator: error = %v, want the duplicate key refused at config/env.yaml:2", err)
	}
	if _, err := applyTemplatePatch(map[string]any{}, "spec:\n  project: a\n  project: b\n"); err == nil || !strings.Contains(err.Error(), `templatePatch:3: invalid YAML: duplicate key "project"`) {
		t.Errorf("templatePatch: error = %v, want the duplicate key refused at line 3", err)
	}
	if _, err := e.list([]byte(`{"elementsYaml": "- a: 1\n- ` + strings.Repeat("[", render.MaxDepth+1) + strings.Repeat("]", render.MaxDepth+1) + `"}`)); err == nil || !strings.Contains(err.Error(), "elementsYaml:2: invalid YAML: nested more than") {
		t.Errorf("elementsYaml: error = %v, want the nesting refused at line 2", err)
	}
}

// TestDiscoverDuplicateKey: Argo CD deploys an Application whose file repeats a
// key (its repo server decodes with sigs.k8s.io/yaml, go-yaml v2: the last value
// wins), so discovery reads it the same way, with a note naming file and line,
// instead of skipping the file as invalid YAML.
func TestDiscoverDuplicateKey(t *testing.T) {
	app := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: dup\nspec:\n  destination:\n    server: https://kubernetes.default.svc\n    namespace: first\n    namespace: second\n  source: {repoURL: https://github.com/example/repo, path: app}\n"
	root := writeFiles(t, map[string]string{
		"apps/dup.yaml": app,
		"app/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
	})
	res, err := Discover(t.Context(), root, Options{RepoURLs: []string{thisRepo}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Targets) != 1 || res.Targets[0].Name != "dup" {
		t.Fatalf("targets %v, not rendered %v: want the Application dup", project(res.Targets), project(res.NotRendered))
	}
	if ns := res.Targets[0].Namespace; ns != "second" {
		t.Errorf("namespace = %q, want second (the last value)", ns)
	}
	want := `apps/dup.yaml:9: duplicate key "namespace" (first on line 8): read as Argo CD reads it, the last value wins (kustomize, and so Flux, refuses the file)`
	if !slices.Contains(res.Notes, want) {
		t.Errorf("notes = %q\nwant %q among them", res.Notes, want)
	}
	// The comment shows targets' notes: the Application's target says it too.
	if !slices.Contains(res.Targets[0].Notes, want) {
		t.Errorf("target notes = %q\nwant %q among them", res.Targets[0].Notes, want)
	}
}
