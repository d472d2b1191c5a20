package render

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// The virtual layout kustomize sees: the checkout is mounted at checkoutMount, and
// the generated wrapper kustomization lives beside it in wrapperDir, so the target
// (even the checkout root itself) is never an ancestor of the wrapper.
const (
	checkoutMount = "/checkout"
	wrapperDir    = "/driftpreview-wrapper"
)

// kfs is a read-only kyaml filesys.FileSystem over the sandbox, plus the in-memory
// wrapper kustomization. It also screens every kustomization file it serves for
// what driftpreview forbids (remote bases, exec and KRM functions, helmCharts,
// paths leaving the checkout), recording the first violation with file and line so
// the render error can name it precisely.
type kfs struct {
	sb      *sandbox
	overlay map[string][]byte // virtual path → content, under wrapperDir or a helmChartsDir
	// overlayDirs are the virtual directories of overlay files beside
	// checkout files (helmChartsDir components).
	overlayDirs map[string]bool
	// helm inflates helmCharts (helmcharts.go).
	helm *helmKustomize
	// marks, when set, marks the documents of resource files with their
	// source (markers.go).
	marks *sourceMarks
	// mounts are the fetched remote bases: virtual top directory ("/remote-0")
	// → its sandbox; remoteDirs maps each remote entry, as kustomizations write
	// it, to the virtual directory it is served at.
	mounts     map[string]*sandbox
	remoteDirs map[string]string

	mu        sync.Mutex
	violation error    // first *Error found while serving files
	kusts     []string // checkout-relative kustomization files served, in order
	syntax    []error  // YAML syntax errors in files served, used if kustomize fails
	notes     []string // deprecation warnings, once per kustomization file
	noted     map[string]bool
}

var _ filesys.FileSystem = (*kfs)(nil)

var errReadOnly = errors.New("the render filesystem is read-only")

func newKFS(sb *sandbox) *kfs {
	return &kfs{sb: sb, overlay: map[string][]byte{}, overlayDirs: map[string]bool{}, mounts: map[string]*sandbox{}, remoteDirs: map[string]string{}}
}

// mountRemotes serves each fetched remote base's repository read-only under
// a virtual top directory of its own, one per checkout.
func (k *kfs) mountRemotes(bases map[string]RemoteBase) error {
	specs := slices.Sorted(maps.Keys(bases))
	roots := map[string]string{} // checkout root → virtual dir
	for _, spec := range specs {
		b := bases[spec]
		v, ok := roots[b.Root]
		if !ok {
			v = fmt.Sprintf("/remote-%d", len(roots))
			name := remoteName(spec, b.Revision)
			msb, err := k.sb.mount(b.Root, name, strings.TrimPrefix(v, "/")+":")
			if err != nil {
				return err
			}
			roots[b.Root] = v
			k.mounts[v] = msb
		}
		p, err := cleanRel(b.Path)
		if err != nil {
			return fmt.Errorf("remote base %s: %w", spec, err)
		}
		k.remoteDirs[spec] = path.Join(v, p)
	}
	return nil
}

// remoteName names a remote base's repository in errors: its URL without the
// query or the path inside it, and the commit fetched.
func remoteName(spec, revision string) string {
	n, _, _ := strings.Cut(spec, "?")
	if i := strings.Index(n, "://"); i >= 0 {
		if j := strings.Index(n[i+3:], "//"); j >= 0 {
			n = n[:i+3+j]
		}
	} else if j := strings.Index(n, "//"); j >= 0 {
		n = n[:j]
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if revision != "" {
		n += "@" + revision
	}
	return n
}

func (k *kfs) closeMounts() {
	for _, m := range k.mounts {
		m.Close()
	}
}

// locate maps a virtual path to the sandbox holding it and the path in it.
func (k *kfs) locate(c string) (*sandbox, string, bool) {
	if r, ok := rel(c); ok {
		return k.sb, r, true
	}
	for v, sb := range k.mounts {
		if c == v {
			return sb, ".", true
		}
		if r, ok := strings.CutPrefix(c, v+"/"); ok {
			return sb, r, true
		}
	}
	return nil, "", false
}

// virtual is the virtual path of r in sandbox sb.
func (k *kfs) virtual(sb *sandbox, r string) string {
	if sb == k.sb {
		return path.Join(checkoutMount, r)
	}
	for v, m := range k.mounts {
		if m == sb {
			return path.Join(v, r)
		}
	}
	return ""
}

func (k *kfs) record(err error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.violation == nil {
		k.violation = err
	}
	return err
}

// rel maps a virtual path to a checkout-relative one; ok is false for paths outside
// the checkout mount (the wrapper or nothing).
func rel(p string) (string, bool) {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	p = path.Clean(p)
	if p == checkoutMount {
		return ".", true
	}
	if r, ok := strings.CutPrefix(p, checkoutMount+"/"); ok {
		return r, true
	}
	return "", false
}

func clean(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

func (k *kfs) Create(string) (filesys.File, error) { return nil, errReadOnly }
func (k *kfs) Mkdir(string) error                  { return errReadOnly }
func (k *kfs) MkdirAll(string) error               { return errReadOnly }
func (k *kfs) RemoveAll(string) error              { return errReadOnly }
func (k *kfs) WriteFile(string, []byte) error      { return errReadOnly }

func (k *kfs) Open(p string) (filesys.File, error) {
	data, err := k.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), name: path.Base(p), size: int64(len(data))}, nil
}

