package render_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

// printed renders a set the way the CLI prints it, with notes appended as comments.
func printed(t *testing.T, set render.ObjectSet) string {
	t.Helper()
	var b bytes.Buffer
	if err := render.WriteYAML(&b, set.Objects); err != nil {
		t.Fatalf("WriteYAML: %v", err)
	}
	for _, n := range set.Notes {
		fmt.Fprintf(&b, "# note: %s\n", n)
	}
	return b.String()
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name   string
		root   string
		target string
		opts   func(*render.Options)
	}{
		{
			name:   "kustomize",
			root:   "testdata/kustomize",
			target: "overlays/prod",
		},
		{
			name:   "kustomize-overrides",
			root:   "testdata/kustomize",
			target: "overlays/prod",
			opts: func(o *render.Options) {
				o.Kustomize = render.KustomizeOptions{
					NameSuffix:        "-v2",
					Namespace:         "shop-canary",
					Images:            []string{"nginx=registry.example.com/nginx:1.28"},
					CommonLabels:      map[string]string{"track": "canary"},
					CommonAnnotations: map[string]string{"owner": "team-shop"},
					Patches: []string{`target: {kind: Service}
patch: |-
  - op: add
    path: /spec/type
    value: NodePort`},
				}
			},
		},
		{
			// Flux's commonMetadata: each object's own labels and annotations,
			// never the pod template's (issue 24).
			name:   "kustomize-flux-common-metadata",
			root:   "testdata/kustomize",
			target: "overlays/prod",
			opts: func(o *render.Options) {
				o.Kustomize = render.KustomizeOptions{
					CommonLabels:            map[string]string{"team": "shop"},
					CommonAnnotations:       map[string]string{"owner": "team-shop"},
					MetadataOnlyAnnotations: true,
				}
			},
		},
		{
			// No kustomization.yaml: generated the way kustomize-controller does.
			name:   "kustomize-flux-generated",
			root:   "testdata/fluxgen",
			target: "apps",
			opts:   func(o *render.Options) { o.Renderer = render.RendererKustomize },
		},
		{
			name:   "helm",
			root:   "testdata/helm",
			target: "chart",
			opts: func(o *render.Options) {
				o.Namespace = "shop"
				o.Helm.ValuesFiles = []string{"values-prod.yaml"}
				o.Helm.Values = map[string]any{"service": map[string]any{"port": 8080}}
			},
		},
		{
			name:   "helm-skipcrds",
			root:   "testdata/helm",
			target: "chart",
			opts: func(o *render.Options) {
				o.Helm.ReleaseName = "web"
				o.Helm.SkipCRDs = true
				o.Helm.KubeVersion = "v1.33.1"
			},
		},
		{
			name:   "plain",
			root:   "testdata/plain",
			target: "manifests",
			opts:   func(o *render.Options) { o.Namespace = "shop" },
		},
		{
			name:   "plain-recurse",
			root:   "testdata/plain",
			target: "manifests",
			opts: func(o *render.Options) {
				o.Plain.Recurse = true
				o.Plain.Exclude = []string{"settings.yaml"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			opts := render.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			set, err := render.Render(ctx, tc.root, tc.target, opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for i := 1; i < len(set.Objects); i++ {
				if set.Objects[i-1].Key.Compare(set.Objects[i].Key) > 0 {
					t.Errorf("objects not sorted: %s before %s", set.Objects[i-1].Key, set.Objects[i].Key)
				}
			}
			golden.Check(t, filepath.Join("testdata", tc.name+".golden.yaml"), []byte(printed(t, set)))
		})
	}
}

func TestRenderAutoDetect(t *testing.T) {
	tests := []struct {
		root, target string
		wantSource   string // of the first object
	}{
		{"testdata/kustomize", "overlays/prod", "overlays/prod/kustomization.yaml"},
		{"testdata/helm", "chart", "shop/crds/widgets.yaml"},
		{"testdata/plain", "manifests", "manifests/list.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			set, err := render.Render(t.Context(), tc.root, tc.target, render.Options{})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			var sources []string
			for _, o := range set.Objects {
				sources = append(sources, o.Source)
			}
			if !strings.Contains(strings.Join(sources, "\n"), tc.wantSource) {
				t.Errorf("no object from %s; sources:\n%s", tc.wantSource, strings.Join(sources, "\n"))
			}
		})
	}
}

// TestKustomizeGeneratedEdges: an empty directory builds to nothing (Flux's
// placeholder namespace), and the checkout root itself can be the target.
func TestKustomizeGeneratedEdges(t *testing.T) {
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererKustomize
	set, err := render.Render(t.Context(), "testdata/fluxgen", "apps/empty", opts)
	if err != nil {
		t.Fatalf("Render(apps/empty): %v", err)
	}
	if len(set.Objects) != 0 {
		t.Errorf("apps/empty rendered %d objects, want none", len(set.Objects))
	}
	root, err := render.Render(t.Context(), "testdata/fluxgen", ".", opts)
	if err != nil {
		t.Fatalf("Render(.): %v", err)
	}
	apps, err := render.Render(t.Context(), "testdata/fluxgen", "apps", opts)
	if err != nil {
		t.Fatalf("Render(apps): %v", err)
	}
	if g, w := printed(t, root), printed(t, apps); g != w {
		t.Errorf("the root renders\n%s\nwant the same as apps/:\n%s", g, w)
	}
}
