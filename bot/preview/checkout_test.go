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
// own dir under a new temp dir of the parent given, and the changed files are
// listed; when a tree is over the limits, nothing is written and the error
// names the side that failed (base first when both do).
func TestCheckoutBoth(t *testing.T) {
	dir := bigAndSmall(t)
	r := repo{dir: dir}
	ctx := context.Background()
	small, _ := r.resolve(ctx, "small")
	big, _ := r.resolve(ctx, "big")

	parent := t.TempDir()
	co, err := r.checkoutBoth(ctx, small, big, parent)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(co.tmp) != parent || co.baseDir != filepath.Join(co.tmp, "base") || co.headDir != filepath.Join(co.tmp, "head") {
		t.Errorf("checkouts in %s, %s (temp dir %s); want base and head under a temp dir of %s", co.baseDir, co.headDir, co.tmp, parent)
	}
	for _, f := range []string{"base/apps/d02/f.yaml", "head/apps/d29/f.yaml"} {
		if _, err := os.Stat(filepath.Join(co.tmp, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(co.tmp, "base/apps/d03")); err == nil {
		t.Error("the head's files are in the base checkout")
	}
	if len(co.changed) != 27 {
		t.Errorf("changed: %d files, want 27: %v", len(co.changed), co.changed)
	}
	if co.baseTree.files != 3 || co.headTree.files != 30 || co.baseTree.bytes == 0 {
		t.Errorf("trees: base %+v, head %+v; want 3 and 30 files", co.baseTree, co.headTree)
	}
	// The blobs of both are sized at once (they share 3): each side's bytes
	// are its own, as sizing it alone tells.
	for _, c := range []struct {
		sha string
		got tree
	}{{small, co.baseTree}, {big, co.headTree}} {
		alone, err := r.checkTreeSize(ctx, c.sha)
		if err != nil || alone.bytes != c.got.bytes || alone.bytes == 0 {
			t.Errorf("%s: %d bytes checked out with the other side, %d (%v) alone", short(c.sha), c.got.bytes, alone.bytes, err)
		}
	}
	defer func(n int64) { maxCheckoutBytes = n }(maxCheckoutBytes)
	maxCheckoutBytes = co.baseTree.bytes
	if _, err := r.checkoutBoth(ctx, small, big, t.TempDir()); err == nil || !strings.Contains(err.Error(), "checking out "+short(big)) || !strings.Contains(err.Error(), "MiB limit per checkout") {
		t.Errorf("head over the byte limit: got %v, want the byte limit for %s", err, short(big))
	}
	maxCheckoutBytes = co.headTree.bytes

	defer func(n int64) { maxCheckoutFiles = n }(maxCheckoutFiles)
	maxCheckoutFiles = 10
	for _, c := range []struct {
		name, base, head string
		want             string // the short SHA the error names
	}{
		{"head fails", small, big, short(big)},
		{"base fails", big, small, short(big)},
		{"both fail", big, big, short(big)},
	} {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			co, err := r.checkoutBoth(ctx, c.base, c.head, parent)
			if err == nil || !strings.Contains(err.Error(), "checking out "+c.want) || !strings.Contains(err.Error(), "more than 10 files") {
				t.Fatalf("got %v, want the file limit for %s", err, c.want)
			}
			if entries, _ := os.ReadDir(parent); co.tmp != "" || len(entries) > 0 {
				t.Errorf("a checkout was made (%q, %d entries) though a tree is over the limits", co.tmp, len(entries))
			}
		})
	}
}

// TestRunLeavesNoCheckout: whether the preview succeeds, a checkout fails while
// the other runs, or the run is cancelled during the checkouts (as a signal
// does to the CLI), Run removes both checkouts before it returns, and leaves
// nothing in either place checkouts go: a tmpfs with room (shmDir), or the
// temp dir.
func TestRunLeavesNoCheckout(t *testing.T) {
	dir := bigAndSmall(t)
	defer func(n int64) { maxCheckoutFiles = n }(maxCheckoutFiles)
	defer func(d string, f func(string) (int64, bool)) { shmDir, tmpfsFree = d, f }(shmDir, tmpfsFree)
	for _, onTmpfs := range []bool{true, false} {
		name := "TMPDIR"
		if onTmpfs {
			name = "tmpfs"
		}
		t.Run(name, func(t *testing.T) {
			runLeavesNoCheckout(t, dir, onTmpfs)
		})
	}
}

