package render

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// A render process serves many renders of the same checkout (a preview renders
// every target of its base and head), and the overlays of a repository share
// bases and components: without a cache, every render reads them again, and
// each read walks os.Root one path component at a time (an openat, fcntl and
// close per component). So a render process keeps what it saw of a checkout:
// the stats, directory listings and contents of its files, read-only, for the
// renders that follow.
//
// That is right only for a tree that never changes while it is read, which the
// caller promises by naming the checkout (Options.Checkout, NewCheckoutID): a
// preview's checkouts are made for one run and removed after it. A root without
// that name (`driftpreview render` on a working tree, tests) is read from the
// kernel every time, as before. The cache answers exactly what the kernel
// answered (the same FileInfo, the same error values), and every check made on
// it (symlinks leaving the checkout, the per-file and per-target read limits,
// errors naming files) runs on every read as before: only the system calls are
// saved.
//
// A PR is untrusted, so the cache is bounded in bytes (checkoutCacheBytes):
// past the bound, further files are read from the kernel each time. A process
// keeps the checkouts of at most maxCachedCheckouts names (base and head),
// dropping the least recently used, and drops a checkout whose directory was
// removed as soon as another one arrives; in `serve`, where render processes
// outlive jobs, each job's checkouts have names of their own, so a new checkout
// at a reused path never meets the old one's cache.

// NewCheckoutID returns a name for a checkout that nothing changes while it
// exists, unique to it (random), for Options.Checkout.
func NewCheckoutID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

const (
	// maxCachedCheckouts is how many checkouts a render process keeps: a
	// preview renders base and head.
	maxCachedCheckouts = 2
	// maxCheckoutCacheBytes bounds what a process keeps of one checkout (see
	// checkoutCacheBytes).
	maxCheckoutCacheBytes = 16 << 20
	// entryOverhead is what the cache counts for an entry besides its name
	// and content: the map slot, the FileInfo, the error.
	entryOverhead = 256
)

// checkoutCacheBytes is what a render process keeps of one checkout: 16 MiB,
// less with a small memory limit (a 32nd of it), so all the checkouts kept
// together stay a small part of what the process may use.
func checkoutCacheBytes(maxMemory int64) int64 {
	if maxMemory <= 0 {
		return maxCheckoutCacheBytes
	}
	return min(maxCheckoutCacheBytes, maxMemory/32)
}

// kernelReads counts the files readFile opened from the kernel, and rootWalks
// the lookups a cache asked of the checkout's root (a walk of every path
// component), for tests.
var kernelReads, rootWalks atomic.Int64

// treeCache is what a process keeps of one checkout: its root, kept open
// across renders, and the answers the kernel gave about its paths.
type treeCache struct {
	id, path string
	root     *os.Root
	fsys     fs.FS
	max      int64

	mu     sync.Mutex
	users  int  // sandboxes using root now
	gone   bool // dropped from the process's list: close root when unused
	size   int64
	stats  map[string]cachedStat // os.Root.Stat
	lstats map[string]cachedStat // os.Root.Lstat
	fstats map[string]cachedStat // the fs.FS's Stat (which checks the name first)
	dirs   map[string]cachedDir  // the fs.FS's ReadDir
	files  map[string]cachedFile // sandbox.readFile's open, stat and read
	// subs are directories of the checkout opened as roots of their own
	// (nil: could not be), so a lookup of a file in one is one system call
	// instead of one per path component (see inDir).
	subs map[string]*os.Root
}

// maxSubRoots bounds the directories a checkout's cache holds open.
const maxSubRoots = 256

type cachedStat struct {
	fi  fs.FileInfo
	err error
}

type cachedDir struct {
	ents []fs.DirEntry
	err  error
}

// cachedFile is what opening a file said: the error opening it, or its
// FileInfo (from the open file) and, for a regular file, its whole content.
type cachedFile struct {
	openErr error
	fi      fs.FileInfo
	data    []byte
}

// checkouts are the checkouts this process keeps, most recently used first.
var checkouts struct {
	mu   sync.Mutex
	list []*treeCache
}

