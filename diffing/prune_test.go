package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

const cmLegacy = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: legacy-flags
  namespace: shop
data:
  OLD_UI: "true"
`

const pvcCache = `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: cache
  namespace: shop
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 10Gi
`

const pvCache = `
apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-cache
spec:
  capacity:
    storage: 10Gi
  persistentVolumeReclaimPolicy: Delete
  claimRef:
    namespace: shop
    name: cache
`

func TestDiffPrune(t *testing.T) {
	runDiffCases(t, []diffCase{
		{
			name: "prune",
			in:   func(t *testing.T) Input { return Input{Base: set(t, cmLegacy)} },
			want: []string{"warning prune ConfigMap/shop/legacy-flags"},
		},
		{
			name: "prune-stateful without live has no data-loss",
			in:   func(t *testing.T) Input { return Input{Base: set(t, pvcCache)} },
			want: []string{"error prune-stateful PersistentVolumeClaim/shop/cache"},
		},
		{
			name: "data-loss of a pruned claim",
			in: func(t *testing.T) Input {
				live := liveState(t, pvcCache)
				live.Volumes[key("", "PersistentVolumeClaim", "shop", "cache")] = obj(t, pvCache)
				return Input{Base: set(t, pvcCache), Live: live}
			},
			want: []string{
				"error data-loss PersistentVolumeClaim/shop/cache",
				"error prune-stateful PersistentVolumeClaim/shop/cache",
			},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"deleted PersistentVolumeClaim/shop/cache live:deleted"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
				want := "Pruned: its volume `pv-cache` (10Gi) has reclaimPolicy Delete, so the data on it is destroyed."
				if got.Findings[0].Message != want {
					t.Errorf("data-loss message:\n got %s\nwant %s", got.Findings[0].Message, want)
				}
			},
		},
		{
			name: "a retained volume is no data-loss",
			in: func(t *testing.T) Input {
				live := liveState(t, pvcCache)
				pv := obj(t, pvCache)
				pv.Object["spec"].(map[string]any)["persistentVolumeReclaimPolicy"] = "Retain"
				live.Volumes[key("", "PersistentVolumeClaim", "shop", "cache")] = pv
				return Input{Base: set(t, pvcCache), Live: live}
			},
			want: []string{"error prune-stateful PersistentVolumeClaim/shop/cache"},
		},
		{
			name: "orphan when prune is off",
			in:   func(t *testing.T) Input { return Input{Base: set(t, pvcCache)} },
			opts: func(o *Options) { o.Prune = false },
			want: []string{"info orphan PersistentVolumeClaim/shop/cache"},
		},
		{
			name: "orphan protected by argo annotation in base",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep-me
  namespace: shop
  annotations:
    argocd.argoproj.io/sync-options: ServerSideApply=true,Prune=false
`)}
			},
			want: []string{"info orphan ConfigMap/shop/keep-me"},
		},
		{
			name: "orphan protected by helm keep on the live object",
			in: func(t *testing.T) Input {
				live := liveState(t, `
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: cache
  namespace: shop
  annotations:
    helm.sh/resource-policy: keep
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
`)
				live.Volumes[key("", "PersistentVolumeClaim", "shop", "cache")] = obj(t, pvCache)
				return Input{Base: set(t, pvcCache), Live: live}
			},
			want: []string{"info orphan PersistentVolumeClaim/shop/cache"},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"deleted PersistentVolumeClaim/shop/cache live:unchanged"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "orphan protected by flux annotation",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: keep-me
  namespace: shop
  annotations:
    kustomize.toolkit.fluxcd.io/prune: disabled
`)}
			},
			want: []string{"info orphan ConfigMap/shop/keep-me"},
		},
		{
			name: "a tracked live object absent from base is pruned",
			in: func(t *testing.T) Input {
				return Input{Live: liveState(t, cmLegacy)}
			},
			want: []string{"warning prune ConfigMap/shop/legacy-flags"},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"deleted ConfigMap/shop/legacy-flags live:deleted"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
				if got.Changes[0].LiveDiff == "" {
					t.Error("a live prune has no LiveDiff")
				}
			},
		},
		{
			name: "removing an object that is not live prunes nothing",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, cmLegacy), Live: liveState(t, "")}
			},
			want: []string{},
		},
		{
			name: "prune-cascade of a namespace",
			in: func(t *testing.T) Input {
				ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
				live := liveState(t, ns)
				live.Children[key("", "Namespace", "", "shop")] = Children{Total: 14, ByKind: map[string]int{
					"PersistentVolumeClaim": 2, "ConfigMap": 6, "Deployment": 5, "StatefulSet": 1,
				}}
				return Input{Base: set(t, ns), Live: live}
			},
			want: []string{
				"error prune-cascade Namespace/shop",
				"error prune-stateful Namespace/shop",
			},
			check: func(t *testing.T, got TargetReport) {
				want := "Pruning it deletes the 14 objects in the namespace too: 2 PersistentVolumeClaims, 1 StatefulSet, 6 ConfigMaps and 5 Deployments."
				if got.Findings[0].Message != want {
					t.Errorf("cascade message:\n got %s\nwant %s", got.Findings[0].Message, want)
				}
			},
		},
		{
			name: "prune-cascade of a CRD",
			in: func(t *testing.T) Input {
				crd := `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clusters.postgresql.cnpg.io
spec:
  group: postgresql.cnpg.io
  names: {kind: Cluster, plural: clusters}
  scope: Namespaced
`
				live := liveState(t, crd)
				live.Children[key("apiextensions.k8s.io", "CustomResourceDefinition", "", "clusters.postgresql.cnpg.io")] = Children{Total: 3, ByKind: map[string]int{"Cluster": 3}}
				return Input{Base: set(t, crd), Live: live}
			},
			want: []string{
				"error prune-cascade CustomResourceDefinition/clusters.postgresql.cnpg.io",
				"error prune-stateful CustomResourceDefinition/clusters.postgresql.cnpg.io",
			},
		},
		{
			name: "configured stateful kind",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata: {name: db, namespace: shop}\nspec: {instances: 3}\n")}
			},
			opts: func(o *Options) { o.StatefulKinds = append(o.StatefulKinds, gkCNPG) },
			want: []string{"error prune-stateful Cluster/shop/db"},
		},
	})
}

var gkCNPG = gkOf("postgresql.cnpg.io", "Cluster")

func TestPlural(t *testing.T) {
	got := []string{plural("ConfigMap", 2), plural("NetworkPolicy", 3), plural("Ingress", 2), plural("Endpoints", 2), plural("Gateway", 2), plural("Pod", 1)}
	want := []string{"ConfigMaps", "NetworkPolicies", "Ingresses", "Endpoints", "Gateways", "Pod"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plural (-want +got):\n%s", diff)
	}
}
