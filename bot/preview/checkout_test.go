package preview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git in dir with stdin, failing the test on error.
func gitIn(t *testing.T, dir string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// nestedCommit makes a commit whose tree holds blob under fanout^2 paths
// (fanout directories of fanout files), built with git's plumbing so that only
// the blob itself is ever written.
func nestedCommit(t *testing.T, dir string, blob []byte, fanout int) string {
	t.Helper()
	b := gitIn(t, dir, blob, "hash-object", "-w", "--stdin")
	var leaf strings.Builder
	for i := range fanout {
		fmt.Fprintf(&leaf, "100644 blob %s\tf%05d.yaml\n", b, i)
	}
	sub := gitIn(t, dir, []byte(leaf.String()), "mktree")
	var top strings.Builder
	for i := range fanout {
		fmt.Fprintf(&top, "040000 tree %s\td%05d\n", sub, i)
	}
	tree := gitIn(t, dir, []byte(top.String()), "mktree")
	return gitIn(t, dir, nil, "commit-tree", tree, "-m", "bomb")
}

// TestCheckoutRefusesTreeBombs checks out commits that compress to almost
// nothing but expand past the checkout limits: a 10 MiB blob under 36 paths
// (360 MiB) and an empty file under 62,500 paths. Each is refused before a file
// is written, with an error naming the limit.
func TestCheckoutRefusesTreeBombs(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, nil, "init", "-q", "--bare")
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