// openCached returns the cache of the checkout named id at path, opening it
// when this process has none, and marks it used until release.
func openCached(id, path string, maxMemory int64) (*treeCache, error) {
	checkouts.mu.Lock()
	defer checkouts.mu.Unlock()
	for i, c := range checkouts.list {
		if c.id != id || c.path != path {
			continue
		}
		if !c.same() {
			// Not the directory it was: never serve it.
			checkouts.list = slices.Delete(checkouts.list, i, i+1)
			c.drop()
			break
		}
		checkouts.list = slices.Insert(slices.Delete(checkouts.list, i, i+1), 0, c)
		c.acquire()
		return c, nil
	}
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	c := &treeCache{id: id, path: path, root: r, fsys: r.FS(), max: checkoutCacheBytes(maxMemory),
		stats: map[string]cachedStat{}, lstats: map[string]cachedStat{}, fstats: map[string]cachedStat{},
		dirs: map[string]cachedDir{}, files: map[string]cachedFile{}, subs: map[string]*os.Root{}}
	// Another checkout arrives: drop those whose directory is gone, then the
	// least recently used past the bound.
	checkouts.list = slices.DeleteFunc(checkouts.list, func(o *treeCache) bool {
		if o.removed() {
			o.drop()
			return true
		}
		return false
	})
	checkouts.list = slices.Insert(checkouts.list, 0, c)
	for len(checkouts.list) > maxCachedCheckouts {
		checkouts.list[len(checkouts.list)-1].drop()
		checkouts.list = checkouts.list[:len(checkouts.list)-1]
	}
	c.acquire()
	return c, nil
}

// dropCheckouts forgets every checkout, for tests.
func dropCheckouts() {
	checkouts.mu.Lock()
	defer checkouts.mu.Unlock()
	for _, c := range checkouts.list {
		c.drop()
	}
	checkouts.list = nil
}

// same reports whether path still names the directory c holds open.
func (c *treeCache) same() bool {
	held, err := c.root.Stat(".")
	if err != nil {
		return false
	}
	now, err := os.Stat(c.path)
	return err == nil && os.SameFile(held, now)
}

// removed reports whether c's directory was removed (a removed directory has
// no links left) or is no longer at its path.
func (c *treeCache) removed() bool {
	held, err := c.root.Stat(".")
	if err != nil {
		return true
	}
	if nlink(held) == 0 {
		return true
	}
	return !c.same()
}

// nlink is the number of links of the file fi describes (1 when unknown).
func nlink(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

func (c *treeCache) acquire() {
	c.mu.Lock()
	c.users++
	c.mu.Unlock()
}

// release ends one sandbox's use of c.
func (c *treeCache) release() {
	c.mu.Lock()
	c.users--
	closeNow := c.gone && c.users == 0
	c.mu.Unlock()
	if closeNow {
		c.close()
	}
}

// close closes c's root and the directories it holds open.
func (c *treeCache) close() {
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	c.mu.Unlock()
	for _, r := range subs {
		if r != nil {
			_ = r.Close()
		}
	}
	_ = c.root.Close()
}

// drop takes c out of use: its root is closed once no sandbox uses it.
func (c *treeCache) drop() {
	c.mu.Lock()
	c.gone = true
	closeNow := c.users == 0
	c.stats, c.lstats, c.fstats, c.dirs, c.files = nil, nil, nil, nil, nil
	c.size = 0
	c.mu.Unlock()
	if closeNow {
		c.close()
	}
}

// room reports whether n more bytes fit, and counts them if so. Called with
// c.mu held.
func (c *treeCache) room(n int64) bool {
	if c.gone || c.size+n > c.max {
		return false
	}
	c.size += n
	return true
}

// bytes is what c counts as kept.
func (c *treeCache) bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// remember looks name up in m (one of c's maps), asking the kernel on a miss and
// keeping its answer when it fits.
func remember[T any](c *treeCache, m func(*treeCache) map[string]T, name string, cost func(T) int64, ask func() T) T {
	c.mu.Lock()
	if v, ok := m(c)[name]; ok {
		c.mu.Unlock()
		return v
	}
	c.mu.Unlock()
	v := ask()
	c.mu.Lock()
	if mm := m(c); mm != nil {
		if _, ok := mm[name]; !ok && c.room(int64(len(name))+entryOverhead+cost(v)) {
			mm[name] = v
		}
	}
	c.mu.Unlock()
	return v
}

func noCost[T any](T) int64 { return 0 }

func (c *treeCache) stat(name string) (fs.FileInfo, error) {
	r := remember(c, func(c *treeCache) map[string]cachedStat { return c.stats }, name, noCost, func() cachedStat {
		// Stat and Lstat agree on what is not a symlink.
		if r, ok := c.inDir(name); ok && (r.err != nil || r.fi.Mode()&fs.ModeSymlink == 0) {
			return r
		}
		rootWalks.Add(1)
		fi, err := c.root.Stat(name)
		return cachedStat{fi, err}
	})
	return r.fi, r.err
}

func (c *treeCache) lstat(name string) (fs.FileInfo, error) {
	r := remember(c, func(c *treeCache) map[string]cachedStat { return c.lstats }, name, noCost, func() cachedStat {
		if r, ok := c.inDir(name); ok {
			return r
		}
		rootWalks.Add(1)
		fi, err := c.root.Lstat(name)
		return cachedStat{fi, err}
	})
	return r.fi, r.err
}

// inDir lstats name in its directory opened as a root of its own: one system
// call once the directory is open, where os.Root opens every directory along
// the path again for each lookup. The directory was opened through the
// checkout's root, so it is inside the checkout, and a lookup in it cannot
// leave it. A file that is missing (or another error of the last component)
// is the error os.Root gives, which names the whole path:
// &PathError{Op: "statat", Path: name} for Stat and Lstat alike (os/root_unix.go
// rootStat). ok is false when this way cannot answer as os.Root would: a name
// that is not a clean path below the root, a directory that could not be
// opened so, another kind of error. Callers then ask the checkout's root.
func (c *treeCache) inDir(name string) (cachedStat, bool) {
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" || base == "" || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") || path.IsAbs(name) {
		return cachedStat{}, false
	}
	sub := c.sub(dir)
	if sub == nil {
		return cachedStat{}, false
	}
	fi, err := sub.Lstat(base)
	if err != nil {
		pe, ok := errors.AsType[*fs.PathError](err)
		if !ok || pe.Op != "statat" || pe.Path != base {
			return cachedStat{}, false
		}
		if errno, ok := pe.Err.(syscall.Errno); !ok || errno != syscall.ENOENT {
			return cachedStat{}, false
		}
		return cachedStat{err: &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}}, true
	}
	return cachedStat{fi: fi}, true
}

