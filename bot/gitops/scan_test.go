package gitops

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestScanRepoOrder: scanRepo parses files on several goroutines and gives
// what one goroutine gives, in the walk's order: manifests, charts and notes
// (a file over the size limit, a broken GitOps file, duplicate keys) alike
// with GOMAXPROCS 1 and 4, and the order of the files' names.
func TestScanRepoOrder(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		write(fmt.Sprintf("apps/a%02d/ks.yaml", i), fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: a%02d\n  namespace: flux-system\nspec:\n  path: ./apps/a%02d\n", i, i))
		switch i % 10 {
		case 3:
			write(fmt.Sprintf("apps/a%02d/broken.yaml", i), "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: [\n")
		case 5:
			write(fmt.Sprintf("apps/a%02d/dup.yaml", i), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  name: e\n")
		case 7:
			write(fmt.Sprintf("apps/a%02d/big.yaml", i), "x: \""+strings.Repeat("y", maxScanBytes)+"\"\n")
		}
	}
	write("charts/app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 0.1.0\n")
	write("charts/app/templates/app.yaml", "apiVersion: argoproj.io/v1alpha1\nkind: Application\n")
	scan := func(procs int) ([]*manifest, []string, []string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		found, charts, notes, err := scanRepo(root, nil)
		if err != nil {
			t.Fatal(err)
		}
		return found, charts, notes
	}
	f1, c1, n1 := scan(1)
	f4, c4, n4 := scan(4)
	if len(f1) != 40+4 || len(n1) < 8 || len(c1) != 1 {
		t.Fatalf("one goroutine found %d manifests, %d notes, charts %v; want 44 (40 Kustomizations, 4 ConfigMaps), a note per big and broken file, one chart", len(f1), len(n1), c1)
	}
	if !reflect.DeepEqual(f1, f4) || !reflect.DeepEqual(c1, c4) || !reflect.DeepEqual(n1, n4) {
		t.Errorf("GOMAXPROCS 4 found otherwise than 1:\nnotes %q\nwant  %q", n4, n1)
	}
	for i := 1; i < len(f4); i++ {
		if f4[i].File < f4[i-1].File {
			t.Errorf("manifest of %s after one of %s: not in the walk's order", f4[i].File, f4[i-1].File)
		}
	}
	for i := 1; i < len(n4); i++ {
		if n4[i] < n4[i-1] {
			t.Errorf("note %q after %q: not in the walk's order", n4[i], n4[i-1])
		}
	}
}
