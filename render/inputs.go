package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Inputs are the files a render of one target reads, found statically (without
// rendering): what a pull request must touch to change the render. Paths are
// relative to the checkout root, slash-separated.
type Inputs struct {
	// Files are single files. A file listed here need not exist: a kustomization
	// that names a missing file depends on it all the same.
	Files []string
	// Dirs are whole directory trees: any file under them counts.
	Dirs []string
	// Unknown, when set, says why the inputs could not be told (a remote base, a
	// symlink, a field the walker does not know): the render may depend on any
	// file, so the target counts as touched by every change.
	Unknown string
	// Resources are the Files whose objects the render emits as they are
	// (a kustomization's resources, the YAML files of a generated
	// kustomization), as opposed to patches and generator inputs.
	Resources []string `json:",omitempty"`
	// Remote is true when the render also reads what Options.Remote fetches (a
	// remote chart, unvendored chart dependencies): no change in the checkout
	// changes that, but the same files may render differently another day, so
	// such a render is not shared by content.
	Remote bool
}

// Touched returns the first of changed (paths relative to the checkout root)
// that is one of the inputs, and whether there is one. Inputs that could not
// be told are touched by any change, even by none: such a target is always
// rendered.
func (in Inputs) Touched(changed []string) (string, bool) {
	if in.Unknown != "" {
		return "", true
	}
	for _, c := range changed {
		if slices.Contains(in.Files, c) {
			return c, true
		}
		for _, d := range in.Dirs {
			if d == "." || c == d || strings.HasPrefix(c, d+"/") {
				return c, true
			}
		}
	}
	return "", false
}

// Merge adds other's inputs to in (a target's inputs at base and at head).
func (in Inputs) Merge(other Inputs) Inputs {
	out := Inputs{Files: slices.Clone(in.Files), Dirs: slices.Clone(in.Dirs), Resources: slices.Clone(in.Resources), Unknown: in.Unknown}
	for _, f := range other.Files {
		if !slices.Contains(out.Files, f) {
			out.Files = append(out.Files, f)
		}
	}
	for _, f := range other.Resources {
		if !slices.Contains(out.Resources, f) {
			out.Resources = append(out.Resources, f)
		}
	}
	for _, d := range other.Dirs {
		if !slices.Contains(out.Dirs, d) {
			out.Dirs = append(out.Dirs, d)
		}
	}
	if out.Unknown == "" {
		out.Unknown = other.Unknown
	}
	out.Remote = in.Remote || other.Remote
	return out
}

// FindInputs lists the files the render of target in the checkout root with
// opts reads, the way render does: the kustomizations it follows (resources,
// bases, components, patches, generator files, crds, configurations, openapi,
// replacements), a chart's directory with its values files and its file://
// dependencies, a plain directory, the jsonnet files it imports. It never
// fails: what it cannot follow makes Inputs.Unknown. A target directory
// missing here depends on its whole tree (it is added or removed, so files
// under it change). For many targets of one checkout, an InputFinder looks
// each path up once for all of them.
func FindInputs(root, target string, opts Options) Inputs {
	f := NewInputFinder(root)
	defer f.Close()
	return f.Find(target, opts)
}

// InputFinder finds the inputs of the targets of one checkout (what FindInputs
// finds for each, and ContentKey), looking each path up once for all of them:
// the kind of every path along the way, the kustomization files read and
// parsed, the trees walked, and each target's inputs. It keeps what it saw, so
// it serves one checkout that nothing writes to while it is used (the
// checkouts of one preview run), never a directory that changes: make one per
// checkout and run, and Close it. Safe for concurrent use.
type InputFinder struct {
	absRoot string
	root    *os.Root
	err     error // the checkout could not be opened: every target's inputs are unknown

	// git, when set, keys targets by git's blob ids (NewInputFinderTree).
	git *gitIndex

	// parses, when set, is shared with the finders of other checkouts
	// (ShareParses).
	parses *parseShare

	// unshared, for tests, makes the finder look every path up again, each
	// through os.Root as a walk of one target on its own did.
	unshared bool

	mu    sync.Mutex
	kinds map[string]pathKind
	trees map[string]string // a tree dir walked → why its inputs are unknown ("" when known)
	reads map[readKey]*fileRead
	stats map[string]statResult
	found map[string]Inputs // target and options → its inputs
}

// NewInputFinder opens the checkout root for FindInputs over many targets.
// An error opening it makes every target's inputs unknown.
func NewInputFinder(root string) *InputFinder {
	f := &InputFinder{kinds: map[string]pathKind{}, trees: map[string]string{}, reads: map[readKey]*fileRead{},
		stats: map[string]statResult{}, found: map[string]Inputs{}}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		f.err = err
		return f
	}
	f.absRoot = absRoot
	r, err := os.OpenRoot(absRoot)
	if err != nil {
		f.err = fmt.Errorf("opening checkout %s: %w", absRoot, err)
		return f
	}
	f.root = r
	return f
}

