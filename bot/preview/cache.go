package preview

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// renderCache remembers the renders of one run. GitOps discovery renders targets to
// find the Applications and Kustomizations they hold (app-of-apps), and the pipeline
// renders the same targets again to diff them; rendering is deterministic for one
// checkout, path and options, so the second render is a lookup.
//
// Renders are also shared by content (render.ContentKey: the hash of the
// target's input files, options and renderer versions) through a process-wide
// cache: a target that base and head hold alike is rendered once, and in `serve`
// the renders of one job serve the next (the base of one push is the base of
// the next). A render whose inputs cannot be told is never shared, and neither
// is a failed one (its error names its checkout).
type renderCache struct {
	mu      sync.Mutex
	entries map[string]renderResult
	misses  int // renders actually run, for tests and benchmarks
	shared  int // renders taken from the content cache
	// output is what the renders of this run produced in all, against maxOutput:
	// each target is capped by render.Options.MaxOutputBytes, and this caps the
	// job, whose renders the pipeline holds in memory together.
	output    int64
	maxOutput int64
	content   *contentCache
	// disk, when set, keeps renders by content across runs (Request.RenderCache).
	disk *DiskCache
	// inflight marks the content keys being rendered now (flight).
	inflight map[string]chan struct{}
	// inputs find the content keys of renders in the run's checkouts, by
	// checkout root: one finder per checkout serves every target
	// (render.InputFinder). Other roots use render.ContentKey.
	inputs map[string]*render.InputFinder
	// checkouts name the run's checkouts by root (render.Options.Checkout):
	// nothing writes to them while the run renders, so the render processes
	// keep what they read of them.
	checkouts map[string]string
	// spent is what the run's renders spent of its Budget (nil: no budget).
	spent *spending
	// unshared holds the checkout roots where a render could not be keyed
	// by content (remote sources, inputs not told): discovery's Result
	// there is not kept (discoveryMemo).
	unshared map[string]bool
}

// unsharedIn reports whether a render in root could not be keyed by content.
func (c *renderCache) unsharedIn(root string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unshared[root]
}

// maxJobOutputBytes caps the rendered manifests of one preview (all targets, base
// and head); past it, further renders are render errors naming the limit.
const maxJobOutputBytes = 96 << 20

type renderResult struct {
	set render.ObjectSet
	err error
	// released marks a render the pipeline is done with (release): its
	// objects are no longer held, and its output was counted already.
	released bool
}

func newRenderCache() *renderCache {
	return &renderCache{entries: map[string]renderResult{}, maxOutput: maxJobOutputBytes, content: sharedRenders}
}

// render returns the cached render of path in root with opts, rendering on a miss.
// Errors from a cancelled context are not cached.
func (c *renderCache) render(ctx context.Context, root, path string, opts render.Options) (render.ObjectSet, error) {
	key, err := entryKey(root, path, opts)
	if err != nil {
		set, _, err := c.run(ctx, root, path, opts)
		return set, err
	}
	c.mu.Lock()
	r, ok := c.entries[key]
	c.mu.Unlock()
	if ok && !r.released {
		return r.set, r.err
	}
	ckey, shareable := "", false
	if c.content != nil || c.disk != nil {
		if f := c.inputs[root]; f != nil {
			ckey, shareable = f.ContentKey(path, opts)
		} else {
			ckey, shareable = render.ContentKey(root, path, opts)
		}
	}
	if !shareable {
		c.mu.Lock()
		if c.unshared == nil {
			c.unshared = map[string]bool{}
		}
		c.unshared[root] = true
		c.mu.Unlock()
	}
	rendersAsked.Add(1)
	var set render.ObjectSet
	hit := false
	if shareable {
		// Base and head render at the same time: a target alike at both
		// waits for the one render of the other side.
		defer c.flight(ckey)()
		set, hit = c.lookup(ckey)
	}
	if !hit {
		var encoded []byte
		set, encoded, err = c.run(ctx, root, path, opts)
		if ctx.Err() != nil {
			return set, err
		}
		if shareable && err == nil {
			// Encoded once for both caches: as the render process's answer
			// had it, when it did (render.RenderEncoded).
			if body, ok := encodeSet(set, encoded); ok {
				if c.content != nil {
					c.content.put(ckey, body, set)
				}
				if c.disk != nil {
					c.disk.put(ckey, body)
				}
			}
		}
	}
	c.mu.Lock()
	if r.released {
		// Rendered again after its release (a renamed Application's new
		// name, whose head the old name's target reads too): counted once,
		// and not held again.
		if hit {
			c.shared++
		} else {
			c.misses++
		}
		c.mu.Unlock()
		return set, err
	}
	c.output += set.OutputBytes
	if err == nil && c.output > c.maxOutput {
		set, err = render.ObjectSet{}, &render.Error{File: path, Err: fmt.Errorf("the preview renders more than %d MiB of manifests in all (the limit per preview); preview fewer targets at a time", c.maxOutput>>20)}
	}
	c.entries[key] = renderResult{set: set, err: err}
	if hit {
		c.shared++
	} else {
		c.misses++
	}
	c.mu.Unlock()
	return set, err
}

