package diffing

import (
	"strings"
	"testing"
)

const appShop = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
  namespace: argocd
  finalizers: [resources-finalizer.argocd.argoproj.io]
spec:
  project: default
  source: {repoURL: https://example.com/deploy.git, path: apps/shop}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
`

const appShopLive = appShop + `
status:
  resources:
    - {kind: Deployment, namespace: shop, name: web, group: apps}
    - {kind: PersistentVolumeClaim, namespace: shop, name: data}
    - {kind: ConfigMap, namespace: shop, name: settings}
    - {kind: ConfigMap, namespace: shop, name: flags}
`

const ksApps = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  prune: PRUNE
  path: ./apps
  sourceRef: {kind: GitRepository, name: flux-system}
status:
  inventory:
    entries:
      - {id: shop_web_apps_Deployment, v: v1}
      - {id: shop_data__PersistentVolumeClaim, v: v1}
`

// TestDiffControllerCascade: removing a GitOps controller object from an
// app-of-apps prunes everything it deploys, which the file diff does not show.
func TestDiffControllerCascade(t *testing.T) {
	runDiffCases(t, []diffCase{
		{
			name: "argo application with resources finalizer",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, appShop), Live: liveState(t, appShopLive)}
			},
			want: []string{
				"error prune-cascade Application/argocd/shop",
				"warning prune Application/argocd/shop",
			},
			check: func(t *testing.T, got TargetReport) {
				msg := got.Findings[0].Message
				if !strings.Contains(msg, "4 live objects, 1 PersistentVolumeClaim, 2 ConfigMaps and 1 Deployment") {
					t.Errorf("cascade must count the live resources, stateful first: %s", msg)
				}
			},
		},
		{
			name: "argo application without live state",
			in:   func(t *testing.T) Input { return Input{Base: set(t, appShop)} },
			want: []string{
				"error prune-cascade Application/argocd/shop",
				"warning prune Application/argocd/shop",
			},
		},
		{
			name: "argo application without finalizer",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, strings.Replace(appShop, "  finalizers: [resources-finalizer.argocd.argoproj.io]\n", "", 1))}
			},
			want: []string{"warning prune Application/argocd/shop"},
		},
		{
			name: "flux kustomization with prune",
			in: func(t *testing.T) Input {
				y := strings.Replace(ksApps, "PRUNE", "true", 1)
				return Input{Base: set(t, y), Live: liveState(t, y)}
			},
			want: []string{
				"error prune-cascade Kustomization/flux-system/apps",
				"warning prune Kustomization/flux-system/apps",
			},
			check: func(t *testing.T, got TargetReport) {
				if msg := got.Findings[0].Message; !strings.Contains(msg, "2 live objects, 1 PersistentVolumeClaim and 1 Deployment") {
					t.Errorf("cascade must count the inventory: %s", msg)
				}
			},
		},
		{
			name: "flux kustomization without prune",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, strings.Replace(ksApps, "PRUNE", "false", 1))}
			},
			want: []string{"warning prune Kustomization/flux-system/apps"},
		},
	})
}
