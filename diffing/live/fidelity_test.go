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

// TestSimulateIsWhatTheServerStores puts the simulated prediction next to what the
// apiserver stores when the controller really applies head the way it does (the
// oracle): client-side apply for Argo CD's default sync, server-side apply with
// force for Argo CD's ServerSideApply=true, kustomize-controller and
// helm-controller, each with the tracking marks the controller writes. The
// prediction must equal the stored object (without server-set metadata), and a head
// equal to what is live must predict no change at all.
func TestSimulateIsWhatTheServerStores(t *testing.T) {
	ctx := context.Background()
	type apply func(ns string, obj *unstructured.Unstructured) *unstructured.Unstructured
	csa := func(manager string) apply {
		return func(_ string, obj *unstructured.Unstructured) *unstructured.Unstructured {
			return cluster.ClientSideApplyAs(ctx, t, obj, manager)
		}
	}
	ssa := func(manager string) apply {
		return func(_ string, obj *unstructured.Unstructured) *unstructured.Unstructured {
			return cluster.ApplyAs(ctx, t, obj, manager)
		}
	}
	web := func(ns, labels, cpu string) *unstructured.Unstructured {
		return testcluster.FromYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`, labels: {`+labels+`}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        resources: {requests: {cpu: "`+cpu+`", memory: 1024Mi}}
`)
	}
	// A new list item would need API defaulting, which simulate does not run
	// (README: Live comparison), so the Service keeps its port.
	svc := func(ns, app string) *unstructured.Unstructured {
		return testcluster.FromYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: `+ns+`}
spec:
  selector: {app: `+app+`}
  ports: [{name: http, port: 80}]
`)
	}
	for _, tc := range []struct {
		name    string
		manager string
		// marks are the tracking labels (l) and annotations (a) the controller
		// writes, as upstream documents them; ns is replaced.
		marks    func(ns string) (l, a map[string]string)
		tracking func(ns string) live.Tracking
		apply    apply
		// base is what is live (applied by the controller, with marks); head is
		// the PR.
		base, head func(ns string) *unstructured.Unstructured
	}{
		{
			name: "argocd-client-side-noop", manager: "argocd-controller", apply: csa("argocd-controller"),
			marks: func(ns string) (map[string]string, map[string]string) {
				return nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:" + ns + "/web"}
			},
			tracking: func(ns string) live.Tracking { return live.Tracking{ArgoApp: "shop", ArgoDestNamespace: ns} },
			base:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "2000m") },
			head:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "2000m") },
		},
		{
			// A label base set and head drops is removed; the server defaults
			// (progressDeadlineSeconds, strategy, dnsPolicy…) in neither stay.
			name: "argocd-client-side-removes-label", manager: "argocd-controller", apply: csa("argocd-controller"),
			marks: func(ns string) (map[string]string, map[string]string) {
				return nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:" + ns + "/web"}
			},
			tracking: func(ns string) live.Tracking { return live.Tracking{ArgoApp: "shop", ArgoDestNamespace: ns} },
			base:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web, team: shop", "2") },
			head:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "500m") },
		},
		{
			name: "argocd-label-tracking-service", manager: "argocd-controller", apply: csa("argocd-controller"),
			marks: func(string) (map[string]string, map[string]string) {
				return map[string]string{"app.kubernetes.io/instance": "shop"}, nil
			},
			tracking: func(ns string) live.Tracking {
				return live.Tracking{ArgoApp: "shop", ArgoMethod: live.ArgoTrackingLabel, ArgoDestNamespace: ns}
			},
			base: func(ns string) *unstructured.Unstructured { return svc(ns, "web") },
			head: func(ns string) *unstructured.Unstructured { return svc(ns, "web-v2") },
		},
		{
			name: "argocd-server-side-noop", manager: "argocd-controller", apply: ssa("argocd-controller"),
			marks: func(ns string) (map[string]string, map[string]string) {
				return map[string]string{"app.kubernetes.io/instance": "shop"},
					map[string]string{"argocd.argoproj.io/tracking-id": "shop:apps/Deployment:" + ns + "/web"}
			},
			tracking: func(ns string) live.Tracking {
				return live.Tracking{ArgoApp: "shop", ArgoMethod: live.ArgoTrackingAnnotationAndLabel, ArgoDestNamespace: ns}
			},
			base: func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "2000m") },
			head: func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "2000m") },
		},
		{
			name: "flux-kustomization-noop", manager: "kustomize-controller", apply: ssa("kustomize-controller"),
			marks: func(string) (map[string]string, map[string]string) {
				return map[string]string{"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil
			},
			tracking: func(string) live.Tracking { return live.Tracking{FluxName: "shop", FluxNamespace: "flux-system"} },
			base:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "1") },
			head:     func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "1000m") },
		},
		{
			name: "flux-helmrelease-noop", manager: "helm-controller", apply: ssa("helm-controller"),
			marks: func(ns string) (map[string]string, map[string]string) {
				return map[string]string{
						"helm.toolkit.fluxcd.io/name": "shop", "helm.toolkit.fluxcd.io/namespace": "flux-system",
						"app.kubernetes.io/managed-by": "Helm",
					}, map[string]string{
						"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": ns,
					}
			},
			tracking: func(ns string) live.Tracking {
				return live.Tracking{HelmRelease: "shop", HelmNamespace: ns, FluxHelmName: "shop", FluxHelmNamespace: "flux-system"}
			},
			base: func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "250m") },
			head: func(ns string) *unstructured.Unstructured { return web(ns, "tier: web", "0.25") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cluster.Namespace(t)
			mark := func(u *unstructured.Unstructured) *unstructured.Unstructured {
				u = u.DeepCopy()
				l, a := tc.marks(ns)
				labels, ann := u.GetLabels(), u.GetAnnotations()
				if labels == nil {
					labels = map[string]string{}
				}
				if ann == nil {
					ann = map[string]string{}
				}
				for k, v := range l {
					labels[k] = v
				}
				for k, v := range a {
					ann[k] = v
				}
				u.SetLabels(labels)
				if len(ann) > 0 {
					u.SetAnnotations(ann)
				}
				return u
			}
			base, head := tc.base(ns), tc.head(ns)
			liveObj := tc.apply(ns, mark(base))
			o := opts(ns)
			o.Manager = tc.manager
			o.Tracking = tc.tracking(ns)
			st := mustRead(t, reader(t, nil), set(base), set(head), o)
			pred := st.Predictions[render.KeyOf(head)]
			if pred.Err != nil || pred.Object == nil {
				t.Fatalf("prediction: %+v", pred)
			}
			if len(pred.Conflicts) > 0 {
				t.Errorf("conflicts with the controller itself: %+v", pred.Conflicts)
			}
			sameHead := cmp.Equal(diffing.Normalize(base).Object, diffing.Normalize(head).Object)
			if sameHead {
				if diff := cmp.Diff(stored(liveObj), stored(pred.Object)); diff != "" {
					t.Errorf("a head equal to what is live predicts a change (-live +predicted):\n%s", diff)
				}
			}
			real := tc.apply(ns, mark(head))
			if diff := cmp.Diff(stored(real), stored(pred.Object)); diff != "" {
				t.Errorf("the prediction is not what the server stores after the controller's apply (-server +predicted):\n%s", diff)
			}
		})
	}
}

// stored is an object as the report compares it: without server-set metadata.
func stored(u *unstructured.Unstructured) map[string]any {
	return diffing.Normalize(u).Object
}
