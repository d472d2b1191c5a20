package preview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

// DiskCache keeps renders on disk by content (render.ContentKey: the target's
// input files, options and build), so the base render of one run is a lookup
// in the next: in the CLI under the user cache dir, in `serve` under its work
// dir. Like the in-memory cache it never keeps a failed render, nor one whose
// inputs cannot be told or come from remote sources (ContentKey says so).
//
// It is the store of render/remote (content-addressed files, flock and atomic
// rename, LRU by modification time, bounded in bytes), so two processes can
// share one directory: an entry appears whole by rename or not at all. Each
// entry starts with the sha256 of its body; an entry that does not match (a
// truncated or corrupt file) is removed and the target rendered again.
// Entries are written 0600 in a 0700 directory: they hold rendered Secrets, as
// the checkout they come from does.
type DiskCache struct {
	store *remote.Cache
	// exe names this executable (path, size, modification time), part of every
	// key: a rebuilt binary of the same version (a development build) never
	// reads the renders of the previous one.
	exe string
	// puts counts entries written since the last Trim.
	puts atomic.Int64
	// putMu makes this process write one entry at a time. Base and head
	// renders finish at once, and two files created side by side in one
	// directory cost the kernel about twice the CPU time of the same two
	// created one after the other (ext4, BenchmarkDiskCachePut): on PR-wide
	// cold at T=200 the 400 entries took 0.2–0.4 s of the preview process's
	// CPU, nearly all of it creating the files. An entry is written from
	// memory, so waiting for another costs a fraction of a millisecond.
	putMu sync.Mutex
	// hits, misses and corrupt count lookups, for tests.
	hits, misses, corrupt atomic.Int64
}

// DefaultDiskCacheMaxBytes bounds a render cache on disk: about 4,000 renders
// of 25 objects.
const DefaultDiskCacheMaxBytes = 256 << 20

// trimEvery is how many entries are written between two evictions (each reads
// the whole directory).
const trimEvery = 64

// diskCacheMagic starts every entry, with the format's version.
const diskCacheMagic = "driftpreview-render-v1 "

// OpenDiskCache opens (creating it) the render cache in dir, bounded to maxBytes
// (DefaultDiskCacheMaxBytes when 0 or less).
func OpenDiskCache(dir string, maxBytes int64) (*DiskCache, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultDiskCacheMaxBytes
	}
	store, err := remote.OpenCache(dir, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("opening the render cache %s: %w", dir, err)
	}
	// An entry is read whole at once, so none needs keeping past the limit.
	store.SetGrace(0)
	return &DiskCache{store: store, exe: exeID()}, nil
}

var exeID = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	fi, err := os.Stat(p)
	if err != nil {
		return p
	}
	return fmt.Sprintf("%s %d %d", p, fi.Size(), fi.ModTime().UnixNano())
})

// Dir is the cache's directory.
func (d *DiskCache) Dir() string { return d.store.Dir() }

// diskKeyVersion names how content keys are made, part of every key: v2 since
// they come from git's blob ids where they can (render.NewInputFinderTree),
// so no entry of the earlier keys is taken for one of these.
const diskKeyVersion = "render-v2"

func (d *DiskCache) key(ckey string) string { return remote.Key(diskKeyVersion, ckey, d.exe) }

// maxDiskEntryBytes bounds what is read of one entry: a render over the output
// limit per preview is never stored, so a larger file is not one of ours.
const maxDiskEntryBytes = maxJobOutputBytes * 2

// get returns the render kept under ckey, and its encoding. A corrupt entry is
// removed: a miss.
func (d *DiskCache) get(ckey string) (render.ObjectSet, []byte, bool) {
	key := d.key(ckey)
	body, ok := d.body(key, diskCacheMagic)
	if !ok {
		return render.ObjectSet{}, nil, false
	}
	set, err := render.DecodeSet(body)
	if err != nil {
		d.corrupt.Add(1)
		d.hits.Add(-1)
		d.misses.Add(1)
		_ = d.store.Remove(key)
		return render.ObjectSet{}, nil, false
	}
	return set, body, true
}

// body returns the body of the entry under key (a store key) that starts
// with magic and the body's sha256. A corrupt entry is removed: a miss.
func (d *DiskCache) body(key, magic string) ([]byte, bool) {
	p, ok := d.store.Lookup(key)
	if !ok {
		d.misses.Add(1)
		return nil, false
	}
	body, err := readBody(p, magic)
	if err != nil {
		d.corrupt.Add(1)
		d.misses.Add(1)
		_ = d.store.Remove(key)
		return nil, false
	}
	d.hits.Add(1)
	return body, true
}

// readBody reads an entry: magic, the sha256 of the body in hex, a newline,
// the body.
func readBody(p, magic string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxDiskEntryBytes+1))
	if err != nil {
		return nil, err
	}
	head, body, ok := bytes.Cut(data, []byte("\n"))
	sum, found := bytes.CutPrefix(head, []byte(magic))
	if !ok || !found || len(data) > maxDiskEntryBytes {
		return nil, fmt.Errorf("%s: not a cache entry", p)
	}
	h := sha256.Sum256(body)
	if string(sum) != hex.EncodeToString(h[:]) {
		return nil, fmt.Errorf("%s: checksum mismatch", p)
	}
	return body, nil
}

// keep puts body (a render.EncodeSet encoding) under ckey unless an entry is
// there (marking it used).
func (d *DiskCache) keep(ckey string, body []byte) {
	if _, ok := d.store.Lookup(d.key(ckey)); !ok {
		d.put(ckey, body)
	}
}

// put keeps body (a render.EncodeSet encoding, encodeSet) under ckey; a
// failure to write only costs a render later.
func (d *DiskCache) put(ckey string, body []byte) {
	d.putBody(d.key(ckey), diskCacheMagic, body)
}

// putBody keeps body under key (a store key), after magic and its sha256.
func (d *DiskCache) putBody(key, magic string, body []byte) {
	h := sha256.Sum256(body)
	d.putMu.Lock()
	defer d.putMu.Unlock()
	err := d.store.Put(key, func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "%s%s\n", magic, hex.EncodeToString(h[:])); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	})
	if err == nil && d.puts.Add(1)%trimEvery == 0 {
		d.store.Trim()
	}
}

// Trim bounds the cache to its size, least recently used out; call it when a
// run ends.
func (d *DiskCache) Trim() {
	if d.puts.Swap(0) > 0 {
		d.store.Trim()
	}
}