// Close releases the checkout.
func (f *InputFinder) Close() error {
	if f.root == nil {
		return nil
	}
	return f.root.Close()
}

// Find is FindInputs(root, target, opts) for the finder's root. The Inputs
// returned are the caller's to change.
func (f *InputFinder) Find(target string, opts Options) Inputs {
	opts = withDefaults(opts)
	switch {
	case opts.OCI != nil:
		// An OCI artifact or a chart of a Helm repository: nothing in the
		// checkout is read but the values files of a remote chart that are
		// its files (CheckoutPrefix, Argo CD's $ref values), so no other
		// change in it changes the render (what the options name, the
		// controller object, is the caller's to compare). The repository
		// may publish a release a version range resolves to without any file
		// of the checkout changing, but then base and head resolve to it
		// alike; such a render is not shared by content (Remote).
		return Inputs{Remote: true}
	case f.err != nil:
		return Inputs{Unknown: f.err.Error()}
	}
	key := ""
	if o, err := json.Marshal(opts); err == nil && !f.unshared {
		key = target + "\x00" + string(o)
		f.mu.Lock()
		in, ok := f.found[key]
		f.mu.Unlock()
		if ok {
			return in.clone()
		}
	}
	// Read limits do not matter here (nothing is rendered), but a kustomization
	// larger than the render would accept cannot be followed either: the
	// target's own sandbox counts what it reads.
	sb := &sandbox{root: f.root, maxFile: opts.MaxFileBytes, maxTotal: opts.MaxTotalBytes, maxOutput: opts.MaxOutputBytes}
	w := &inputWalker{f: f, sb: sb, seen: map[string]bool{}}
	if t, err := cleanRel(filepath.ToSlash(target)); err != nil {
		w.in = Inputs{Unknown: err.Error()}
	} else if opts.Helm.Chart != nil {
		w.remoteChart(opts)
	} else {
		w.walkTarget(t, opts)
	}
	if key != "" {
		f.mu.Lock()
		f.found[key] = w.in.clone()
		f.mu.Unlock()
	}
	return w.in
}

func (in Inputs) clone() Inputs {
	in.Files, in.Dirs, in.Resources = slices.Clone(in.Files), slices.Clone(in.Dirs), slices.Clone(in.Resources)
	return in
}

// pathKind is what a path is, seen without following a symlink.
type pathKind uint8

const (
	kindMissing pathKind = iota // or unreadable
	kindFile                    // or anything else that is not a directory or a symlink
	kindDir
	kindSymlink
)

// lstat looks rel up without following it. Only kind calls it, for a path
// none of whose parents is a symlink (it looks at each parent first): so a
// plain Lstat stays in the checkout and sees what os.Root would, without
// opening every parent directory again for every path.
func (f *InputFinder) lstat(rel string) pathKind {
	return memo(f, f.kinds, rel, func() pathKind { return f.lstatOnce(rel) })
}

func (f *InputFinder) lstatOnce(rel string) pathKind {
	if f.git != nil && !f.unshared {
		// The checkout is the tree: its paths' kinds without a system call.
		if k, ok := f.git.kind(rel); ok {
			return k
		}
	}
	var fi fs.FileInfo
	var err error
	if f.unshared {
		fi, err = f.root.Lstat(rel)
	} else {
		fi, err = os.Lstat(filepath.Join(f.absRoot, filepath.FromSlash(rel)))
	}
	switch {
	case err != nil:
		return kindMissing
	case fi.Mode()&fs.ModeSymlink != 0:
		return kindSymlink
	case fi.IsDir():
		return kindDir
	}
	return kindFile
}

