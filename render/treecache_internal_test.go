package render

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTreeCacheAnswersAsOSRoot compares the cache's Stat and Lstat, which
// look a file up in its directory opened on its own, with os.Root's over
// files, directories, missing files (in directories that exist and not),
// symlinks within the checkout and out of it: the same FileInfo (name, mode,
// size, time) and the same errors, error values included.
func TestTreeCacheAnswersAsOSRoot(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/b/f.yaml", "c/g.yaml", "top.yaml", "../outside.yaml"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x: 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"a/in.yaml": "b/f.yaml", "a/up.yaml": "../c/g.yaml", "a/out.yaml": "../../outside.yaml",
		"a/bd": "b", "c/dangling": "nothere", "dl": "a/b", "a/abs": "/etc/passwd"} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"a/b/f.yaml", "c/g.yaml", "top.yaml", "a", "a/b", "a/b/", "a/in.yaml", "a/up.yaml", "a/out.yaml", "a/bd",
		"a/bd/f.yaml", "dl/f.yaml", "c/dangling", "a/abs", "a/missing.yaml", "a/b/missing", "nodir/x.yaml", "a/b/f.yaml/x",
		"nodir/deeper/x", "a/../c/g.yaml", "../outside.yaml", "a/./b/f.yaml", "dl/../top.yaml", "."}
	ref, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	dropCheckouts()
	t.Cleanup(dropCheckouts)
	c, err := openCached(NewCheckoutID(), root, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.release()
	type answer struct {
		Name  string
		Mode  os.FileMode
		Size  int64
		Time  int64
		Err   error
		Valid bool
	}
	of := func(fi os.FileInfo, err error) answer {
		if err != nil {
			return answer{Err: err}
		}
		return answer{Name: fi.Name(), Mode: fi.Mode(), Size: fi.Size(), Time: fi.ModTime().UnixNano(), Valid: true}
	}
	// Files and missing files in directories that exist are looked up in
	// their directory, without a walk from the root.
	before := rootWalks.Load()
	for _, n := range []string{"a/b/f.yaml", "c/g.yaml", "a/missing.yaml", "a/b/missing", "a/bd/f.yaml"} {
		_, _ = c.stat(n)
		_, _ = c.lstat(n)
	}
	if n := rootWalks.Load() - before; n != 0 {
		t.Errorf("%d walks from the root for files in directories, want 0", n)
	}
	for range 2 { // the kernel's answers, then the kept ones
		for _, n := range names {
			if got, want := of(c.stat(n)), of(ref.Stat(n)); !reflect.DeepEqual(got, want) {
				t.Errorf("Stat(%q) = %+v, want %+v", n, got, want)
			}
			if got, want := of(c.lstat(n)), of(ref.Lstat(n)); !reflect.DeepEqual(got, want) {
				t.Errorf("Lstat(%q) = %+v, want %+v", n, got, want)
			}
		}
	}
}
