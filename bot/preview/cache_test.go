package preview

import (
	"context"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

func TestRenderCache(t *testing.T) {
	root := "../../fixtures/scenarios/01-hpa-owns-replicas/base"
	c := newRenderCache()
	opts := render.DefaultOptions()

	first, err := c.render(t.Context(), root, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.render(t.Context(), root, "app", opts)
	if c.misses != 1 {
		t.Errorf("the same render twice ran %d renders, want 1", c.misses)
	}
	if len(again.Objects) != len(first.Objects) || again.Objects[0].Obj != first.Objects[0].Obj {
		t.Errorf("a cache hit must return the first render")
	}

	other := opts
	other.Namespace = "elsewhere"
	if _, err := c.render(t.Context(), root, "app", other); err != nil {
		t.Fatal(err)
	}
	if c.misses != 2 {
		t.Errorf("other options must render again; %d renders", c.misses)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	c.render(ctx, root, "missing-dir", opts)
	if c.misses != 2 {
		t.Errorf("a cancelled render must not be cached; %d renders", c.misses)
	}
}