// memo is m[key], computed (without holding the lock) and kept on a miss,
// except in an unshared finder, which keeps nothing.
func memo[K comparable, V any](f *InputFinder, m map[K]V, key K, compute func() V) V {
	f.mu.Lock()
	v, ok := m[key]
	f.mu.Unlock()
	if ok {
		return v
	}
	v = compute()
	if f.unshared {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev, ok := m[key]; ok {
		return prev // another goroutine computed it meanwhile: one answer for all
	}
	m[key] = v
	return v
}

type statResult struct {
	fi  fs.FileInfo
	err error
}

// stat is the sandbox's stat (following symlinks within the checkout), once
// per path.
func (f *InputFinder) stat(rel string) (fs.FileInfo, error) {
	r := memo(f, f.stats, rel, func() statResult {
		fi, err := (&sandbox{root: f.root}).stat(rel)
		return statResult{fi, err}
	})
	return r.fi, r.err
}

type readKey struct {
	rel     string
	maxFile int64
}

// fileRead is one file read through the sandbox, and its YAML once parsed.
type fileRead struct {
	data []byte
	err  error
	// yamlOf is the file's parse: its own, or one shared with the files of
	// the same blob in other checkouts (ShareParses).
	yamlOf *parsedYAML
}

// parsedYAML is a file's first YAML document's top node, resolved (nil when
// there is none), and whether the file parses as YAML, made once. Its nodes
// are only read.
type parsedYAML struct {
	once   sync.Once
	node   *yaml.Node
	parsed bool
}

// parseShare keeps the parses of the files of a pair of checkouts by git
// blob id (ShareParses).
type parseShare struct {
	mu sync.Mutex
	m  map[string]*parsedYAML
}

func (p *parseShare) of(blob string) *parsedYAML {
	p.mu.Lock()
	defer p.mu.Unlock()
	y := p.m[blob]
	if y == nil {
		y = &parsedYAML{}
		p.m[blob] = y
	}
	return y
}

// ShareParses makes finders of checkouts that only git wrote
// (NewInputFinderTree) parse a file whose blob another of them parsed
// already no more: a pull request's base and head hold nearly all their
// files alike, and their targets' walks parse every kustomization (issue
// 25). A file git wrote as other than its blob's bytes (its tree entry
// left out of the GitTree) is parsed on its own.
func ShareParses(finders ...*InputFinder) {
	share := &parseShare{m: map[string]*parsedYAML{}}
	for _, f := range finders {
		if f.git != nil {
			f.parses = share
		}
	}
}

// read reads rel through the sandbox with the per-file limit maxFile, once
// per path and limit; sb (the target's own) counts the bytes against its
// total, as if it had read them itself.
func (f *InputFinder) read(sb *sandbox, rel string) (*fileRead, error) {
	c, err := cleanRel(rel)
	if err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	r := memo(f, f.reads, readKey{c, sb.maxFile}, func() *fileRead {
		data, err := (&sandbox{root: f.root, maxFile: sb.maxFile}).readFile(c)
		r := &fileRead{data: data, err: err, yamlOf: &parsedYAML{}}
		if e, ok := f.git.entry(c); ok && f.parses != nil && err == nil {
			r.yamlOf = f.parses.of(e.ID)
		}
		return r
	})
	if r.err != nil {
		return nil, r.err
	}
	if err := sb.charge(c, int64(len(r.data))); err != nil {
		return nil, err
	}
	return r, nil
}

// yaml is the file's first YAML document's top node (nil when there is none),
// and whether the file parses.
func (r *fileRead) yaml(file string) (*yaml.Node, bool) {
	y := r.yamlOf
	y.once.Do(func() {
		docs, err := DecodeYAML(r.data, file)
		if err != nil {
			return
		}
		y.parsed = true
		if len(docs) > 0 {
			y.node = resolve(docs[0].Node)
		}
	})
	return y.node, y.parsed
}

type inputWalker struct {
	f    *InputFinder
	sb   *sandbox // the target's: the finder's root, the target's read limits
	in   Inputs
	seen map[string]bool // kustomization directories and files followed
	// target is the target's directory: the one directory without a
	// kustomization that render builds all the same (generated).
	target string
}

func (w *inputWalker) unknown(format string, args ...any) {
	if w.in.Unknown == "" {
		w.in.Unknown = fmt.Sprintf(format, args...)
	}
}

func (w *inputWalker) file(p string) {
	if !slices.Contains(w.in.Files, p) {
		w.in.Files = append(w.in.Files, p)
	}
}

// dir adds the tree under p, which must hold no symlink: a file it links to
// would change the render without a change under p.
func (w *inputWalker) dir(p string) {
	if slices.Contains(w.in.Dirs, p) {
		return
	}
	w.in.Dirs = append(w.in.Dirs, p)
	if why := w.f.tree(p); why != "" {
		w.unknown("%s", why)
	}
}

// tree walks the tree under p through the sandbox, once per tree: why its
// files cannot be told (a symlink, an unreadable directory), or "".
func (f *InputFinder) tree(p string) string {
	return memo(f, f.trees, p, func() string { return f.treeOnce(p) })
}

func (f *InputFinder) treeOnce(p string) (why string) {
	_ = fs.WalkDir(f.root.FS(), p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				why = fmt.Sprintf("%s: %v", q, unwrapPath(err))
			}
			return fs.SkipAll
		}
		if d.Type()&fs.ModeSymlink != 0 {
			why = fmt.Sprintf("%s is a symlink", q)
			return fs.SkipAll
		}
		return nil
	})
	return why
}

