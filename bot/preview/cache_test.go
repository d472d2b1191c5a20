package preview

import (
	"context"
	"errors"
	"strings"
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

// TestRenderCacheCapsTheJob checks that the renders of one preview together
// stop at the per-preview output limit, each target being under its own.
func TestRenderCacheCapsTheJob(t *testing.T) {
	root := "../../fixtures/scenarios/01-hpa-owns-replicas/base"
	c := newRenderCache()
	if _, err := c.render(t.Context(), root, "app", render.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	c.maxOutput = c.output + 10 // room for nothing more
	other := render.DefaultOptions()
	other.Namespace = "elsewhere"
	set, err := c.render(t.Context(), root, "app", other)
	var re *render.Error
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "(the limit per preview)") || re.File != "app" {
		t.Fatalf("got %v, want a render error on app naming the limit per preview", err)
	}
	if len(set.Objects) != 0 {
		t.Errorf("the render over the limit kept %d objects", len(set.Objects))
	}
	if maxJobOutputBytes != 96<<20 {
		t.Errorf("the README says 96 MiB per preview")
	}
}
