package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
)

// sandbox reads files of one checkout through an os.Root, so neither ".." nor a
// symlink can lead outside it, and enforces the per-file and per-target byte limits.
type sandbox struct {
	root *os.Root
	// cache, when set, is what this process keeps of the checkout (see
	// treecache.go): root is its root, shared with other renders.
	cache     *treeCache
	maxFile   int64
	maxTotal  int64
	maxOutput int64

	// name, for a fetched remote base, prefixes the paths errors name (the
	// base's URL and revision); parent is the checkout's sandbox, whose byte
	// counters a remote base's reads count against.
	name     string
	parent   *sandbox
	mountKey string // a prefix without "/", naming the base in parent.files
	// remotes are the fetched remote bases (KustomizeOptions.RemoteBases).
	remotes map[string]RemoteBase

	mu    sync.Mutex
	read  int64             // bytes read so far, against maxTotal
	out   int64             // bytes of manifests rendered so far, against maxOutput
	files map[string][]byte // small files read, to find the secrets errors must not show
}

// maxKeptFile is the largest file kept for scrub: kustomizations, env files and
// Secrets are small.
const maxKeptFile = 1 << 20

func openSandbox(root string, opts Options) (*sandbox, error) {
	if opts.Checkout != "" {
		c, err := openCached(opts.Checkout, root, opts.MaxMemoryBytes)
		if err != nil {
			return nil, fmt.Errorf("opening checkout %s: %w", root, err)
		}
		return &sandbox{root: c.root, cache: c, maxFile: opts.MaxFileBytes, maxTotal: opts.MaxTotalBytes, maxOutput: opts.MaxOutputBytes}, nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening checkout %s: %w", root, err)
	}
	return &sandbox{root: r, maxFile: opts.MaxFileBytes, maxTotal: opts.MaxTotalBytes, maxOutput: opts.MaxOutputBytes}, nil
}

func (s *sandbox) Close() error {
	if s.cache != nil {
		s.cache.release()
		return nil
	}
	return s.root.Close()
}

// rootStat is os.Root.Stat, answered by the cache when there is one.
func (s *sandbox) rootStat(name string) (fs.FileInfo, error) {
	if s.cache != nil {
		return s.cache.stat(name)
	}
	return s.root.Stat(name)
}

// rootLstat is os.Root.Lstat, answered by the cache when there is one.
func (s *sandbox) rootLstat(name string) (fs.FileInfo, error) {
	if s.cache != nil {
		return s.cache.lstat(name)
	}
	return s.root.Lstat(name)
}

// clean turns a slash path relative to the root into the form os.Root and fs.FS
// expect, or reports that it leaves the checkout.
func cleanRel(p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("absolute path %q is not allowed: use a path relative to the repository", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q leads outside the repository", p)
	}
	return c, nil
}

// escapeErr explains why rel could not be opened when the cause is a symlink.
func (s *sandbox) explain(rel string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{File: s.at(rel), Err: errors.New("file does not exist")}
	}
	// Look for a symlink anywhere along the path: os.Root refuses those that
	// resolve outside the checkout.
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if fi, lerr := s.rootLstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if _, serr := s.rootStat(p); serr != nil {
				return &Error{File: s.at(p), Err: errors.New("is a symlink that leads outside the repository (or nowhere); only symlinks within the repository are followed")}
			}
		}
	}
	if strings.Contains(err.Error(), "escapes") {
		return &Error{File: s.at(rel), Err: errors.New("path leads outside the repository")}
	}
	return &Error{File: s.at(rel), Err: fmt.Errorf("reading file: %w", unwrapPath(err))}
}

// unwrapPath drops the *fs.PathError wrapper, whose path is the absolute one on
// this machine and means nothing in a PR comment.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// stat stats rel, following symlinks within the checkout.
func (s *sandbox) stat(rel string) (fs.FileInfo, error) {
	c, err := cleanRel(rel)
	if err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	fi, err := s.rootStat(c)
	if err != nil {
		return nil, s.explain(c, err)
	}
	return fi, nil
}

