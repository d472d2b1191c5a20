package live_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

func deployment(t testing.TB, ns string, replicas int64, app string) *unstructured.Unstructured {
	t.Helper()
	d := testcluster.FromYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`}
spec:
  selector: {matchLabels: {app: `+app+`}}
  template:
    metadata: {labels: {app: `+app+`}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
`)
	_ = unstructured.SetNestedField(d.Object, replicas, "spec", "replicas")
	return d
}

func configMap(t testing.TB, ns, name string, data map[string]any) *unstructured.Unstructured {
	t.Helper()
	cm := testcluster.FromYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: `+name+`, namespace: `+ns+`}
`)
	_ = unstructured.SetNestedField(cm.Object, data, "data")
	return cm
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.live.example.com}
spec:
  group: live.example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
`

func widget(t testing.TB, ns, name string, httpPort int64) *unstructured.Unstructured {
	t.Helper()
	w := testcluster.FromYAML(t, `
apiVersion: live.example.com/v1
kind: Widget
metadata: {name: `+name+`, namespace: `+ns+`}
spec:
  size: 3
  ports: [{name: metrics, port: 9090}]
`)
	ports, _, _ := unstructured.NestedSlice(w.Object, "spec", "ports")
	ports = append(ports, map[string]any{"name": "http", "port": httpPort})
	_ = unstructured.SetNestedSlice(w.Object, ports, "spec", "ports")
	return w
}

// scenario seeds live state in ns and returns head plus the expected prediction.
type scenario struct {
	name string
	// seed prepares live state and returns head, the expected conflicts (given the
	// live object) and a check of the predicted object.
	seed func(ctx context.Context, t *testing.T, ns string) (head *unstructured.Unstructured, want func(live *unstructured.Unstructured) []diffing.Conflict, check func(t *testing.T, predicted *unstructured.Unstructured))
}

