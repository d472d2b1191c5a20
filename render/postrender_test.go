package render_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// postRenderChart is a chart with a Deployment, a Service, a hook Job and a CRD
// in crds/.
func postRenderChart(t *testing.T) string {
	return writeTree(t, map[string]string{
		"web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		"web/crds/crd.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`,
		"web/templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {app: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - {name: web, image: "nginx:1.27"}
`,
		"web/templates/svc.yaml": `apiVersion: v1
kind: Service
metadata: {name: {{ .Release.Name }}}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`,
		"web/templates/hook.yaml": `apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-upgrade}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: "busybox:1"}]
`,
	})
}

// TestHelmPostRenderers runs a HelmRelease's spec.postRenderers and
// spec.commonMetadata as helm-controller does (internal/postrender): the
// entries in order (the second patch sees the first's output), strategic merge
// and JSON6902 patches with targets, images, then commonMetadata on metadata
// only; CRDs of crds/ are not post-rendered, and objects keep their template
// as their source.
func TestHelmPostRenderers(t *testing.T) {
	root := postRenderChart(t)
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererHelm
	opts.Namespace = "web"
	opts.Helm.ReleaseName = "web"
	opts.Helm.PostRenderers = []render.PostRenderer{
		{
			Patches: []string{
				"patch: |\n  apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: not-used}\n  spec: {replicas: 3}\ntarget: {kind: Deployment, name: web}\n",
				"patch: |\n  - op: add\n    path: /metadata/annotations\n    value: {patched: first}\ntarget: {kind: Service}\n",
			},
			Images: []string{"nginx=registry.example.com/nginx:1.28"},
		},
		{
			// Sees the first entry's output: the annotation it added.
			Patches: []string{"patch: |\n  - op: replace\n    path: /metadata/annotations/patched\n    value: second\ntarget: {kind: Service, annotationSelector: patched=first}\n"},
		},
	}
	opts.Helm.CommonLabels = map[string]string{"team": "shop"}
	opts.Helm.CommonAnnotations = map[string]string{"owner": "shop@example.com"}
	set, err := render.Render(t.Context(), root, "web", opts)
	if err != nil {
		t.Fatal(err)
	}
	idx := set.Index()
	dep := idx[render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}]
	svc := idx[render.ObjectKey{Kind: "Service", Namespace: "web", Name: "web"}]
	crd := idx[render.ObjectKey{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}]
	if dep == nil || svc == nil || crd == nil {
		t.Fatalf("rendered %v", keys(set))
	}
	if n, _, _ := unstructured.NestedInt64(dep.Obj.Object, "spec", "replicas"); n != 3 {
		t.Errorf("replicas = %d, want 3 from the strategic merge patch", n)
	}
	c, _, _ := unstructured.NestedSlice(dep.Obj.Object, "spec", "template", "spec", "containers")
	if img := c[0].(map[string]any)["image"]; img != "registry.example.com/nginx:1.28" {
		t.Errorf("image = %v, want the post-renderer's images entry", img)
	}
	if diff := cmp.Diff(map[string]string{"app": "web", "team": "shop"}, dep.Obj.GetLabels()); diff != "" {
		t.Errorf("Deployment labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"owner": "shop@example.com"}, dep.Obj.GetAnnotations()); diff != "" {
		t.Errorf("Deployment annotations: commonMetadata only, no bookkeeping (-want +got):\n%s", diff)
	}
	// commonMetadata leaves selectors and pod templates alone.
	sel, _, _ := unstructured.NestedStringMap(dep.Obj.Object, "spec", "selector", "matchLabels")
	tl, _, _ := unstructured.NestedStringMap(dep.Obj.Object, "spec", "template", "metadata", "labels")
	if !cmp.Equal(sel, map[string]string{"app": "web"}) || !cmp.Equal(tl, map[string]string{"app": "web"}) {
		t.Errorf("selector %v, template labels %v: commonMetadata must not touch them", sel, tl)
	}
	if diff := cmp.Diff(map[string]string{"patched": "second", "owner": "shop@example.com"}, svc.Obj.GetAnnotations()); diff != "" {
		t.Errorf("Service annotations (-want +got):\n%s", diff)
	}
	if crd.Obj.GetLabels()["team"] != "" {
		t.Error("a CRD of crds/ was post-rendered; Helm post-renders the templates only")
	}
	if !strings.HasSuffix(dep.Source, "templates/deploy.yaml") || !strings.HasSuffix(svc.Source, "templates/svc.yaml") {
		t.Errorf("sources %q, %q: want the templates", dep.Source, svc.Source)
	}
	for _, k := range keys(set) {
		if strings.Contains(k, "Job/") {
			t.Errorf("hook %s is in the render", k)
		}
	}

	// A patch kustomize cannot apply fails the render, naming the entry, as
	// it fails the release.
	opts.Helm.PostRenderers = []render.PostRenderer{{Patches: []string{"patch: |\n  - op: replace\n    path: /spec/nothing/here\n    value: 1\ntarget: {kind: Service}\n"}}}
	_, err = render.Render(t.Context(), root, "web", opts)
	if err == nil || !strings.Contains(err.Error(), "spec.postRenderers[0].kustomize") {
		t.Fatalf("error = %v, want the failing post-renderer named", err)
	}
}
