package discover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDiscover scans a monorepo of 200 apps, each a base with three overlays,
// the way the bot does for a PR with no config: once for all targets, once for one
// changed base.
func BenchmarkFromPaths(b *testing.B) {
	dir := b.TempDir()
	for i := range 200 {
		app := fmt.Sprintf("apps/app%03d", i)
		mustWrite(b, filepath.Join(dir, app, "base", "kustomization.yaml"), "resources: [deploy.yaml]\n")
		mustWrite(b, filepath.Join(dir, app, "base", "deploy.yaml"), deployYAML)
		for _, env := range []string{"dev", "staging", "prod"} {
			mustWrite(b, filepath.Join(dir, app, "overlays", env, "kustomization.yaml"), "resources: [../../base]\n")
		}
	}
	for _, bc := range []struct {
		name    string
		changed []string
		want    int
	}{
		{"all", nil, 600},
		{"one-base", []string{"apps/app100/base/deploy.yaml"}, 3},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				got, err := FromPaths(dir, bc.changed, DefaultPathOptions())
				if err != nil || len(got) != bc.want {
					b.Fatalf("FromPaths = %d targets, %v; want %d", len(got), err, bc.want)
				}
			}
		})
	}
}

func mustWrite(b *testing.B, p, content string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		b.Fatal(err)
	}
}
