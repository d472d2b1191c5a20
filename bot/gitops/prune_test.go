package gitops

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

// homeLab is a Flux home-lab layout: Kustomization apps builds ./apps, a
// directory of namespaces whose kustomizations list each app's ks.yaml, and
// patches every Kustomization it applies (as home-ops' cluster-apps does);
// each app's Kustomization builds its app/ directory.
func homeLab(t *testing.T, extra map[string]string) string {
	files := map[string]string{
		"clusters/home/apps.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 1h
  path: ./apps
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
  patches:
    - patch: |-
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: _
        spec:
          targetNamespace: patched
      target:
        group: kustomize.toolkit.fluxcd.io
        kind: Kustomization
`,
		"apps/media/kustomization.yaml":            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: media\nresources:\n  - ./player/ks.yaml\n  - ./shelf/ks.yaml\n",
		"apps/media/player/ks.yaml":                ks("player", "./apps/media/player/app"),
		"apps/media/player/app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./configmap.yaml\n",
		"apps/media/player/app/configmap.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: player\ndata:\n  volume: \"3\"\n",
		"apps/media/shelf/ks.yaml":                 ks("shelf", "./apps/media/shelf/app"),
		"apps/media/shelf/app/kustomization.yaml":  "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./configmap.yaml\n",
		"apps/media/shelf/app/configmap.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shelf\ndata:\n  rows: \"3\"\n",
		"README.md":                                "# Home lab\n",
	}
	for p, c := range extra {
		files[p] = c
	}
	return writeFiles(t, files)
}

func ks(name, path string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
spec:
  interval: 1h
  path: ` + path + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
    namespace: flux-system
`
}

// pruneOptions are Discover's options with a counting real renderer and the
// inputs of one checkout (base and head alike in these tests), pruning for
// changed unless it is nil.
func pruneOptions(root string, changed []string) (Options, func() map[string]int) {
	var mu sync.Mutex
	renders := map[string]int{}
	opts := DefaultOptions()
	opts.RepoURLs = []string{fluxOrigin}
	opts.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		mu.Lock()
		renders[t.Name]++
		mu.Unlock()
		return realRenderer(ctx, root, t)
	}
	f := render.NewInputFinder(root)
	opts.Inputs = func(t config.Target) render.Inputs { return f.Find(t.Path, t.Render) }
	if changed != nil {
		opts.Prune = &Prune{Changed: changed}
	}
	return opts, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return renders
	}
}

// TestDeclaredKustomizationWaits: a Kustomization that a file declares and
// another Kustomization's build applies is rendered once, from the object as
// that build makes it (patched, in the namespace the kustomization sets), not
// first from the bare file (issue 25).
func TestDeclaredKustomizationWaits(t *testing.T) {
	root := homeLab(t, nil)
	opts, renders := pruneOptions(root, nil)
	res, err := Discover(t.Context(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"player", "shelf"} {
		i := slices.IndexFunc(res.Targets, func(t config.Target) bool { return t.Name == name })
		if i < 0 {
			t.Fatalf("no target %s in %v", name, targetNames(res.Targets))
		}
		if got := res.Targets[i]; got.Namespace != "patched" || got.Controller.Namespace != "media" {
			t.Errorf("%s: targetNamespace %q, namespace %q; want patched by apps, in media", name, got.Namespace, got.Controller.Namespace)
		}
		if n := renders()[name]; n != 1 {
			t.Errorf("%s rendered %d times, want once", name, n)
		}
	}
	if len(res.Pruned) != 0 {
		t.Errorf("pruned %v without Prune", res.Pruned)
	}
}

// TestPruneLeavesUnchangedUnsearched: with Prune, a change no render reads
// renders nothing, and the targets the files declare are listed where the
// renders would put them; a change to one app renders the Kustomization
// that applies it and that app only.
func TestPruneLeavesUnchangedUnsearched(t *testing.T) {
	root := homeLab(t, nil)
	full, _ := pruneOptions(root, nil)
	want, err := Discover(t.Context(), root, full)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		changed  []string
		rendered []string
	}{
		{changed: []string{"README.md"}},
		{changed: []string{"apps/media/player/app/configmap.yaml"}, rendered: []string{"apps", "player"}},
		// A change to what apps renders counts for every object it
		// declares: both apps render.
		{changed: []string{"apps/media/shelf/ks.yaml"}, rendered: []string{"apps", "player", "shelf"}},
	} {
		opts, renders := pruneOptions(root, tc.changed)
		res, err := Discover(t.Context(), root, opts)
		if err != nil {
			t.Fatal(err)
		}
		var rendered []string
		for name := range renders() {
			rendered = append(rendered, name)
		}
		slices.Sort(rendered)
		if !slices.Equal(rendered, tc.rendered) {
			t.Errorf("%v: rendered %v, want %v", tc.changed, rendered, tc.rendered)
		}
		type listed struct{ name, ns, cluster string }
		list := func(ts []config.Target) []listed {
			var out []listed
			for _, t := range ts {
				out = append(out, listed{t.Name, t.Controller.Namespace, t.Cluster})
			}
			return out
		}
		if got, w := list(res.Targets), list(want.Targets); !slices.Equal(got, w) {
			t.Errorf("%v: targets %v, want %v as a full search lists them", tc.changed, got, w)
		}
		for _, name := range []string{"player", "shelf", "apps"} {
			k := TargetKey("home", name)
			if res.Pruned[k] == slices.Contains(tc.rendered, name) {
				t.Errorf("%v: %s pruned %v, rendered %v", tc.changed, name, res.Pruned[k], slices.Contains(tc.rendered, name))
			}
		}
	}
}

// TestNeedsFullSearch: pruned searches are redone in full when an object
// other targets take from (a ConfigMap) differs between the sides, or when
// the sides left different targets unsearched.
func TestNeedsFullSearch(t *testing.T) {
	discover := func(root string, changed []string) *Result {
		opts, _ := pruneOptions(root, changed)
		res, err := Discover(t.Context(), root, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	settings := func(v string) map[string]string {
		return map[string]string{
			"apps/media/player/app/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  tz: " + v + "\n",
			"apps/media/player/app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ./configmap.yaml\n  - ./settings.yaml\n",
		}
	}
	changed := []string{"apps/media/player/app/settings.yaml"}
	base, head := discover(homeLab(t, settings("UTC")), changed), discover(homeLab(t, settings("CET")), changed)
	if len(base.Pruned) == 0 {
		t.Fatalf("nothing pruned: %v", targetNames(base.Targets))
	}
	if !NeedsFullSearch(base, head) {
		t.Errorf("a ConfigMap differs between the sides and the pruned searches stand")
	}
	same := discover(homeLab(t, settings("UTC")), changed)
	if NeedsFullSearch(base, same) {
		t.Errorf("alike sides need a full search")
	}
	other := discover(homeLab(t, settings("UTC")), []string{"apps/media/shelf/app/configmap.yaml"})
	if !NeedsFullSearch(base, other) {
		t.Errorf("sides that left different targets unsearched stand")
	}
}

// TestParsedOncePerContent: a file alike at base and head is parsed once
// for both discoveries, and each gets manifests of its own to change.
func TestParsedOncePerContent(t *testing.T) {
	var p Parsed
	doc := []byte(ks("player", "./apps/player"))
	a, _, err := p.parse("apps/ks.yaml", doc)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := p.parse("apps/ks.yaml", doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.files) != 1 || len(a) != 1 || len(b) != 1 {
		t.Fatalf("%d parses kept, %d and %d manifests; want 1, 1, 1", len(p.files), len(a), len(b))
	}
	a[0].Namespace, a[0].superseded = "media", true
	if b[0].Namespace != "" || b[0].superseded || b[0].Name != "player" {
		t.Errorf("the other side's manifest changed with this one's: %+v", *b[0])
	}
	if _, _, err := p.parse("other/ks.yaml", doc); err != nil || len(p.files) != 2 {
		t.Errorf("the same content at another path is parsed again: %d kept, %v", len(p.files), err)
	}
}