// kind is what p is: a directory, a file, nothing, or a symlink along the way
// (which makes the inputs unknown).
func (w *inputWalker) kind(p string) (isDir, exists bool) {
	for i := 0; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		q := p[:i]
		switch w.f.lstat(q) {
		case kindMissing:
			return false, false
		case kindSymlink:
			w.unknown("%s is a symlink", q)
			return false, false
		case kindDir:
			if i == len(p) {
				return true, true
			}
		default:
			if i == len(p) {
				return false, true
			}
		}
	}
	return false, false
}

func (w *inputWalker) walkTarget(t string, opts Options) {
	w.target = t
	isDir, exists := w.kind(t)
	if !exists || !isDir {
		w.dir(t)
		return
	}
	renderer := opts.Renderer
	if renderer == RendererAuto {
		renderer = Detect(w.f.stat, t)
	}
	switch renderer {
	case RendererKustomize:
		w.kustomization(t)
		for _, c := range opts.Kustomize.Components {
			c, err := cleanRel(c)
			if err != nil {
				w.unknown("component %q: %v", c, err)
				continue
			}
			w.kustomization(c)
		}
	case RendererHelm:
		w.chart(t)
		for _, v := range opts.Helm.ValuesFiles {
			w.valuesFile(v)
		}
	case RendererPlain:
		w.dir(t)
		if j := opts.Plain.Jsonnet; j != nil {
			w.jsonnet(t, j)
		}
	default:
		w.unknown("renderer %q", renderer)
	}
}

// remoteChart finds what a chart of a Helm repository reads in the
// checkout: its values files that are files of the checkout (CheckoutPrefix).
// Its own values files are the chart's.
func (w *inputWalker) remoteChart(opts Options) {
	w.in.Remote = true
	for _, vf := range opts.Helm.ValuesFiles {
		if rel, ok := strings.CutPrefix(vf, CheckoutPrefix); ok {
			w.valuesFile(rel)
		}
	}
}

// valuesFile records a values file of the checkout, relative to its root.
func (w *inputWalker) valuesFile(rel string) {
	v, err := cleanRel(rel)
	if err != nil {
		w.unknown("values file %q: %v", rel, err)
		return
	}
	w.kind(v) // a symlink makes the inputs unknown
	w.file(v)
}

// kustomizationKeys are the kustomization fields the walker follows or knows
// to hold no path. Any other field (generators, transformers, validators, Helm
// inflation, a field of a later kustomize) makes the inputs unknown.
var kustomizationKeys = map[string]bool{
	"apiVersion": true, "kind": true, "metadata": true,
	"resources": true, "bases": true, "components": true, "crds": true,
	"configurations": true, "openapi": true, "replacements": true,
	"patches": true, "patchesStrategicMerge": true, "patchesJson6902": true,
	"configMapGenerator": true, "secretGenerator": true, "generatorOptions": true,
	"namespace": true, "namePrefix": true, "nameSuffix": true,
	"commonLabels": true, "labels": true, "commonAnnotations": true,
	"images": true, "replicas": true, "vars": true, "sortOptions": true, "buildMetadata": true,
}

