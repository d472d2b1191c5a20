package discover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// TestUnread: a changed file that no target found reads is a reason to
// search in full only when a render left out could read it: a manifest, a
// file of a chart, a file some manifest or kustomization names; not a
// README no file names.
func TestUnread(t *testing.T) {
	root := t.TempDir()
	for p, c := range map[string]string{
		"README.md":                   "# repo\n",
		"docs/setup.md":               "setup\n",
		"apps/web/kustomization.yaml": "resources:\n  - deploy.yaml\n",
		"apps/web/deploy.yaml":        "kind: ConfigMap\n",
		"apps/cfg/kustomization.yaml": "configMapGenerator:\n  - name: c\n    files:\n      - nginx.conf\n",
		"apps/cfg/nginx.conf":         "x\n",
		"charts/web/Chart.yaml":       "name: web\n",
		"charts/web/files/banner.txt": "hi\n",
		"other/values-list.yaml":      "valueFiles: [notes.md]\n",
		"other/notes.md":              "n\n",
	} {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fi := render.NewInputFinder(root)
	defer fi.Close()
	inputs := func(t config.Target) render.Inputs { return fi.Find(t.Path, t.Render) }
	web := config.Target{Name: "web", Path: "apps/web", Render: render.DefaultOptions(),
		Controller: &diffing.Controller{Kind: "Kustomization", Name: "web", Source: "clusters/web.yaml"}}
	res := &gitops.Result{Targets: []config.Target{web}}
	for file, want := range map[string]bool{
		"README.md":                   false,
		"docs/setup.md":               false,
		"apps/web/deploy.yaml":        false, // read by web
		"clusters/web.yaml":           false, // web's object
		"apps/new/deploy.yaml":        true,  // a manifest no target found reads
		"apps/cfg/nginx.conf":         true,  // a kustomization names it
		"charts/web/files/banner.txt": true,  // a chart's file
		"other/notes.md":              true,  // a manifest names it
		".sourceignore":               true,
	} {
		if got := unread([]string{file}, inputs, root, root, res, res) != ""; got != want {
			t.Errorf("%s: may be read unseen %v, want %v", file, got, want)
		}
	}
}