func (k *kfs) stat(p string) (fs.FileInfo, bool) {
	c := clean(p)
	if c == "/" || c == wrapperDir || k.overlayDirs[c] {
		return dirInfo(path.Base(c)), true
	}
	if data, ok := k.overlay[c]; ok {
		return &memFile{name: path.Base(c), size: int64(len(data))}, true
	}
	sb, r, ok := k.locate(c)
	if !ok {
		return nil, false
	}
	fi, err := sb.rootStat(r)
	if err != nil {
		return nil, false
	}
	return fi, true
}

func (k *kfs) IsDir(p string) bool {
	fi, ok := k.stat(p)
	return ok && fi.IsDir()
}

func (k *kfs) Exists(p string) bool {
	_, ok := k.stat(p)
	return ok
}

func (k *kfs) ReadDir(p string) ([]string, error) {
	c := clean(p)
	switch c {
	case "/":
		names := []string{path.Base(checkoutMount), path.Base(wrapperDir)}
		for v := range k.mounts {
			names = append(names, path.Base(v))
		}
		return names, nil
	case wrapperDir:
		var names []string
		for f := range k.overlay {
			if path.Dir(f) == wrapperDir {
				names = append(names, path.Base(f))
			}
		}
		return names, nil
	}
	if k.overlayDirs[c] {
		var names []string
		for f := range k.overlay {
			if path.Dir(f) == c {
				names = append(names, path.Base(f))
			}
		}
		slices.Sort(names)
		return names, nil
	}
	sb, r, ok := k.locate(c)
	if !ok {
		return nil, notExist(p)
	}
	ents, err := fs.ReadDir(sb.fsys(), r)
	if err != nil {
		return nil, sb.explain(r, err)
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

func (k *kfs) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	c := clean(p)
	fi, ok := k.stat(c)
	if !ok {
		if sb, r, in := k.locate(c); in {
			// Say why, when a symlink is the reason.
			if _, err := sb.rootLstat(r); err == nil {
				_, serr := sb.rootStat(r)
				return "", "", k.record(sb.explain(r, serr))
			}
		}
		return "", "", notExist(p)
	}
	if fi.IsDir() {
		return filesys.ConfirmedDir(c), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(c)), path.Base(c), nil
}

func (k *kfs) Glob(pattern string) ([]string, error) {
	c := clean(pattern)
	sb, r, ok := k.locate(c)
	if !ok {
		return nil, nil
	}
	matches, err := fs.Glob(sb.fsys(), r)
	if err != nil {
		return nil, err
	}
	for i, m := range matches {
		matches[i] = k.virtual(sb, m)
	}
	return matches, nil
}

func (k *kfs) Walk(p string, fn filepath.WalkFunc) error {
	c := clean(p)
	sb, r, ok := k.locate(c)
	if !ok {
		return fn(c, nil, notExist(p))
	}
	return fs.WalkDir(sb.fsys(), r, func(q string, d fs.DirEntry, err error) error {
		vp := k.virtual(sb, q)
		if err != nil {
			return fn(vp, nil, err)
		}
		fi, err := d.Info()
		return fn(vp, fi, err)
	})
}

func (k *kfs) ReadFile(p string) ([]byte, error) {
	data, err := k.readFile(p)
	if err == nil && k.marks != nil {
		data = k.marks.serve(clean(p), data)
		if err := k.marks.refusedUnwrapped(); err != nil {
			return nil, err
		}
	}
	return data, err
}

func (k *kfs) readFile(p string) ([]byte, error) {
	c := clean(p)
	if data, ok := k.overlay[c]; ok {
		return data, nil
	}
	sb, r, ok := k.locate(c)
	if !ok {
		return nil, notExist(p)
	}
	data, err := sb.readFile(r)
	if err != nil {
		return nil, k.record(err)
	}
	if isKustomizationFile(r) {
		if sb == k.sb {
			k.mu.Lock()
			k.kusts = append(k.kusts, r)
			k.mu.Unlock()
		}
		refusedBy := ""
		if k.helm != nil {
			refusedBy = k.helm.opts.Kustomize.Helm.RefusedBy
		}
		if err := screenKustomization(sb, r, data, refusedBy); err != nil {
			if re, ok := errors.AsType[*Error](err); ok && sb != k.sb && re.File == r {
				re.File = sb.at(r) // in a remote base: name it
			}
			return nil, k.record(err)
		}
		k.deprecations(sb.at(r), data)
		if len(k.remoteDirs) > 0 {
			if data, err = k.rewriteRemotes(path.Dir(c), data); err != nil {
				return nil, k.record(&Error{File: sb.at(r), Err: err})
			}
		}
		if k.helm != nil {
			if data, err = k.helm.inflate(k, sb, r, c, data); err != nil {
				return nil, k.record(err)
			}
			k.helm.noteChildren(k, path.Dir(c), data)
		}
	} else if hasExt(r, ".yaml", ".yml", ".json") {
		// kustomize parses these; refuse bombs first. Syntax errors are left to
		// kustomize, since the file may be data for a generator.
		if err := checkYAML(data, sb.at(r)); err != nil {
			if !isSyntaxOnly(err) {
				return nil, k.record(err)
			}
			k.mu.Lock()
			k.syntax = append(k.syntax, err)
			k.mu.Unlock()
		}
	}
	return data, nil
}

// isSyntaxOnly reports whether err from checkYAML is a plain syntax error rather
// than a refused bomb.
func isSyntaxOnly(err error) bool {
	s := err.Error()
	return !strings.Contains(s, "alias") && !strings.Contains(s, "levels deep")
}

// deprecations turns kustomize's warnings about deprecated fields (which it also
// prints on stderr) into notes for the report.
func (k *kfs) deprecations(file string, data []byte) {
	kust := kustomizationOf(data)
	if kust == nil {
		return
	}
	warnings := kust.CheckDeprecatedFields()
	k.mu.Lock()
	defer k.mu.Unlock()
	if warnings == nil || k.noted[file] {
		return
	}
	if k.noted == nil {
		k.noted = map[string]bool{}
	}
	k.noted[file] = true
	for _, w := range *warnings {
		k.notes = append(k.notes, file+": "+strings.TrimPrefix(w, "# Warning: "))
	}
}

func isKustomizationFile(r string) bool {
	b := path.Base(r)
	for _, n := range kustomizationNames {
		if b == n {
			return true
		}
	}
	return false
}

func notExist(p string) error {
	return fmt.Errorf("'%s' doesn't exist: %w", p, os.ErrNotExist)
}

// memFile is an in-memory filesys.File and fs.FileInfo.
type memFile struct {
	*bytes.Reader
	name string
	size int64
	dir  bool
}

func dirInfo(name string) *memFile { return &memFile{name: name, dir: true} }

func (f *memFile) Write([]byte) (int, error)  { return 0, errReadOnly }
func (f *memFile) Close() error               { return nil }
func (f *memFile) Stat() (os.FileInfo, error) { return f, nil }
func (f *memFile) Name() string               { return f.name }
func (f *memFile) Size() int64                { return f.size }
func (f *memFile) ModTime() time.Time         { return time.Time{} }
func (f *memFile) IsDir() bool                { return f.dir }
func (f *memFile) Sys() any                   { return nil }
func (f *memFile) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

// rewriteRemotes points the remote entries of a kustomization's resources,
// bases and components at the virtual directories their fetched copies are
// served at, relative to the kustomization's virtual directory dir, so
// kustomize loads them as local bases (with the same RootOnly restrictor)
// and never fetches anything itself.
func (k *kfs) rewriteRemotes(dir string, data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return data, nil // screened already; kustomize reports it
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return data, nil
	}
	changed := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "resources", "bases", "components":
		default:
			continue
		}
		seq := resolve(root.Content[i+1])
		if seq.Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range seq.Content {
			item = resolve(item)
			to, ok := k.remoteDirs[item.Value]
			if item.Kind != yaml.ScalarNode || !ok {
				continue
			}
			r, err := filepath.Rel(dir, to)
			if err != nil {
				return nil, err
			}
			item.Value, item.Tag, item.Style = filepath.ToSlash(r), "!!str", 0
			changed = true
		}
	}
	if !changed {
		return data, nil
	}
	return yaml.Marshal(&doc)
}