// conflictScenarios are shared by simulate and dry-run: both must report the same.
var conflictScenarios = []scenario{
	{
		name: "hpa owns replicas through the scale subresource",
		seed: func(ctx context.Context, t *testing.T, ns string) (*unstructured.Unstructured, func(*unstructured.Unstructured) []diffing.Conflict, func(*testing.T, *unstructured.Unstructured)) {
			cluster.ApplyAs(ctx, t, deployment(t, ns, 2, "web"), "kustomize-controller")
			cluster.ScaleAs(ctx, t, deployment(t, ns, 2, "web"), 7, "kube-controller-manager")
			want := func(*unstructured.Unstructured) []diffing.Conflict {
				// The apiserver records no time for writes through the scale subresource.
				return []diffing.Conflict{{Path: "/spec/replicas", Manager: "kube-controller-manager", Operation: "Update", Live: int64(7), Head: int64(3)}}
			}
			return deployment(t, ns, 3, "web"), want, func(t *testing.T, p *unstructured.Unstructured) {
				if r, _, _ := unstructured.NestedInt64(p.Object, "spec", "replicas"); r != 3 {
					t.Errorf("predicted replicas = %d, want 3 (forced)", r)
				}
			}
		},
	},
	{
		name: "kubectl edit of a configmap key",
		seed: func(ctx context.Context, t *testing.T, ns string) (*unstructured.Unstructured, func(*unstructured.Unstructured) []diffing.Conflict, func(*testing.T, *unstructured.Unstructured)) {
			cm := configMap(t, ns, "settings", map[string]any{"color": "blue", "app.properties": "a=1"})
			cluster.ApplyAs(ctx, t, cm, "kustomize-controller")
			cluster.EditAs(ctx, t, cm, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "red", "data", "color")
				_ = unstructured.SetNestedField(u.Object, "a=2", "data", "app.properties")
			})
			want := func(l *unstructured.Unstructured) []diffing.Conflict {
				at := managerTime(t, l, "kubectl-edit")
				if at == nil {
					t.Fatalf("live object has no kubectl-edit time")
				}
				return []diffing.Conflict{
					{Path: "/data/app.properties", Manager: "kubectl-edit", Operation: "Update", Time: at, Live: "a=2", Head: "a=3"},
					{Path: "/data/color", Manager: "kubectl-edit", Operation: "Update", Time: at, Live: "red", Head: "green"},
				}
			}
			head := configMap(t, ns, "settings", map[string]any{"color": "green", "app.properties": "a=3"})
			return head, want, func(t *testing.T, p *unstructured.Unstructured) {
				got, _, _ := unstructured.NestedStringMap(p.Object, "data")
				if diff := cmp.Diff(map[string]string{"color": "green", "app.properties": "a=3"}, got); diff != "" {
					t.Errorf("predicted data (-want +got):\n%s", diff)
				}
			}
		},
	},
	{
		name: "an edit to the value head sets anyway is no conflict",
		seed: func(ctx context.Context, t *testing.T, ns string) (*unstructured.Unstructured, func(*unstructured.Unstructured) []diffing.Conflict, func(*testing.T, *unstructured.Unstructured)) {
			cm := configMap(t, ns, "same", map[string]any{"color": "blue"})
			cluster.ApplyAs(ctx, t, cm, "kustomize-controller")
			cluster.EditAs(ctx, t, cm, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "red", "data", "color")
			})
			return configMap(t, ns, "same", map[string]any{"color": "red"}), func(*unstructured.Unstructured) []diffing.Conflict { return nil }, nil
		},
	},
	{
		name: "custom resource list-map entry patched by another manager",
		seed: func(ctx context.Context, t *testing.T, ns string) (*unstructured.Unstructured, func(*unstructured.Unstructured) []diffing.Conflict, func(*testing.T, *unstructured.Unstructured)) {
			w := widget(t, ns, "w", 8080)
			cluster.ApplyAs(ctx, t, w, "kustomize-controller")
			cluster.EditAs(ctx, t, w, "kubectl-patch", func(u *unstructured.Unstructured) {
				ports, _, _ := unstructured.NestedSlice(u.Object, "spec", "ports")
				ports[1].(map[string]any)["port"] = int64(8081)
				_ = unstructured.SetNestedSlice(u.Object, ports, "spec", "ports")
			})
			want := func(l *unstructured.Unstructured) []diffing.Conflict {
				// The key-matched entry is index 1 in head: the schema's list-map keys,
				// read from OpenAPI v3, make ports merge by name, not atomically.
				return []diffing.Conflict{{Path: "/spec/ports/1/port", Manager: "kubectl-patch", Operation: "Update", Time: managerTime(t, l, "kubectl-patch"), Live: int64(8081), Head: int64(8000)}}
			}
			return widget(t, ns, "w", 8000), want, func(t *testing.T, p *unstructured.Unstructured) {
				if size, _, _ := unstructured.NestedInt64(p.Object, "spec", "size"); size != 3 {
					t.Errorf("predicted size = %d, want 3", size)
				}
			}
		},
	},
	{
		name: "client-side-applied object is upgraded, no bogus conflicts",
		seed: func(ctx context.Context, t *testing.T, ns string) (*unstructured.Unstructured, func(*unstructured.Unstructured) []diffing.Conflict, func(*testing.T, *unstructured.Unstructured)) {
			cm := configMap(t, ns, "csa", map[string]any{"color": "blue", "size": "large"})
			cm.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"csa","namespace":"` + ns + `"},"data":{"color":"blue","size":"large"}}`})
			cluster.CreateAs(ctx, t, cm, "kubectl-client-side-apply")
			return configMap(t, ns, "csa", map[string]any{"color": "green", "size": "small"}), func(*unstructured.Unstructured) []diffing.Conflict { return nil },
				func(t *testing.T, p *unstructured.Unstructured) {
					got, _, _ := unstructured.NestedStringMap(p.Object, "data")
					if diff := cmp.Diff(map[string]string{"color": "green", "size": "small"}, got); diff != "" {
						t.Errorf("predicted data (-want +got):\n%s", diff)
					}
				}
		},
	},
}

func runScenarios(t *testing.T, mode diffing.LiveMode) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	r := reader(t, nil)
	for _, sc := range conflictScenarios {
		t.Run(sc.name, func(t *testing.T) {
			ns := cluster.Namespace(t)
			head, want, check := sc.seed(ctx, t, ns)
			o := opts(ns)
			o.Mode = mode
			st := mustRead(t, r, set(head), set(head), o)
			k := render.KeyOf(head)
			l := st.Objects[k]
			if l == nil {
				t.Fatalf("no live object for %s; have %v", k, st.Objects)
			}
			p, ok := st.Predictions[k]
			if !ok {
				t.Fatalf("no prediction for %s", k)
			}
			if p.Err != nil {
				t.Fatalf("prediction error: %v", p.Err)
			}
			if diff := cmp.Diff(norm(want(l)), norm(p.Conflicts), equateEmpty); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			if check != nil {
				check(t, p.Object)
			}
		})
	}
}

func TestSimulate(t *testing.T) { runScenarios(t, live.ModeSimulate) }

func TestSimulateObjectNotLive(t *testing.T) {
	ns := cluster.Namespace(t)
	head := configMap(t, ns, "new", map[string]any{"a": "b"})
	st := mustRead(t, reader(t, nil), set(), set(head), opts(ns))
	p := st.Predictions[render.KeyOf(head)]
	if diff := cmp.Diff(diffing.Prediction{Object: head}, p); diff != "" {
		t.Errorf("prediction (-want +got):\n%s", diff)
	}
	if len(st.Objects) != 0 {
		t.Errorf("objects = %v, want none", st.Objects)
	}
}

func TestSimulateUnservedKind(t *testing.T) {
	ns := cluster.Namespace(t)
	head := testcluster.FromYAML(t, `
apiVersion: notyet.example.com/v1
kind: Gadget
metadata: {name: g, namespace: `+ns+`}
spec: {x: 1}
`)
	st := mustRead(t, reader(t, nil), set(), set(head), opts(ns))
	if diff := cmp.Diff(diffing.Prediction{Object: head}, st.Predictions[render.KeyOf(head)]); diff != "" {
		t.Errorf("prediction (-want +got):\n%s", diff)
	}
}

func TestSimulateMasksSecrets(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	sec := testcluster.FromYAML(t, `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: `+ns+`}
stringData: {password: hunter2-live}
`)
	cluster.ApplyAs(ctx, t, sec, "kustomize-controller")
	head := testcluster.FromYAML(t, `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: `+ns+`}
data: {password: aHVudGVyMi1oZWFk}
`)
	st := mustRead(t, reader(t, nil), set(head), set(head), opts(ns))
	p := st.Predictions[render.KeyOf(head)]
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	got, _, _ := unstructured.NestedStringMap(p.Object.Object, "data")
	if diff := cmp.Diff(map[string]string{"password": diffing.MaskedValue}, got); diff != "" {
		t.Errorf("predicted secret data (-want +got):\n%s", diff)
	}
}
