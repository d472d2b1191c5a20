package live_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

// TestNoopApplySkipped: simulate answers an apply that changes nothing without
// running the field manager, and only such applies; an apply that surely changes
// a value is told apart before the objects are typed (mayContain), and canonical
// runs only where head is not canonical or the apply is client-side. For each case the prediction
// (object and conflicts) with the shortcut is the one of the full simulation
// without it, and the object is what the apiserver's dry-run stores (the oracle):
// defaulted fields, list items with merge keys, fields owned by others with the
// same or another value, replicas the HPA owns, removed fields, a quantity in
// another form, reordered list items, a custom resource and a client-side-applied
// object.
func TestNoopApplySkipped(t *testing.T) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, gadgetCRD))
	const manager = "kustomize-controller"
	web := func(ns, extra string) *unstructured.Unstructured {
		return testcluster.FromYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
        resources: {requests: {cpu: "1", memory: 1Gi}}
`+extra)
	}
	svc := func(ns string) *unstructured.Unstructured {
		return testcluster.FromYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: `+ns+`}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: metrics, port: 9090}]
`)
	}
	cm := func(ns string, data map[string]any) *unstructured.Unstructured {
		return configMap(t, ns, "settings", data)
	}
	for _, tc := range []struct {
		name string
		// seed makes live and returns base and head.
		seed func(ns string) (base, head *unstructured.Unstructured)
		skip bool
		// differs: the untyped test (mayContain) finds a value of head that
		// live lacks; canonical: the prediction needs canonical, for head is
		// not canonical or the apply is client-side (else it is skipped);
		// keeps: head sets every field the manager owns, so the apply is
		// simulated without the prune (keepsOwned).
		differs, canonical, keeps bool
	}{
		{name: "unchanged configmap", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1"})
			cluster.ApplyAs(ctx, t, b, manager)
			return b, cm(ns, map[string]any{"a": "1"})
		}},
		{name: "unchanged deployment with server defaults in list items", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			return web(ns, ""), web(ns, "")
		}},
		{name: "unchanged service with defaulted ports", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, svc(ns), manager)
			return svc(ns), svc(ns)
		}},
		{name: "unchanged custom resource with a list map", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, widget(t, ns, "w", 8080), manager)
			return widget(t, ns, "w", 8080), widget(t, ns, "w", 8080)
		}},
		{name: "another manager adds a key head does not set", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1"})
			cluster.ApplyAs(ctx, t, b, manager)
			cluster.EditAs(ctx, t, b, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "x", "data", "added")
			})
			return b, cm(ns, map[string]any{"a": "1"})
		}},
		{name: "another manager edited the value and back: head no longer owns it", seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1"})
			cluster.ApplyAs(ctx, t, b, manager)
			cluster.EditAs(ctx, t, b, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "2", "data", "a")
			})
			cluster.EditAs(ctx, t, b, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "1", "data", "a")
			})
			return b, cm(ns, map[string]any{"a": "1"})
		}},
		{name: "another manager applies the value head sets: shared", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1", "b": "2"})
			cluster.ApplyAs(ctx, t, b, manager)
			cluster.ApplyAs(ctx, t, cm(ns, map[string]any{"a": "1"}), "other-applier")
			return b, cm(ns, map[string]any{"a": "1", "b": "2"})
		}},
		{name: "kubectl edit that head reverts", differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1"})
			cluster.ApplyAs(ctx, t, b, manager)
			cluster.EditAs(ctx, t, b, "kubectl-edit", func(u *unstructured.Unstructured) {
				_ = unstructured.SetNestedField(u.Object, "2", "data", "a")
			})
			return b, cm(ns, map[string]any{"a": "1"})
		}},
		{name: "hpa owns replicas head sets to another value", keeps: true, differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			cluster.ScaleAs(ctx, t, web(ns, ""), 7, "kube-controller-manager")
			return web(ns, ""), web(ns, "")
		}},
		{name: "hpa owns replicas head sets to the same value", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			cluster.ScaleAs(ctx, t, web(ns, ""), 2, "kube-controller-manager")
			return web(ns, ""), web(ns, "")
		}},
		{name: "head drops replicas the hpa took over", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			cluster.ScaleAs(ctx, t, web(ns, ""), 7, "kube-controller-manager")
			h := web(ns, "")
			unstructured.RemoveNestedField(h.Object, "spec", "replicas")
			return web(ns, ""), h
		}},
		{name: "head removes a key", seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1", "b": "2"})
			cluster.ApplyAs(ctx, t, b, manager)
			return b, cm(ns, map[string]any{"a": "1"})
		}},
		{name: "head removes a list item", seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, svc(ns), manager)
			h := svc(ns)
			_ = unstructured.SetNestedSlice(h.Object, []any{map[string]any{"name": "http", "port": int64(80)}}, "spec", "ports")
			return svc(ns), h
		}},
		{name: "head changes an image", keeps: true, differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			h := web(ns, "")
			setContainer(h, map[string]any{"image": "nginx:1.28"})
			return web(ns, ""), h
		}},
		{name: "head writes a quantity in another form", keeps: true, differs: true, canonical: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			h := web(ns, "")
			setContainer(h, map[string]any{"resources": map[string]any{"requests": map[string]any{"cpu": "1000m", "memory": "1024Mi"}}})
			return web(ns, ""), h
		}},
		{name: "head reorders list items with merge keys", keeps: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			h := web(ns, "")
			setContainer(h, map[string]any{"env": []any{map[string]any{"name": "B", "value": "2"}, map[string]any{"name": "A", "value": "1"}}})
			return web(ns, ""), h
		}},
		{name: "head adds a key", differs: true, keeps: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			b := cm(ns, map[string]any{"a": "1"})
			cluster.ApplyAs(ctx, t, b, manager)
			return b, cm(ns, map[string]any{"a": "1", "b": "2"})
		}},
		{name: "head adds an env var and removes nothing", differs: true, keeps: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			h := web(ns, "")
			setContainer(h, map[string]any{"env": []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": "2"}, map[string]any{"name": "C", "value": "3"}}})
			return web(ns, ""), h
		}},
		{name: "head changes an image and drops an env var: pruned", differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			h := web(ns, "")
			setContainer(h, map[string]any{
				"image": "nginx:1.28",
				"env":   []any{map[string]any{"name": "A", "value": "1"}},
			})
			return web(ns, ""), h
		}},
		{name: "hpa owns replicas, head changes an image and drops a label: pruned, with a conflict", differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, web(ns, ""), manager)
			cluster.ScaleAs(ctx, t, web(ns, ""), 7, "kube-controller-manager")
			h := web(ns, "")
			unstructured.RemoveNestedField(h.Object, "metadata", "labels")
			setContainer(h, map[string]any{"image": "nginx:1.28"})
			return web(ns, ""), h
		}},
		// A field head sets to {} that the server filled with defaults no
		// manager owns, one of them an empty set list: the prune takes the
		// defaults away and then the field itself (emptiedOverFilled), so
		// neither shortcut may answer for it (both did before review; the
		// full simulation and dry-run agree).
		{name: "empty object over a defaulted one, image changed", differs: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, gadget(t, ns, "v1"), manager)
			return gadget(t, ns, "v1"), gadget(t, ns, "v2")
		}},
		{name: "empty object over a defaulted one, unchanged", seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, gadget(t, ns, "v1"), manager)
			return gadget(t, ns, "v1"), gadget(t, ns, "v1")
		}},
		{name: "head adds a status", skip: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, svc(ns), manager)
			h := svc(ns)
			h.Object["status"] = map[string]any{}
			return svc(ns), h
		}},
		{name: "client-side-applied object", canonical: true, seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ClientSideApplyAs(ctx, t, cm(ns, map[string]any{"a": "1"}), manager)
			return cm(ns, map[string]any{"a": "1"}), cm(ns, map[string]any{"a": "1"})
		}},
		{name: "applied by another manager only", seed: func(ns string) (*unstructured.Unstructured, *unstructured.Unstructured) {
			cluster.ApplyAs(ctx, t, cm(ns, map[string]any{"a": "1"}), "helm-controller")
			return cm(ns, map[string]any{"a": "1"}), cm(ns, map[string]any{"a": "1"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cluster.Namespace(t)
			base, head := tc.seed(ns)
			k := render.KeyOf(head)
			o := opts(ns)
			o.Manager = manager
			var differs, canonicalSkipped, pruneSkipped int64
			read := func(mode diffing.LiveMode, skip bool) (*diffing.LiveState, int64) {
				defer live.SetShortcuts(skip)()
				o.Mode = mode
				_, before := live.Simulations()
				d0, c0 := live.Shortcuts()
				p0 := live.PruneSkips()
				st := mustRead(t, reader(t, nil), set(base), set(head), o)
				_, after := live.Simulations()
				d1, c1 := live.Shortcuts()
				differs, canonicalSkipped, pruneSkipped = d1-d0, c1-c0, live.PruneSkips()-p0
				if p := st.Predictions[k]; p.Err != nil || p.Object == nil {
					t.Fatalf("%s prediction: %+v", mode, p)
				}
				return st, after - before
			}
			fast, skipped := read(live.ModeSimulate, true)
			if got := skipped == 1; got != tc.skip {
				t.Errorf("apply skipped as a no-op: %v, want %v", got, tc.skip)
			}
			// A no-op's prediction is the live object itself, not a copy.
			if got := fast.Predictions[k].Object == fast.Objects[k]; got != tc.skip {
				t.Errorf("prediction is the live object: %v, want %v", got, tc.skip)
			}
			if got := differs == 1; got != tc.differs {
				t.Errorf("no-op test answered untyped (a value of head not live): %v, want %v", got, tc.differs)
			}
			if got := canonicalSkipped == 0 && !tc.skip; got != tc.canonical {
				t.Errorf("prediction made canonical: %v, want %v", got, tc.canonical)
			}
			if got := pruneSkipped == 1; got != tc.keeps {
				t.Errorf("apply simulated without the prune: %v, want %v", got, tc.keeps)
			}
			full, _ := read(live.ModeSimulate, false)
			server, _ := read(live.ModeDryRun, false)
			applyTimes(fast)
			applyTimes(full)
			if diff := cmp.Diff(full, fast); diff != "" {
				t.Errorf("prediction (-full simulation +with the no-op shortcut):\n%s", diff)
			}
			fp, sp := fast.Predictions[k], server.Predictions[k]
			if diff := cmp.Diff(stored(sp.Object), stored(fp.Object)); diff != "" {
				t.Errorf("prediction is not what the server stores (-dry-run +simulate):\n%s", diff)
			}
			if diff := cmp.Diff(norm(sp.Conflicts), norm(fp.Conflicts), equateEmpty); diff != "" {
				t.Errorf("conflicts (-dry-run +simulate):\n%s", diff)
			}
		})
	}
}

// gadgetCRD has a struct field whose defaults no manager owns, one of them an
// empty set list, which no path of a field set records (emptiedOverFilled).
// With an atomic list (recorded as itself) the prune keeps the field.
const gadgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.live.example.com}
spec:
  group: live.example.com
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
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
              image: {type: string}
              p:
                type: object
                properties:
                  z: {type: string, default: d}
                  "y": {type: array, x-kubernetes-list-type: set, items: {type: string}, default: []}
`

func gadget(t testing.TB, ns, image string) *unstructured.Unstructured {
	t.Helper()
	return testcluster.FromYAML(t, `
apiVersion: live.example.com/v1
kind: Gadget
metadata: {name: g, namespace: `+ns+`}
spec:
  image: `+image+`
  p: {}
`)
}

// setContainer sets fields of the first container of a Deployment's pod
// template.
func setContainer(d *unstructured.Unstructured, fields map[string]any) {
	c, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for k, v := range fields {
		c[0].(map[string]any)[k] = v
	}
	_ = unstructured.SetNestedSlice(d.Object, c, "spec", "template", "spec", "containers")
}