// entryKey is the key of a render in entries: its checkout, path and options.
func entryKey(root, path string, opts render.Options) (string, error) {
	o, err := json.Marshal(opts)
	if err != nil {
		return "", err
	}
	return root + "\x00" + path + "\x00" + string(o), nil
}

// release drops the objects of a render the pipeline is done with (its
// target's findings and report section are made), so a run holds the renders
// of the targets in flight, not of every target. A failed render keeps its
// error (nothing to free). A later render of the same key renders again
// (content cache, disk cache, or a render) without holding the result or
// counting its output twice.
func (c *renderCache) release(root, path string, opts render.Options) {
	key, err := entryKey(root, path, opts)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.entries[key]; ok && r.err == nil {
		c.entries[key] = renderResult{released: true}
	}
}

// held counts the renders whose objects the cache holds, for tests.
func (c *renderCache) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.entries {
		if !r.released && len(r.set.Objects) > 0 {
			n++
		}
	}
	return n
}

// lookup finds a render by content key in memory, then on disk.
func (c *renderCache) lookup(ckey string) (render.ObjectSet, bool) {
	if c.content != nil {
		if set, body, ok := c.content.get(ckey); ok {
			if c.disk != nil {
				c.disk.keep(ckey, body) // for the next process
			}
			return set, true
		}
	}
	if c.disk != nil {
		if set, body, ok := c.disk.get(ckey); ok {
			if c.content != nil {
				c.content.put(ckey, body, set)
			}
			return set, true
		}
	}
	return render.ObjectSet{}, false
}

// flight waits while another render of ckey runs in this process, then marks
// ckey as running; the function it returns ends that.
func (c *renderCache) flight(ckey string) func() {
	for {
		c.mu.Lock()
		if c.inflight == nil {
			c.inflight = map[string]chan struct{}{}
		}
		ch, busy := c.inflight[ckey]
		if !busy {
			done := make(chan struct{})
			c.inflight[ckey] = done
			c.mu.Unlock()
			return func() {
				c.mu.Lock()
				delete(c.inflight, ckey)
				c.mu.Unlock()
				close(done)
			}
		}
		c.mu.Unlock()
		<-ch
	}
}

