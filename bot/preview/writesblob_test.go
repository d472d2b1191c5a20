package preview

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestWritesBlobAsGit holds writesBlob to git itself: every file the checkout
// lists with a blob ID must be on disk as the blob's bytes, for contents of
// every line-end kind under each attribute that touches conversion and each
// core.autocrlf and core.eol. The blobs are committed before the attributes
// are set ($GIT_DIR/info/attributes, which the checkout and check-attr read
// as they read .gitattributes), so that they keep their CRLFs. The IDs
// writesBlob keeps where git does not convert are checked too: a rule that
// kept none would pass the first check.
func TestWritesBlobAsGit(t *testing.T) {
	contents := map[string]string{
		"lf.yaml":     "a: 1\nb: 2\n",
		"crlf.yaml":   "a: 1\r\nb: 2\r\n",
		"mixed.yaml":  "a: 1\r\nb: 2\n",
		"nul.yaml":    "a: 1\x00\nb: 2\n",
		"lonecr.yaml": "a: 1\rb: 2\n",
		"ident.yaml":  "id: $Id$\n",
	}
	attrs := []string{"", "text", "-text", "text=auto", "text=input", "text eol=lf", "text eol=crlf", "text=auto eol=lf",
		"text=auto eol=crlf", "eol=lf", "eol=crlf", "crlf", "-crlf", "crlf=input", "binary", "-text eol=crlf",
		"ident", "text=auto eol=lf ident", "filter=upper", "filter=nosuch", "working-tree-encoding=UTF-16",
		// Values check-attr prints as it prints states ("set", "unset"),
		// which git reads as neither.
		"text=unset eol=crlf", "crlf=unset eol=crlf", "text=set eol=crlf", "text=unset", "crlf=unset",
		"filter=unset", "-filter"}
	tree := fstest.MapFS{}
	var rules strings.Builder
	for i, a := range attrs {
		for name, c := range contents {
			tree[fmt.Sprintf("g%02d/%s", i, name)] = &fstest.MapFile{Data: []byte(c), Mode: 0o644}
		}
		if a != "" {
			fmt.Fprintf(&rules, "g%02d/** %s\n", i, a)
		}
	}
	dir := t.TempDir()
	if err := gitfixture.Make(dir, gitfixture.Commit{Tag: "blobs", Tree: tree}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, dir, "config", "filter.upper.smudge", "tr a-z A-Z")
	gitfixture.Git(t, dir, "config", "filter.upper.clean", "cat")
	r := repo{dir: dir, env: gitfixture.Env()}
	ctx := context.Background()
	sha, err := r.resolve(ctx, "blobs")
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	set := func(key, v string) {
		if v == "" {
			_, _ = gitfixture.Run(dir, nil, "config", "--unset", key)
			return
		}
		gitfixture.Git(t, dir, "config", key, v)
	}
	check := func(autocrlf, eol, name string) {
		t.Helper()
		co, err := r.checkoutBoth(ctx, sha, sha, t.TempDir())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		entries := co.baseTree.entries
		if autocrlf == "true" {
			if entries != nil {
				t.Errorf("%s: the tree is listed (%d entries), want none: every text file converts", name, len(entries))
			}
			return
		}
		if len(entries) != len(tree) {
			t.Fatalf("%s: %d entries listed, want %d", name, len(entries), len(tree))
		}
		converted := 0
		for p, e := range entries {
			disk, err := os.ReadFile(filepath.Join(co.baseDir, p))
			if err != nil {
				t.Fatal(err)
			}
			blob := tree[p].Data
			if string(disk) != string(blob) {
				converted++
			}
			if e.ID == "" {
				continue
			}
			kept[fmt.Sprintf("%s %s", name, p)] = true
			if string(disk) != string(blob) {
				var i int
				fmt.Sscanf(p, "g%02d/", &i)
				t.Errorf("%s: %s (%q) keeps its blob ID, but git checked it out as %q, not the blob's %q", name, p, attrs[i], disk, blob)
			}
		}
		if converted == 0 {
			t.Errorf("%s: git converted no file: the attributes were not read", name)
		}
	}
	for _, autocrlf := range []string{"", "false", "input", "true"} {
		for _, eol := range []string{"", "lf", "crlf", "native"} {
			set("core.autocrlf", autocrlf)
			set("core.eol", eol)
			check(autocrlf, eol, fmt.Sprintf("autocrlf=%q eol=%q", autocrlf, eol))
		}
	}
	// A filter driver named "unset": filter=unset runs it, -filter does not,
	// and check-attr prints "unset" for both.
	set("core.autocrlf", "")
	set("core.eol", "")
	gitfixture.Git(t, dir, "config", "filter.unset.smudge", "tr a-z A-Z")
	check("", "", `filter.unset configured`)
	// Where git writes the blob as it is, the ID is kept: the point of
	// writesBlob (a `* text=auto eol=lf` repository is keyed by blob ids).
	for _, want := range []string{
		`autocrlf="" eol="" g07/crlf.yaml`,        // text=auto eol=lf
		`autocrlf="false" eol="crlf" g07/lf.yaml`, // text=auto eol=lf
		`autocrlf="" eol="" g03/lf.yaml`,          // text=auto, core.eol native (LF)
		`autocrlf="input" eol="crlf" g01/lf.yaml`, // text: autocrlf=input writes LF
		`autocrlf="" eol="crlf" g02/lf.yaml`,      // -text
		`autocrlf="false" eol="" g00/crlf.yaml`,   // no attribute, autocrlf false
		`autocrlf="input" eol="crlf" g00/lf.yaml`, // no attribute, autocrlf input
		`autocrlf="" eol="native" g13/mixed.yaml`, // crlf=input
		`autocrlf="" eol="" g09/lf.yaml`,          // eol=lf
	} {
		if !kept[want] {
			t.Errorf("%s: no blob ID kept, although git writes the blob as it is", want)
		}
	}
	for _, never := range []string{`g16/`, `g17/`, `g18/`, `g19/`, `g20/`} { // ident, filters, encoding
		for k := range kept {
			if strings.Contains(k, " "+never) {
				t.Errorf("%s: blob ID kept under %q", k, attrs[map[string]int{"g16/": 16, "g17/": 17, "g18/": 18, "g19/": 19, "g20/": 20}[never]])
			}
		}
	}
}

// TestTextAutoEOLLFKeyedByBlob reproduces the layout of a real home lab whose
// .gitattributes starts `* text=auto eol=lf` (a common repository template):
// its checkout keeps every blob ID, so its targets are keyed by blob ids and
// discovery's memo by the tree, without reading a file.
func TestTextAutoEOLLFKeyedByBlob(t *testing.T) {
	tree := blobKeyTree()
	tree[".gitattributes"] = &fstest.MapFile{Data: []byte("* text=auto eol=lf\n*.md linguist-detectable\n"), Mode: 0o644}
	dir := t.TempDir()
	if err := gitfixture.Make(dir, gitfixture.Commit{Tag: "lf", Tree: tree}); err != nil {
		t.Fatal(err)
	}
	r := repo{dir: dir, env: gitfixture.Env()}
	ctx := context.Background()
	sha, _ := r.resolve(ctx, "lf")
	co, err := r.checkoutBoth(ctx, sha, sha, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(co.baseTree.entries) != len(tree) {
		t.Fatalf("%d entries listed, want %d", len(co.baseTree.entries), len(tree))
	}
	for p, e := range co.baseTree.entries {
		if e.ID == "" {
			t.Errorf("%s has no blob ID under text=auto eol=lf", p)
		}
	}
}
