package preview

import (
	"errors"
	"testing"
	"testing/fstest"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestResolvePair: the one git process that resolves base and head answers as
// resolve does for each (the same SHA, or resolve's error), and tells a
// directory that is not a repository (openRepo's error).
func TestResolvePair(t *testing.T) {
	dir := t.TempDir()
	if err := gitfixture.Make(dir,
		gitfixture.Commit{Tag: "base", Tree: fstest.MapFS{"a.yaml": {Data: []byte("a: 1\n")}}},
		gitfixture.Commit{Tag: "head", Tree: fstest.MapFS{"a.yaml": {Data: []byte("a: 2\n")}}},
	); err != nil {
		t.Fatal(err)
	}
	r := repo{dir: dir}
	head, err := r.resolve(t.Context(), "head")
	if err != nil {
		t.Fatal(err)
	}
	refs := []string{"base", "head", "HEAD", "main", "head~1", head, head[:10], "base^{tree}", "head:a.yaml",
		"nonexist", "", "-x", "base\nhead", "base..head", "main@{0}"}
	for _, b := range refs {
		for _, h := range refs {
			bs, hs, berr, herr, err := r.resolvePair(t.Context(), b, h)
			if err != nil {
				t.Fatalf("resolvePair(%q, %q): %v", b, h, err)
			}
			for _, c := range []struct {
				ref, sha string
				err      error
			}{{b, bs, berr}, {h, hs, herr}} {
				want, wantErr := r.resolve(t.Context(), c.ref)
				if c.sha != want || errText(c.err) != errText(wantErr) {
					t.Errorf("resolvePair(%q, %q) resolves %q to %q, %v; resolve: %q, %v", b, h, c.ref, c.sha, c.err, want, wantErr)
				}
			}
		}
	}
	_, _, _, _, err = repo{dir: t.TempDir()}.resolvePair(t.Context(), "base", "head")
	if !errors.Is(err, errNoRepo) {
		t.Errorf("resolvePair outside a repository: %v, want %v", err, errNoRepo)
	}
	if _, err := openRepo(t.Context(), t.TempDir(), nil); errText(err) == "" {
		t.Fatal("openRepo outside a repository: no error")
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