// usage is what the sandbox's render has read and printed so far (the counts
// charge and output keep, in the top sandbox); setUsage sets them back, for a
// build that is done again (renderKustomize).
func (s *sandbox) usage() (read, out int64) {
	for s.parent != nil {
		s = s.parent
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read, s.out
}

func (s *sandbox) setUsage(read, out int64) {
	for s.parent != nil {
		s = s.parent
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read, s.out = read, out
}

// readFile reads rel (relative to the checkout root), enforcing the limits.
func (s *sandbox) readFile(rel string) ([]byte, error) {
	c, err := cleanRel(rel)
	if err != nil {
		return nil, &Error{File: s.at(rel), Err: err}
	}
	var data []byte
	if f, ok := s.cache.file(c); ok {
		data, err = s.checkCached(c, f)
	} else {
		data, err = s.readKernel(c)
	}
	if err != nil {
		return nil, err
	}
	if err := s.charge(c, int64(len(data))); err != nil {
		return nil, err
	}
	if len(data) <= maxKeptFile {
		// A remote base's files are kept in the checkout's sandbox too, under
		// a prefix of their own, so errors hide their secrets as well.
		top, key := s, c
		if s.parent != nil {
			top, key = s.parent, s.mountKey+"/"+c
		}
		top.mu.Lock()
		if top.files == nil {
			top.files = map[string][]byte{}
		}
		top.files[key] = data
		top.mu.Unlock()
	}
	return data, nil
}

// readKernel opens, checks and reads c, keeping what it saw in the cache (when
// there is one and it fits).
func (s *sandbox) readKernel(c string) (_ []byte, err error) {
	kernelReads.Add(1)
	var f *os.File
	if s.cache != nil {
		f = s.cache.openInDir(c)
	}
	if f == nil {
		if s.cache != nil {
			rootWalks.Add(1)
		}
		f, err = s.root.Open(c)
	}
	if err != nil {
		s.cache.keepFile(c, cachedFile{openErr: err})
		return nil, s.explain(c, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{File: s.at(c), Err: fmt.Errorf("reading file: %w", unwrapPath(err))}
	}
	if err := s.checkFile(c, fi); err != nil {
		if !fi.Mode().IsRegular() {
			s.cache.keepFile(c, cachedFile{fi: fi})
		}
		return nil, err
	}
	limit := fi.Size() + 1
	if s.maxFile > 0 {
		limit = s.maxFile + 1
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, &Error{File: s.at(c), Err: fmt.Errorf("reading file: %w", unwrapPath(err))}
	}
	if s.maxFile > 0 && int64(len(data)) > s.maxFile {
		return nil, &Error{File: s.at(c), Err: fmt.Errorf("file is over the %d-byte limit per file", s.maxFile)}
	}
	if int64(len(data)) == fi.Size() && s.cache.fits(fi.Size()) {
		// The caller owns what it gets: the cache keeps a copy.
		s.cache.keepFile(c, cachedFile{fi: fi, data: bytes.Clone(data)})
	}
	return data, nil
}

// checkCached runs on what the cache kept of c the checks readKernel makes.
func (s *sandbox) checkCached(c string, f cachedFile) ([]byte, error) {
	if f.openErr != nil {
		return nil, s.explain(c, f.openErr)
	}
	if err := s.checkFile(c, f.fi); err != nil {
		return nil, err
	}
	if f.data == nil && f.fi.Size() > 0 {
		return s.readKernel(c) // not kept (cannot happen: kept files have their content)
	}
	// Kept only whole: no longer than the file's size, checked just now.
	return bytes.Clone(f.data), nil
}

// checkFile refuses what readFile does not read: directories, special files,
// files over the per-file limit.
func (s *sandbox) checkFile(c string, fi fs.FileInfo) error {
	if fi.IsDir() {
		return &Error{File: s.at(c), Err: errors.New("is a directory, expected a file")}
	}
	if !fi.Mode().IsRegular() {
		return &Error{File: s.at(c), Err: errors.New("is not a regular file")}
	}
	if s.maxFile > 0 && fi.Size() > s.maxFile {
		return &Error{File: s.at(c), Err: fmt.Errorf("file is %d bytes, over the %d-byte limit per file", fi.Size(), s.maxFile)}
	}
	return nil
}

// at is how errors name the file rel of this sandbox.
func (s *sandbox) at(rel string) string {
	if s.name == "" {
		return rel
	}
	return s.name + "//" + rel
}

// mount opens a fetched remote base's checkout as a sandbox whose reads count
// against s's limits.
func (s *sandbox) mount(root, name, key string) (*sandbox, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening the fetched remote base %s: %w", name, err)
	}
	return &sandbox{root: r, maxFile: s.maxFile, name: name, parent: s, mountKey: key, remotes: s.remotes}, nil
}

// charge counts n bytes against the per-target total.
func (s *sandbox) charge(file string, n int64) error {
	if s.parent != nil {
		return s.parent.charge(s.at(file), n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read += n
	if s.maxTotal > 0 && s.read > s.maxTotal {
		return &Error{File: file, Err: fmt.Errorf("the target reads or renders more than %d bytes in total; split it or raise the limit", s.maxTotal)}
	}
	return nil
}

// output counts n bytes of rendered manifests against the per-target output
// limit; callers check before they parse, so the limit bounds what parsing
// costs (a YAML node tree is many times the size of its text).
func (s *sandbox) output(file string, n int64) error {
	if s.parent != nil {
		return s.parent.output(s.at(file), n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out += n
	if s.maxOutput > 0 && s.out > s.maxOutput {
		return &Error{File: file, Err: fmt.Errorf("the target renders more than %d bytes of manifests (the limit per target); split it into smaller targets, or look for templates that generate huge values", s.maxOutput)}
	}
	return nil
}

// fsys exposes the checkout as an fs.FS for walking.
func (s *sandbox) fsys() fs.FS {
	if s.cache != nil {
		return cachedFS{s.cache}
	}
	return s.root.FS()
}
