package preview

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDeprecationNoteOncePerRun previews two overlays of one base that uses a
// deprecated kustomize field: the base is rendered four times (two targets, base and
// head), and its warning is in the report once.
func TestDeprecationNoteOncePerRun(t *testing.T) {
	tree := func(value string) map[string]string {
		return map[string]string{
			".driftpreview.yaml":              "version: 1\ntargets:\n  - {name: one, path: overlays/one}\n  - {name: two, path: overlays/two}\n",
			"base/kustomization.yaml":         "commonLabels: {team: shop}\nresources: [cm.yaml]\n",
			"base/cm.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {v: \"" + value + "\"}\n",
			"overlays/one/kustomization.yaml": "namePrefix: one-\nresources: [../../base]\n",
			"overlays/two/kustomization.yaml": "namePrefix: two-\nresources: [../../base]\n",
		}
	}
	base, head := t.TempDir(), t.TempDir()
	writeTree(t, base, tree("1"))
	writeTree(t, head, tree("2"))
	rep, err := Run(t.Context(), Request{RepoDir: gitfixture.BaseHead(t, base, head), Base: "base", Head: "head", Now: scenarioNow})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 2 {
		t.Fatalf("want 2 targets, got %d", len(rep.Targets))
	}
	var notes []string
	for _, tr := range rep.Targets {
		for _, n := range tr.Notes {
			if strings.Contains(n, "'commonLabels' is deprecated") {
				notes = append(notes, tr.Name+": "+n)
			}
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "one: base/kustomization.yaml: ") {
		t.Errorf("want the deprecation once, in target one; got %q", notes)
	}
}
