package preview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// nestedCommit makes a commit whose tree holds blob under fanout^2 paths
// (fanout directories of fanout files), built with git's plumbing so that only
// the blob itself is ever written.
func nestedCommit(t *testing.T, dir string, blob []byte, fanout int) string {
	t.Helper()
	b := gitfixture.GitStdin(t, dir, blob, "hash-object", "-w", "--stdin")
	var leaf strings.Builder
	for i := range fanout {
		fmt.Fprintf(&leaf, "100644 blob %s\tf%05d.yaml\n", b, i)
	}
	sub := gitfixture.GitStdin(t, dir, []byte(leaf.String()), "mktree")
	var top strings.Builder
	for i := range fanout {
		fmt.Fprintf(&top, "040000 tree %s\td%05d\n", sub, i)
	}
	tree := gitfixture.GitStdin(t, dir, []byte(top.String()), "mktree")
	return gitfixture.Git(t, dir, "commit-tree", tree, "-m", "bomb")
}

// TestCheckoutRefusesTreeBombs checks out commits that compress to almost
// nothing but expand past the checkout limits: a 10 MiB blob under 36 paths
// (360 MiB) and an empty file under 62,500 paths. Each is refused before a file
// is written, with an error naming the limit.
func TestCheckoutRefusesTreeBombs(t *testing.T) {
	dir := t.TempDir()
	gitfixture.Git(t, dir, "init", "-q", "--bare")
	cases := []struct {
		name   string
		commit string
		want   string
	}{
		{"bytes", nestedCommit(t, dir, bytes.Repeat([]byte("x"), 10<<20), 6), "over the 256 MiB limit"},
		{"files", nestedCommit(t, dir, nil, 250), "more than 50000 files"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			err := repo{dir: dir}.checkout(context.Background(), c.commit, out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkout: got %v, want an error with %q", err, c.want)
			}
			t.Logf("error: %v", err)
			var written int64
			_ = filepath.Walk(out, func(_ string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					written += fi.Size()
				}
				return nil
			})
			if written > 0 {
				t.Errorf("%d bytes were written before the refusal", written)
			}
		})
	}
	// A tree within the limits checks out.
	ok := nestedCommit(t, dir, []byte("a: 1\n"), 3)
	out := t.TempDir()
	if err := (repo{dir: dir}).checkout(context.Background(), ok, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "d00002", "f00002.yaml")); err != nil {
		t.Error(err)
	}
}
