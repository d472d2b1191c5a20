package gitops

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/render"
)

// fixtureRepo copies fixtures/repos/<name> into a new git repository with the given
// origin and one commit, as a user's checkout would be.
func fixtureRepo(t testing.TB, name, origin string) string {
	t.Helper()
	src := filepath.Join("..", "..", "fixtures", "repos", name)
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying fixture %s: %v", name, err)
	}
	gitfixture.Git(t, dst, "init", "-q", "-b", "main")
	gitfixture.Git(t, dst, "remote", "add", "origin", origin)
	gitfixture.Git(t, dst, "add", "-A")
	gitfixture.Git(t, dst, "commit", "-q", "-m", "fixture")
	return dst
}

// editFiles replaces, in each file under root, the first old text with the new
// one; an old text that is missing fails the test, so a fixture change cannot
// turn a test into a no-op.
func editFiles(t testing.TB, root string, edits map[string][2]string) {
	t.Helper()
	for file, e := range edits {
		p := filepath.Join(root, filepath.FromSlash(file))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), e[0]) {
			t.Fatalf("editing %s: %q is not in the file", file, e[0])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// realRenderer is what the pipeline passes: the real render package.
func realRenderer(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
	return render.Render(ctx, root, t.Path, t.Render)
}

// writeFiles creates a small repository from path → content.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
