package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/driftpreview/driftpreview/render"
)

// renderCache remembers the renders of one run. GitOps discovery renders targets to
// find the Applications and Kustomizations they hold (app-of-apps), and the pipeline
// renders the same targets again to diff them; rendering is deterministic for one
// checkout, path and options, so the second render is a lookup.
type renderCache struct {
	mu      sync.Mutex
	entries map[string]renderResult
	misses  int // renders actually run, for tests and benchmarks
	// output is what the renders of this run produced in all, against maxOutput:
	// each target is capped by render.Options.MaxOutputBytes, and this caps the
	// job, whose renders the pipeline holds in memory together.
	output    int64
	maxOutput int64
}

// maxJobOutputBytes caps the rendered manifests of one preview (all targets, base
// and head); past it, further renders are render errors naming the limit.
const maxJobOutputBytes = 96 << 20

type renderResult struct {
	set render.ObjectSet
	err error
}

func newRenderCache() *renderCache {
	return &renderCache{entries: map[string]renderResult{}, maxOutput: maxJobOutputBytes}
}

// render returns the cached render of path in root with opts, rendering on a miss.
// Errors from a cancelled context are not cached.
func (c *renderCache) render(ctx context.Context, root, path string, opts render.Options) (render.ObjectSet, error) {
	o, err := json.Marshal(opts)
	if err != nil {
		return render.Render(ctx, root, path, opts)
	}
	key := root + "\x00" + path + "\x00" + string(o)
	c.mu.Lock()
	r, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return r.set, r.err
	}
	set, err := render.Render(ctx, root, path, opts)
	if ctx.Err() != nil {
		return set, err
	}
	c.mu.Lock()
	c.output += set.OutputBytes
	if err == nil && c.output > c.maxOutput {
		set, err = render.ObjectSet{}, &render.Error{File: path, Err: fmt.Errorf("the preview renders more than %d MiB of manifests in all (the limit per preview); preview fewer targets at a time", c.maxOutput>>20)}
	}
	c.entries[key] = renderResult{set, err}
	c.misses++
	c.mu.Unlock()
	return set, err
}