// dirKeys are fields whose entries may be kustomization directories.
var dirKeys = map[string]bool{"resources": true, "bases": true, "components": true}

// kustomization follows the kustomization in dir (kustomize's api/krusty
// loader: every path is relative to the kustomization's directory).
func (w *inputWalker) kustomization(dir string) {
	if w.seen[dir] {
		return
	}
	w.seen[dir] = true
	var file string
	for _, n := range kustomizationNames {
		// All names count: adding a second kustomization file changes the build
		// (kustomize refuses it).
		w.file(path.Join(dir, n))
		if isDir, exists := w.kind(path.Join(dir, n)); exists && !isDir && file == "" {
			file = path.Join(dir, n)
		}
	}
	if file == "" && dir == w.target {
		// The target itself: render generates the kustomization Flux
		// generates (generateKustomization).
		w.generated(dir)
		return
	}
	if file == "" {
		// Not a kustomization (kustomize fails on it): any file there counts.
		w.dir(dir)
		return
	}
	r, err := w.f.read(w.sb, file)
	if err != nil {
		w.unknown("%v", err)
		return
	}
	root, ok := r.yaml(file)
	if !ok || root == nil {
		return // kustomize fails on it as well; the file itself is an input
	}
	if root.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key := root.Content[i].Value
		if slices.Contains(helmKeys, key) {
			// helmCharts read only at or below the kustomization (its
			// chart home and values files, helmcharts.go); a chart with a
			// repo is fetched when not vendored there.
			w.dir(dir)
			if bytes.Contains(r.data, []byte("repo")) {
				w.in.Remote = true
			}
			continue
		}
		if !kustomizationKeys[key] {
			w.unknown("%s: field %s is not followed", file, key)
			return
		}
		w.paths(file, dir, key, root.Content[i+1])
	}
}

// generated adds what the kustomization Flux generates for dir, which holds
// none, reads (generateKustomization, after fluxcd/pkg kustomize
// scanManifests): every .yaml and .yml file below dir, and the kustomization
// of every subdirectory that holds one, which the generator names as a
// resource and does not descend into. Those are the inputs, not the whole
// tree: a file under such a subdirectory counts only when its kustomization
// reads it (the Flux Kustomization over a directory of apps is not touched
// by a change to one app's manifests, only by one to what it builds: the
// apps' kustomizations and the files they name). A file added or removed at
// one side is found by walking that side (the pipeline walks both); the
// kustomization names of every directory walked are inputs, so a directory
// that gains one is seen as well. A symlink makes the inputs unknown.
func (w *inputWalker) generated(dir string) {
	_ = fs.WalkDir(w.sb.fsys(), dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case w.in.Unknown != "":
			return fs.SkipAll
		case err != nil:
			if !errors.Is(err, fs.ErrNotExist) {
				w.unknown("%s: %v", p, unwrapPath(err))
			}
			return fs.SkipAll
		case d.Type()&fs.ModeSymlink != 0:
			w.unknown("%s is a symlink", p)
			return fs.SkipAll
		case p == dir:
			return nil
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case d.IsDir():
			for _, n := range kustomizationNames {
				w.file(path.Join(p, n))
			}
			for _, n := range kustomizationNames {
				if isDir, exists := w.kind(path.Join(p, n)); exists && !isDir {
					w.kustomization(p)
					return fs.SkipDir
				}
			}
			return nil
		case d.Type().IsRegular() && hasExt(p, ".yaml", ".yml"):
			w.file(p)
			w.resource(p)
		}
		return nil
	})
}

// resource records that the render emits the objects of file p.
func (w *inputWalker) resource(p string) {
	if !slices.Contains(w.in.Resources, p) {
		w.in.Resources = append(w.in.Resources, p)
	}
}

