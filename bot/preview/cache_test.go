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
	c.content = newContentCache(maxSharedRenderBytes) // nothing from other tests
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
	c.content = nil
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

// TestRenderCacheSharesByContent: a target whose input files are the same in two
// checkouts (base and head, or this job and the next) is rendered once; each
// side gets its own objects; a change to an input file, or a target whose
// inputs cannot be told, renders again.
func TestRenderCacheSharesByContent(t *testing.T) {
	files := map[string]string{
		"app/kustomization.yaml":  "resources: [../base]\n",
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: '1'}\n",
		"gen/kustomization.yaml":  "generators: [g.yaml]\n",
		"gen/g.yaml":              "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nliterals: [a=1]\n",
	}
	base, head := writeFiles(t, files, nil), writeFiles(t, files, nil)
	c := newRenderCache()
	c.content = newContentCache(maxSharedRenderBytes)
	opts := render.DefaultOptions()
	b, err := c.render(t.Context(), base, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.render(t.Context(), head, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	if c.misses != 1 || c.shared != 1 {
		t.Fatalf("base and head alike: %d renders, %d shared; want 1 and 1", c.misses, c.shared)
	}
	if len(h.Objects) != 1 || h.Objects[0].Obj == b.Objects[0].Obj {
		t.Fatalf("head must get its own copy of base's %d objects", len(b.Objects))
	}
	h.Objects[0].Obj.SetName("changed")
	if again, _ := newRenderCacheOn(c.content).render(t.Context(), base, "app", opts); again.Objects[0].Obj.GetName() != "cm" {
		t.Errorf("a change to one side's objects reached the cache")
	}

	// A change in the base's file (read through ../base) is another render.
	other := writeFiles(t, files, map[string]string{"base/cm.yaml": strings.Replace(files["base/cm.yaml"], "'1'", "'2'", 1)})
	if _, err := c.render(t.Context(), other, "app", opts); err != nil {
		t.Fatal(err)
	}
	if c.misses != 2 {
		t.Errorf("changed input: %d renders, want 2", c.misses)
	}
	// Unknown inputs (a generators: entry) are never shared.
	for _, root := range []string{base, head} {
		if _, err := c.render(t.Context(), root, "gen", opts); err != nil {
			t.Fatal(err)
		}
	}
	if c.misses != 4 {
		t.Errorf("unknown inputs: %d renders, want 4", c.misses)
	}
}

func newRenderCacheOn(cc *contentCache) *renderCache {
	c := newRenderCache()
	c.content = cc
	return c
}
