package preview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

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

// bigAndSmall makes a repository whose tag small is a tree of 3 files and big
// one of 30 files, for checkouts that pass or fail a lowered file limit.
func bigAndSmall(t *testing.T) string {
	t.Helper()
	files := func(n int) fstest.MapFS {
		m := fstest.MapFS{}
		for i := range n {
			m[fmt.Sprintf("apps/d%02d/f.yaml", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%02d, namespace: default}\n", i), Mode: 0o644}
		}
		return m
	}
	dir := t.TempDir()
	if err := gitfixture.Make(dir, gitfixture.Commit{Tag: "small", Tree: files(3)}, gitfixture.Commit{Tag: "big", Tree: files(30)}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckoutBoth: base and head check out at the same time, each into its
// own dir, and the changed files are listed; when one checkout fails, the
// other still ends before the error is returned, and the error names the side
// that failed (base first when both do).
func TestCheckoutBoth(t *testing.T) {
	dir := bigAndSmall(t)
	r := repo{dir: dir}
	ctx := context.Background()
	small, _ := r.resolve(ctx, "small")
	big, _ := r.resolve(ctx, "big")

	tmp := t.TempDir()
	changed, err := r.checkoutBoth(ctx, small, big, filepath.Join(tmp, "base"), filepath.Join(tmp, "head"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"base/apps/d02/f.yaml", "head/apps/d29/f.yaml"} {
		if _, err := os.Stat(filepath.Join(tmp, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "base/apps/d03")); err == nil {
		t.Error("the head's files are in the base checkout")
	}
	if len(changed) != 27 {
		t.Errorf("changed: %d files, want 27: %v", len(changed), changed)
	}

	defer func(n int64) { maxCheckoutFiles = n }(maxCheckoutFiles)
	maxCheckoutFiles = 10
	for _, c := range []struct {
		name, base, head string
		want             string // the short SHA the error names
		done             string // the checkout that completes all the same
	}{
		{"head fails", small, big, short(big), "base/apps/d02/f.yaml"},
		{"base fails", big, small, short(big), "head/apps/d02/f.yaml"},
		{"both fail", big, big, short(big), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			_, err := r.checkoutBoth(ctx, c.base, c.head, filepath.Join(tmp, "base"), filepath.Join(tmp, "head"))
			if err == nil || !strings.Contains(err.Error(), "checking out "+c.want) || !strings.Contains(err.Error(), "more than 10 files") {
				t.Fatalf("got %v, want the file limit for %s", err, c.want)
			}
			if c.done != "" {
				if _, err := os.Stat(filepath.Join(tmp, c.done)); err != nil {
					t.Errorf("the other checkout did not complete before the error was returned: %v", err)
				}
			}
		})
	}
}

// TestRunLeavesNoCheckout: whether the preview succeeds, a checkout fails while
// the other runs, or the run is cancelled during the checkouts (as a signal
// does to the CLI), Run removes both checkouts before it returns.
func TestRunLeavesNoCheckout(t *testing.T) {
	dir := bigAndSmall(t)
	defer func(n int64) { maxCheckoutFiles = n }(maxCheckoutFiles)
	maxCheckoutFiles = 10
	left := func(t *testing.T, tmp string) {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			t.Errorf("left behind in the temp dir: %s", e.Name())
		}
	}
	t.Run("success", func(t *testing.T) {
		// The checkouts are removed once every target is rendered, while
		// the rest of the run goes on: the report is whole all the same.
		maxCheckoutFiles = 50_000
		defer func() { maxCheckoutFiles = 10 }()
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		rep, err := Run(context.Background(), Request{RepoDir: dir, Base: "small", Head: "big", Now: scenarioNow})
		if err != nil {
			t.Fatal(err)
		}
		added := 0
		for _, tr := range rep.Targets {
			added += tr.Summary.Created
		}
		if added != 27 {
			t.Errorf("report: %d objects created in %d targets; want 27", added, len(rep.Targets))
		}
		left(t, tmp)
	})
	t.Run("head fails", func(t *testing.T) {
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		_, err := Run(context.Background(), Request{RepoDir: dir, Base: "small", Head: "big", Now: scenarioNow})
		if err == nil || !strings.Contains(err.Error(), "more than 10 files") {
			t.Fatalf("got %v, want the file limit", err)
		}
		left(t, tmp)
	})
	t.Run("cancelled", func(t *testing.T) {
		maxCheckoutFiles = 50_000
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Cancel once a checkout has begun.
			for ctx.Err() == nil {
				if m, _ := filepath.Glob(filepath.Join(tmp, "driftpreview-*", "*")); len(m) > 0 {
					cancel()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if _, err := Run(ctx, Request{RepoDir: dir, Base: "small", Head: "big", Now: scenarioNow}); err == nil {
			t.Fatal("a cancelled run returned a report")
		}
		left(t, tmp)
	})
}