func runLeavesNoCheckout(t *testing.T, dir string, onTmpfs bool) {
	maxCheckoutFiles = 10
	// places sets up a fresh shmDir and TMPDIR and returns the one the
	// checkouts go to, and both.
	places := func(t *testing.T) (string, []string) {
		shm, tmp := t.TempDir(), t.TempDir()
		shmDir = shm
		tmpfsFree = func(d string) (int64, bool) { return 1 << 40, onTmpfs && d == shm }
		t.Setenv("TMPDIR", tmp)
		if onTmpfs {
			return shm, []string{shm, tmp}
		}
		return tmp, []string{shm, tmp}
	}
	left := func(t *testing.T, dirs []string) {
		t.Helper()
		for _, d := range dirs {
			entries, err := os.ReadDir(d)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("left behind in %s: %s", d, e.Name())
			}
		}
	}
	t.Run("success", func(t *testing.T) {
		// The checkouts are removed once every target is rendered, while
		// the rest of the run goes on: the report is whole all the same.
		maxCheckoutFiles = 50_000
		defer func() { maxCheckoutFiles = 10 }()
		_, all := places(t)
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
		left(t, all)
	})
	t.Run("head fails", func(t *testing.T) {
		_, all := places(t)
		_, err := Run(context.Background(), Request{RepoDir: dir, Base: "small", Head: "big", Now: scenarioNow})
		if err == nil || !strings.Contains(err.Error(), "more than 10 files") {
			t.Fatalf("got %v, want the file limit", err)
		}
		left(t, all)
	})
	t.Run("cancelled", func(t *testing.T) {
		maxCheckoutFiles = 50_000
		defer func() { maxCheckoutFiles = 10 }()
		at, all := places(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			// Cancel once a checkout has begun where it should be.
			for ctx.Err() == nil {
				if m, _ := filepath.Glob(filepath.Join(at, "driftpreview-*", "*")); len(m) > 0 {
					cancel()
					return
				}
				time.Sleep(time.Millisecond)
			}
		}()
		if _, err := Run(ctx, Request{RepoDir: dir, Base: "small", Head: "big", Now: scenarioNow}); err == nil {
			t.Fatal("a cancelled run returned a report")
		}
		left(t, all)
	})
}

// TestCheckoutParent: the checkouts go where they are told to (--checkout-dir,
// serve's checkoutDir) whatever the tmpfs; else to shmDir when it is a tmpfs
// with room for them four times over; else to the temp dir. A tmpfs that
// cannot be written to falls back to the temp dir.
func TestCheckoutParent(t *testing.T) {
	defer func(d string, f func(string) (int64, bool)) { shmDir, tmpfsFree = d, f }(shmDir, tmpfsFree)
	shm, tmp, explicit := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	shmDir = shm
	const need = 10 << 20
	for _, c := range []struct {
		name     string
		explicit string
		free     int64
		tmpfs    bool
		want     string
	}{
		{"tmpfs with room", "", 4 * need, true, shm},
		{"tmpfs without room", "", 4*need - 1, true, tmp},
		{"tmpfs full", "", 0, true, tmp},
		{"not a tmpfs", "", 1 << 40, false, tmp},
		{"explicit over a tmpfs with room", explicit, 1 << 40, true, explicit},
		{"explicit over the temp dir", explicit, 0, false, explicit},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmpfsFree = func(d string) (int64, bool) {
				if d != shm {
					t.Errorf("statfs of %s, want %s", d, shm)
				}
				return c.free, c.tmpfs
			}
			if got := checkoutParent(c.explicit, need); got != c.want {
				t.Errorf("checkoutParent: %s, want %s", got, c.want)
			}
			d, err := makeCheckoutDir(c.explicit, need)
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(d)
			if filepath.Dir(d) != c.want {
				t.Errorf("makeCheckoutDir: %s, want a dir under %s", d, c.want)
			}
		})
	}
	t.Run("tmpfs not writable", func(t *testing.T) {
		// A file where the tmpfs should be: making a dir there fails.
		shmDir = filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(shmDir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		tmpfsFree = func(string) (int64, bool) { return 1 << 40, true }
		d, err := makeCheckoutDir("", need)
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
		if filepath.Dir(d) != tmp {
			t.Errorf("makeCheckoutDir: %s, want a dir under %s", d, tmp)
		}
	})
	t.Run("explicit not writable", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if d, err := makeCheckoutDir(f, need); err == nil {
			os.Remove(d)
			t.Fatalf("makeCheckoutDir(%s): %s, want an error", f, d)
		}
	})
}