// run renders, at most one render per CPU at a time: base and head of the
// targets in flight share the CPUs. It also returns the set's encoding when
// the render gave it (render.RenderEncoded), else nil.
func (c *renderCache) run(ctx context.Context, root, path string, opts render.Options) (render.ObjectSet, []byte, error) {
	select {
	case renderSlots <- struct{}{}:
	case <-ctx.Done():
		return render.ObjectSet{}, nil, fmt.Errorf("rendering %s: %w", path, ctx.Err())
	}
	defer func() { <-renderSlots }()
	if reason := c.spent.exceeded(); reason != "" {
		return render.ObjectSet{}, nil, budgetError(path, reason)
	}
	if id, ok := c.checkouts[root]; ok {
		opts.Checkout = id
	}
	opts.Budget = c.spent.renderBudget()
	rendersRun.Add(1)
	start := time.Now()
	set, encoded, err := render.RenderEncoded(ctx, root, path, opts)
	c.spent.charge(set.CPUTime, time.Since(start))
	return set, encoded, err
}

// rendersRun counts the renders this process ran (render.Render calls,
// discovery's among them), for tests that check what a preview renders.
var rendersRun atomic.Int64

// rendersAsked counts the renders this process was asked for that the
// run's own memo did not answer (run, or taken from the content caches).
var rendersAsked atomic.Int64

// renderSlots bounds the renders running at once in this process (of all jobs)
// by the CPUs: each is a render process working flat out.
var renderSlots = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))

// contentCache holds renders by render.ContentKey, least recently used first
// out, up to max bytes of rendered manifests. It keeps each render encoded
// (render.EncodeSet, as the disk cache and a render process's answer have it),
// not as objects: a few times smaller, and each caller decodes its own
// objects, so the pipeline's changes to the objects of one side (identity,
// substitution) never reach the other side or the next job.
type contentCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *contentEntry, most recent first
	byKey map[string]*list.Element
}

type contentEntry struct {
	key  string
	body []byte // render.EncodeSet
	// output and charts are what the encoding leaves out: the size of the
	// render's answer (ObjectSet.OutputBytes) and its fetched charts.
	output int64
	charts []render.ResolvedChart
}

// maxSharedRenderBytes bounds the process-wide content cache by the size of the
// manifests it holds, encoded as a render process sends them.
const maxSharedRenderBytes = 32 << 20

var sharedRenders = newContentCache(maxSharedRenderBytes)

func newContentCache(maxBytes int64) *contentCache {
	return &contentCache{max: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// get decodes the render kept under key; body is its encoding.
func (c *contentCache) get(key string) (set render.ObjectSet, body []byte, ok bool) {
	c.mu.Lock()
	e, ok := c.byKey[key]
	if !ok {
		c.mu.Unlock()
		return render.ObjectSet{}, nil, false
	}
	c.order.MoveToFront(e)
	ent := e.Value.(*contentEntry)
	c.mu.Unlock()
	set, err := render.DecodeSet(ent.body)
	if err != nil {
		return render.ObjectSet{}, nil, false
	}
	set.OutputBytes = ent.output
	set.Charts = slices.Clone(ent.charts)
	return set, ent.body, true
}

// put keeps body, the encoding of set, under key.
func (c *contentCache) put(key string, body []byte, set render.ObjectSet) {
	size := int64(max(len(body), 1))
	if size > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&contentEntry{key: key, body: body, output: set.OutputBytes, charts: slices.Clone(set.Charts)})
	c.size += size
	for c.size > c.max {
		last := c.order.Back()
		ent := last.Value.(*contentEntry)
		c.order.Remove(last)
		delete(c.byKey, ent.key)
		c.size -= int64(max(len(ent.body), 1))
	}
}

// encodeSet is set as the caches keep it (render.EncodeSet): encoded, the
// render's own encoding of set (render.RenderEncoded), when it is given, else
// set encoded; false when it cannot be encoded or is too large to keep.
func encodeSet(set render.ObjectSet, encoded []byte) ([]byte, bool) {
	if encoded != nil {
		return encoded, len(encoded) <= maxDiskEntryBytes/2
	}
	var body bytes.Buffer
	if err := render.EncodeSet(&body, set); err != nil || body.Len() > maxDiskEntryBytes/2 {
		return nil, false
	}
	// Exactly its size: the buffer grew by doubling.
	return bytes.Clone(body.Bytes()), true
}