// paths follows the path-valued strings of one kustomization field, as
// screenPaths finds them.
func (w *inputWalker) paths(file, dir, key string, n *yaml.Node) {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.paths(file, dir, n.Content[i].Value, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			w.paths(file, dir, key, c)
		}
	case yaml.ScalarNode:
		if !pathKeys[key] || n.Value == "" {
			return
		}
		v := n.Value
		if key == "patchesStrategicMerge" && strings.Contains(v, "\n") {
			return // an inline patch
		}
		if key == "files" {
			if _, after, ok := strings.Cut(v, "="); ok {
				v = after
			}
		}
		if strings.Contains(v, "://") || remoteKeys[key] && IsRemote(v, func(p string) bool {
			_, err := w.f.stat(path.Join(dir, p))
			return err == nil
		}) {
			w.unknown("%s: remote %s %q", file, key, v)
			return
		}
		if strings.HasPrefix(v, "/") {
			w.unknown("%s: absolute path %q", file, v)
			return
		}
		p, err := cleanRel(path.Join(dir, v))
		if err != nil {
			w.unknown("%s: %v", file, err)
			return
		}
		isDir, _ := w.kind(p)
		switch {
		case w.in.Unknown != "":
		case isDir && dirKeys[key]:
			w.kustomization(p)
		case isDir:
			w.dir(p)
		default:
			w.file(p) // a missing file is an input all the same
			if key == "resources" || key == "bases" {
				w.resource(p)
			}
		}
	}
}

// chart adds a chart's directory (templates, values.yaml, vendored subcharts
// under charts/) and, recursively, the charts its Chart.yaml names with a
// file:// repository (Helm's downloader resolves those relative to the chart).
func (w *inputWalker) chart(dir string) {
	if w.seen[dir] {
		return
	}
	w.seen[dir] = true
	w.dir(dir)
	r, err := w.f.read(w.sb, path.Join(dir, "Chart.yaml"))
	if err != nil {
		return // helm fails on it; the directory is an input
	}
	data := r.data
	var meta struct {
		Dependencies []struct {
			Name       string `yaml:"name"`
			Repository string `yaml:"repository"`
		} `yaml:"dependencies"`
	}
	if yaml.Unmarshal(data, &meta) != nil {
		return
	}
	for _, d := range meta.Dependencies {
		rel, ok := strings.CutPrefix(d.Repository, "file://")
		if !ok {
			// Vendored under charts/ (in dir), or fetched by version.
			if !w.vendored(dir, d.Name) {
				w.in.Remote = true
			}
			continue
		}
		if strings.HasPrefix(rel, "/") {
			w.unknown("%s/Chart.yaml: absolute dependency path %q", dir, rel)
			continue
		}
		p, err := cleanRel(path.Join(dir, rel))
		if err != nil {
			w.unknown("%s/Chart.yaml: %v", dir, err)
			continue
		}
		w.chart(p)
	}
}

// vendored reports whether the chart in dir holds dependency name under charts/,
// as a directory or an archive.
func (w *inputWalker) vendored(dir, name string) bool {
	if name == "" {
		return false
	}
	if isDir, _ := w.kind(path.Join(dir, "charts", name)); isDir {
		return true
	}
	m, _ := fs.Glob(w.sb.fsys(), path.Join(dir, "charts", name+"-*.tgz"))
	return len(m) > 0
}

// jsonnetImport finds import, importstr and importbin of a string literal.
var (
	jsonnetImport  = regexp.MustCompile(`\bimport(?:str|bin)?\s*(?:'([^'\n]*)'|"([^"\n]*)")`)
	jsonnetImports = regexp.MustCompile(`\bimport(?:str|bin)?\b`)
)