// openInDir opens name, a regular file (lstat said so), in its directory
// opened as a root of its own (see inDir); nil when that cannot be done.
func (c *treeCache) openInDir(name string) *os.File {
	fi, err := c.lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		return nil
	}
	sub := c.sub(dir)
	if sub == nil {
		return nil
	}
	f, err := sub.Open(base)
	if err != nil {
		return nil
	}
	return f
}

// sub is dir opened as a root of its own, through the checkout's root (which
// follows symlinks within the checkout, as for any lookup), or nil.
func (c *treeCache) sub(dir string) *os.Root {
	c.mu.Lock()
	r, ok := c.subs[dir]
	full := c.subs == nil || len(c.subs) >= maxSubRoots
	c.mu.Unlock()
	if ok || full {
		return r
	}
	r, err := c.root.OpenRoot(dir)
	if err != nil {
		r = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.subs[dir]; ok || c.subs == nil {
		if r != nil {
			_ = r.Close()
		}
		return prev
	}
	c.subs[dir] = r
	return r
}

// file returns what opening name said, if c (which may be nil) has it.
func (c *treeCache) file(name string) (cachedFile, bool) {
	if c == nil {
		return cachedFile{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[name]
	return f, ok
}

// keepFile keeps what opening name said.
func (c *treeCache) keepFile(name string, f cachedFile) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files == nil {
		return
	}
	if _, ok := c.files[name]; !ok && c.room(int64(len(name)+len(f.data))+entryOverhead) {
		c.files[name] = f
	}
}

// fits reports whether a file of n bytes could be kept now.
func (c *treeCache) fits(n int64) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.gone && c.size+n+entryOverhead <= c.max
}

// cachedFS is the checkout as an fs.FS (for fs.WalkDir, fs.Glob, fs.ReadDir),
// answering Stat and ReadDir from the cache.
type cachedFS struct{ c *treeCache }

var (
	_ fs.StatFS    = cachedFS{}
	_ fs.ReadDirFS = cachedFS{}
)

func (f cachedFS) Open(name string) (fs.File, error) { return f.c.fsys.Open(name) }

func (f cachedFS) Stat(name string) (fs.FileInfo, error) {
	r := remember(f.c, func(c *treeCache) map[string]cachedStat { return c.fstats }, name, noCost, func() cachedStat {
		fi, err := fs.Stat(f.c.fsys, name)
		return cachedStat{fi, err}
	})
	return r.fi, r.err
}

func (f cachedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r := remember(f.c, func(c *treeCache) map[string]cachedDir { return c.dirs }, name, func(d cachedDir) int64 {
		n := int64(0)
		for _, e := range d.ents {
			n += int64(len(e.Name())) + entryOverhead
		}
		return n
	}, func() cachedDir {
		ents, err := fs.ReadDir(f.c.fsys, name)
		return cachedDir{ents, err}
	})
	// The caller's slice: it may sort or change it.
	return slices.Clone(r.ents), r.err
}
