package render_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestRemoteBases renders a kustomization whose base is a remote git
// repository: without the fetched copy the render asks for it (an
// *Unavailable naming the entry); with it, the copy is built with the same
// restrictions as the checkout.
func TestRemoteBases(t *testing.T) {
	const spec = "https://git.example.com/org/platform//deploy/base?ref=v1"
	const nested = "https://git.example.com/org/other//x?ref=v2"
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml": kustHeader + "namePrefix: shop-\nresources:\n  - " + spec + "\n  - cm.yaml\n",
		"app/cm.yaml":            cm,
	})
	fetched := writeTree(t, map[string]string{
		"deploy/base/kustomization.yaml":   kustHeader + "resources:\n  - sts.yaml\n  - ../common\n",
		"deploy/base/sts.yaml":             "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n",
		"deploy/common/kustomization.yaml": kustHeader + "configMapGenerator:\n  - name: settings\n    literals: [a=b]\n",
		"deploy/escape/kustomization.yaml": kustHeader + "resources:\n  - ../../../outside.yaml\n",
		"deploy/nested/kustomization.yaml": kustHeader + "resources:\n  - " + nested + "\n",
		"deploy/helm/kustomization.yaml":   kustHeader + "helmCharts:\n  - name: x\n",
	})
	ctx := context.Background()

	opts := render.DefaultOptions()
	_, err := render.Render(ctx, root, "app", opts)
	got, ok := render.RemoteNeeded(err)
	var re *render.Error
	if !ok || got != spec || !errors.As(err, &re) || re.File != "app/kustomization.yaml" || re.Line != 5 {
		t.Fatalf("without the copy: %v (remote %q)", err, got)
	}
	if _, ok := render.IsUnavailable(err); !ok {
		t.Fatalf("not *Unavailable: %v", err)
	}

	base := func(p string) map[string]render.RemoteBase {
		return map[string]render.RemoteBase{spec: {Root: fetched, Path: p, Revision: strings.Repeat("ab", 20)}}
	}
	opts.Kustomize.RemoteBases = base("deploy/base")
	set, err := render.Render(ctx, root, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range set.Objects {
		names = append(names, o.Key.Kind+"/"+o.Key.Name)
	}
	want := "ConfigMap/shop-cm ConfigMap/shop-settings-" // then the hash
	if s := strings.Join(names, " "); !strings.HasPrefix(s, want) || !strings.HasSuffix(s, "StatefulSet/shop-db") {
		t.Errorf("objects: %s", s)
	}

	for _, tc := range []struct{ path, want string }{
		// The copy is its own root: nothing outside it is read.
		{"deploy/escape", "https://git.example.com/org/platform@abababababab//deploy/escape/kustomization.yaml:4: path \"../../../outside.yaml\" leads outside the repository"},
		{"deploy/helm", "https://git.example.com/org/platform@abababababab//deploy/helm/kustomization.yaml:4: helmCharts x: no repo specified for pull, no chart found at https://git.example.com/org/platform@abababababab//deploy/helm/charts/x"},
	} {
		opts.Kustomize.RemoteBases = base(tc.path)
		_, err := render.Render(ctx, root, "app", opts)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), outsideMarker) {
			t.Errorf("%s: %v\nwant %s…", tc.path, err, tc.want)
		}
	}
	// A remote base inside the remote base is asked for in turn.
	opts.Kustomize.RemoteBases = base("deploy/nested")
	_, err = render.Render(ctx, root, "app", opts)
	if got, ok := render.RemoteNeeded(err); !ok || got != nested {
		t.Errorf("nested: %v", err)
	}
	// A symlink in the copy that leads out of it is refused like one in the checkout.
	if err := os.Symlink(filepath.Join(filepath.Dir(fetched), "outside.yaml"), filepath.Join(fetched, "deploy/base/sts.yaml.link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fetched, "deploy/base/kustomization.yaml"), []byte(kustHeader+"resources:\n  - sts.yaml.link\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Kustomize.RemoteBases = base("deploy/base")
	_, err = render.Render(ctx, root, "app", opts)
	if err == nil || !strings.Contains(err.Error(), "symlink") || strings.Contains(err.Error(), outsideMarker) {
		t.Errorf("symlink: %v", err)
	}
}