// jsonnet adds the library directories and the files the directory's jsonnet
// imports outside it. An import the walker cannot read (not a plain string
// literal) makes the inputs unknown.
func (w *inputWalker) jsonnet(dir string, j *JsonnetOptions) {
	var libs []string
	for _, l := range j.Libs {
		c, err := cleanRel(l)
		if err != nil {
			w.unknown("jsonnet library %q: %v", l, err)
			return
		}
		libs = append(libs, c)
		w.dir(c)
	}
	var files []string
	_ = fs.WalkDir(w.sb.fsys(), dir, func(q string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && hasExt(q, ".jsonnet", ".libsonnet") {
			files = append(files, q)
		}
		return nil
	})
	for len(files) > 0 && w.in.Unknown == "" {
		f := files[0]
		files = files[1:]
		if w.seen[f] {
			continue
		}
		w.seen[f] = true
		data, err := w.sb.readFile(f)
		if err != nil {
			continue // missing or unreadable: the render fails on it
		}
		found := jsonnetImport.FindAllStringSubmatch(string(data), -1)
		if len(found) != len(jsonnetImports.FindAllString(string(data), -1)) {
			w.unknown("%s: an import the walker cannot follow", f)
			return
		}
		for _, m := range found {
			imp := m[1] + m[2]
			if strings.HasPrefix(imp, "/") {
				w.unknown("%s: absolute import %q", f, imp)
				return
			}
			// go-jsonnet looks next to the importing file first, then in the
			// library paths in order; every candidate counts.
			for i, base := range append([]string{path.Dir(f)}, libs...) {
				p, err := cleanRel(path.Join(base, imp))
				if err != nil && i == 0 {
					w.unknown("%s: %v", f, err)
					return
				}
				if err != nil {
					continue // not found in this library: it cannot leave the checkout
				}
				if p == dir || strings.HasPrefix(p, dir+"/") {
					files = append(files, p)
					continue
				}
				w.file(p)
				if _, exists := w.kind(p); exists && hasExt(p, ".jsonnet", ".libsonnet") {
					files = append(files, p)
				}
			}
		}
	}
}

// ContentKey names what a render of target in root with opts produces: a hash
// of the content and paths of every input file (FindInputs), the options, and
// this program's build (its renderer versions). Two renders with the same key
// give the same objects, whatever checkout they run in. ok is false when the
// inputs cannot be told (Inputs.Unknown) or read: such a render is not shared.
func ContentKey(root, target string, opts Options) (key string, ok bool) {
	f := NewInputFinder(root)
	defer f.Close()
	return f.ContentKey(target, opts)
}

// ContentKey is ContentKey(root, target, opts) for the finder's root, with the
// inputs the finder found (Find). A finder made by NewInputFinderTree names
// the inputs by their blob ids instead of reading them, when the tree lists
// them all.
func (f *InputFinder) ContentKey(target string, opts Options) (key string, ok bool) {
	in := f.Find(target, opts)
	if in.Unknown != "" || in.Remote || f.root == nil {
		return "", false
	}
	r := f.root
	o, err := json.Marshal(withDefaults(opts))
	if err != nil {
		return "", false
	}
	if f.git != nil {
		if key, ok := f.git.gitKey(target, o, in); ok {
			return key, true
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "build %s\ntarget %q\noptions %s\n", buildID(), target, o)
	hashFile := func(p string) bool {
		f, err := r.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(h, "missing %q\n", p)
			return true
		}
		if err != nil {
			return false
		}
		defer f.Close()
		fi, err := f.Stat()
		switch {
		case err != nil:
			return false
		case fi.IsDir():
			return hashDir(r, h, p)
		case !fi.Mode().IsRegular():
			return false
		}
		fmt.Fprintf(h, "file %q %d\n", p, fi.Size())
		_, err = io.Copy(h, f)
		return err == nil
	}
	files := slices.Sorted(slices.Values(in.Files))
	for _, p := range files {
		if !hashFile(p) {
			return "", false
		}
	}
	for _, d := range slices.Sorted(slices.Values(in.Dirs)) {
		if !hashDir(r, h, d) {
			return "", false
		}
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// hashDir hashes the paths and contents of the tree under dir.
func hashDir(r *os.Root, h io.Writer, dir string) bool {
	ok := true
	err := fs.WalkDir(r.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			fmt.Fprintf(h, "missing %q\n", p)
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			fmt.Fprintf(h, "dir %q\n", p)
		case d.Type().IsRegular():
			data, err := fs.ReadFile(r.FS(), p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "file %q %d\n", p, len(data))
			_, _ = h.Write(data)
		default:
			ok = false // a symlink or a device: not hashed, not shared
			return fs.SkipAll
		}
		return nil
	})
	return ok && err == nil
}

// buildID names this program's build: its module versions (kustomize, Helm,
// go-jsonnet among them) and VCS revision, so a cache never mixes renders of
// different renderer versions.
var buildID = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	sum := sha256.Sum256([]byte(bi.String()))
	return hex.EncodeToString(sum[:8])
})
