package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"sort"
	"strings"
	"sync"
)

// GitFile is what git's tree lists for one path of a checkout (`git ls-tree
// -r`): its mode (100644, 100755 a file, 120000 a symlink, 160000 a
// submodule) and its object id, a hash of its content.
type GitFile struct {
	Mode string
	ID   string
}

// regular reports whether the entry is a file git writes as its blob's bytes.
func (g GitFile) regular() bool { return g.ID != "" && (g.Mode == "100644" || g.Mode == "100755") }

// GitTree is a checkout's tree as git lists it: slash-separated path → entry,
// every path of the tree. A path whose checkout is not its blob's bytes (git
// converts it: .gitattributes eol, filters) has an empty ID: a target with
// such an input is keyed by reading its files.
type GitTree map[string]GitFile

// NewInputFinderTree is NewInputFinder for a checkout of tree that nothing
// but git wrote: ContentKey names each input by its path, mode and blob id
// from tree instead of reading and hashing the file, for every target all of
// whose inputs tree lists as files (or, for a path it lists nothing at or
// under, as missing). tree must list every path of the checkout; one with
// an ID must be on disk as the blob's bytes. Other targets are keyed as
// ContentKey does, as are all with a nil tree.
func NewInputFinderTree(root string, tree GitTree) *InputFinder {
	f := NewInputFinder(root)
	if tree != nil {
		f.git = &gitIndex{tree: tree}
	}
	return f
}

// gitIndex is a GitTree with its paths sorted (for the files under a
// directory) and its directories, made on first use.
type gitIndex struct {
	tree  GitTree
	once  sync.Once
	paths []string
	dirs  map[string]bool
}

// entry is rel's tree entry when git wrote it as its blob's bytes (a regular
// file the tree lists); g may be nil.
func (g *gitIndex) entry(rel string) (GitFile, bool) {
	if g == nil {
		return GitFile{}, false
	}
	e, ok := g.tree[rel]
	return e, ok && e.regular()
}

func (g *gitIndex) index() {
	g.once.Do(func() {
		g.paths = make([]string, 0, len(g.tree))
		g.dirs = map[string]bool{}
		for p := range g.tree {
			g.paths = append(g.paths, p)
			for d := p; ; {
				i := strings.LastIndexByte(d, '/')
				if i < 0 {
					break
				}
				d = d[:i]
				if g.dirs[d] {
					break
				}
				g.dirs[d] = true
			}
		}
		slices.Sort(g.paths)
	})
}

// kind is what is at rel in a checkout of the tree, seen without following a
// symlink; ok is false for a submodule (what git leaves there is not the
// tree's to tell).
func (g *gitIndex) kind(rel string) (k pathKind, ok bool) {
	g.index()
	if rel == "" || rel == "." {
		return kindDir, true
	}
	e, listed := g.tree[rel]
	switch {
	case listed && e.Mode == "120000":
		return kindSymlink, true
	case listed && e.Mode == "160000":
		return 0, false
	case listed:
		return kindFile, true
	case g.dirs[rel]:
		return kindDir, true
	case g.under(rel):
		return 0, false
	}
	return kindMissing, true
}

// under reports whether a parent of p is in the tree as a file, a symlink or
// a submodule: what is at p then is not the tree's to tell.
func (g *gitIndex) under(p string) bool {
	for d := p; ; {
		i := strings.LastIndexByte(d, '/')
		if i < 0 {
			return false
		}
		d = d[:i]
		if _, ok := g.tree[d]; ok {
			return true
		}
	}
}

// gitKey is the content key from the tree: ok is false when an input is not a
// file the tree lists (a symlink, a submodule, a directory named as a file, a
// path the tree left out), and the caller reads the files instead. The key's
// header differs from the one of read keys, so the two never meet.
func (g *gitIndex) gitKey(target string, opts []byte, in Inputs) (string, bool) {
	g.index()
	h := sha256.New()
	fmt.Fprintf(h, "build %s\nkeys git blob ids\ntarget %q\noptions %s\n", buildID(), target, opts)
	for _, p := range slices.Sorted(slices.Values(in.Files)) {
		e, ok := g.tree[p]
		switch {
		case ok && e.regular():
			gitFileLine(h, p, e)
		case ok, g.dirs[p], p == ".", g.under(p):
			return "", false
		default:
			fmt.Fprintf(h, "missing %q\n", p)
		}
	}
	for _, d := range slices.Sorted(slices.Values(in.Dirs)) {
		if _, ok := g.tree[d]; ok || g.under(d) {
			return "", false
		}
		if d != "." && !g.dirs[d] {
			fmt.Fprintf(h, "missing %q\n", d)
			continue
		}
		fmt.Fprintf(h, "dir %q\n", d)
		prefix := d + "/"
		i := sort.SearchStrings(g.paths, prefix)
		if d == "." {
			prefix, i = "", 0
		}
		for ; i < len(g.paths) && strings.HasPrefix(g.paths[i], prefix); i++ {
			e := g.tree[g.paths[i]]
			if !e.regular() {
				return "", false // a symlink or a submodule: as ContentKey, not shared
			}
			gitFileLine(h, g.paths[i], e)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

func gitFileLine(h hash.Hash, p string, e GitFile) {
	fmt.Fprintf(h, "file %q %s %s\n", p, e.Mode, e.ID)
}
