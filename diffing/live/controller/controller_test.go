package controller_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse() // testcluster.Main reads testing.Verbose
	testcluster.Main(m, &cluster)
}

// installCRDs installs the controller CRDs of fixtures/crds for the duration of t.
func installCRDs(t *testing.T) {
	t.Helper()
	for _, f := range []string{"argocd-application.yaml", "flux-kustomization.yaml", "flux-helmrelease.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "fixtures", "crds", f))
		if err != nil {
			t.Fatal(err)
		}
		cluster.InstallCRD(t.Context(), t, testcluster.FromYAML(t, string(b)))
	}
}

// seed creates obj in ns as its controller's owner would, then writes status.
func seed(t *testing.T, ns, manifest string) *unstructured.Unstructured {
	t.Helper()
	obj := testcluster.FromYAML(t, manifest)
	obj.SetNamespace(ns)
	status, hasStatus := obj.Object["status"].(map[string]any)
	delete(obj.Object, "status")
	live := cluster.ApplyAs(t.Context(), t, obj, "argocd-server")
	if hasStatus {
		live = cluster.SetStatusAs(t.Context(), t, live, status, "controller")
	}
	return live
}

const shopApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: shop
spec:
  source: {repoURL: https://github.com/example/gitops-argocd, path: shop/overlays/prod}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
status:
  resources:
    - {group: apps, kind: Deployment, namespace: shop, name: web, version: v1}
    - {kind: ConfigMap, namespace: shop, name: flags, version: v1}
    - {kind: Namespace, name: shop, version: v1}
`

const manualApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: manual
spec:
  source: {repoURL: https://github.com/example/gitops-argocd, path: shop/overlays/prod}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  syncPolicy:
    syncOptions: [CreateNamespace=true]
`

const noPruneApp = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: noprune
spec:
  source: {repoURL: https://github.com/example/gitops-argocd, path: shop/overlays/prod}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  syncPolicy:
    automated: {prune: true, selfHeal: true}
    syncOptions: [Prune=false]
`

const appsKS = `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
spec:
  interval: 10m
  path: ./apps/prod
  prune: true
  suspend: true
  sourceRef: {kind: GitRepository, name: flux-system}
status:
  inventory:
    entries:
      - {id: shop_web_apps_Deployment, v: v1}
      - {id: _shop__Namespace, v: v1}
      - {id: shop_settings__ConfigMap, v: v1}
      - {id: not-an-id, v: v1}
`

const podinfoHR = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
spec:
  chart: {spec: {chart: ./charts/podinfo, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}
  driftDetection: {mode: enabled}
`

// TestController installs the controller CRDs once (they are cluster-scoped) and
// runs the live-cluster cases against them.
func TestController(t *testing.T) {
	installCRDs(t)
	t.Run("read and findings", testReadAndFindings)
	t.Run("read errors", testReadErrors)
	t.Run("argocd-cm", testArgoSettings)
}

func testReadAndFindings(t *testing.T) {
	ns := cluster.Namespace(t)
	seed(t, ns, shopApp)
	seed(t, ns, manualApp)
	seed(t, ns, noPruneApp)
	seed(t, ns, appsKS)
	seed(t, ns, podinfoHR)

	gitApp := func(name string) diffing.Controller {
		return diffing.Controller{Kind: "Application", Name: name, Namespace: ns, Source: "apps/" + name + ".yaml", AutoSync: true, Prune: true, SelfHeal: true}
	}
	appKey := func(name string) render.ObjectKey {
		return render.ObjectKey{Group: "argoproj.io", Kind: "Application", Namespace: ns, Name: name}
	}
	ksKey := render.ObjectKey{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization", Namespace: ns, Name: "apps"}
	warn := func(rule diffing.Rule, key render.ObjectKey, msg string) diffing.Finding {
		return diffing.Finding{Rule: rule, Severity: diffing.SeverityWarning, Key: key, Message: msg + "."}
	}

	tests := []struct {
		name      string
		git       diffing.Controller
		wantState *controller.State
		want      []diffing.Finding
	}{
		{
			name: "application in step with git",
			git:  gitApp("shop"),
			wantState: &controller.State{Cluster: "prod", Exists: true, AutoSync: true, Prune: true, SelfHeal: true, Inventory: []render.ObjectKey{
				{Kind: "ConfigMap", Namespace: "shop", Name: "flags"},
				{Kind: "Namespace", Name: "shop"},
				{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
			}},
		},
		{
			name:      "automated sync switched off live",
			git:       gitApp("manual"),
			wantState: &controller.State{Cluster: "prod", Exists: true},
			want: []diffing.Finding{
				warn(diffing.RuleSyncDisabled, appKey("manual"), "Application manual: automated sync is disabled on cluster prod: this merge will not reach the cluster until someone syncs"),
			},
		},
		{
			name:      "prune off live while git turns it on",
			git:       gitApp("noprune"),
			wantState: &controller.State{Cluster: "prod", Exists: true, AutoSync: true, SelfHeal: true},
			want: []diffing.Finding{
				warn(diffing.RuleSyncDisabled, appKey("noprune"), "Application noprune has prune off on cluster prod but on in apps/noprune.yaml: objects this merge removes keep running until the live Application matches git"),
			},
		},
		{
			name:      "prune on live while git turns it off",
			git:       diffing.Controller{Kind: "Application", Name: "shop", Namespace: ns, Source: "apps/shop.yaml", AutoSync: true, SelfHeal: true},
			wantState: nil, // same object as the first case
			want: []diffing.Finding{
				warn(diffing.RuleSyncDisabled, appKey("shop"), "Application shop has prune on on cluster prod but off in apps/shop.yaml: objects this merge removes are deleted"),
			},
		},
		{
			name:      "application missing",
			git:       gitApp("payments"),
			wantState: &controller.State{Cluster: "prod"},
			want: []diffing.Finding{
				warn(diffing.RuleControllerMissing, appKey("payments"), "Application payments does not exist on cluster prod: nothing will deploy this target"),
			},
		},
		{
			name: "kustomization suspended live",
			git:  diffing.Controller{Kind: "Kustomization", Name: "apps", Namespace: ns, Source: "clusters/prod/apps.yaml", AutoSync: true, Prune: true, SelfHeal: true},
			wantState: &controller.State{Cluster: "prod", Exists: true, Prune: true, Suspended: true, Inventory: []render.ObjectKey{
				{Kind: "ConfigMap", Namespace: "shop", Name: "settings"},
				{Kind: "Namespace", Name: "shop"},
				{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"},
			}},
			want: []diffing.Finding{
				warn(diffing.RuleSyncDisabled, ksKey, "Kustomization apps is suspended on cluster prod: this merge will not be applied until it is resumed"),
			},
		},
		{
			name:      "kustomization suspended in git too: discovery already said so",
			git:       diffing.Controller{Kind: "Kustomization", Name: "apps", Namespace: ns, Prune: true, SelfHeal: true, Suspended: true},
			wantState: nil,
		},
		{
			name:      "helm release with drift detection",
			git:       diffing.Controller{Kind: "HelmRelease", Name: "podinfo", Namespace: ns, AutoSync: true, Prune: true, SelfHeal: true},
			wantState: &controller.State{Cluster: "prod", Exists: true, AutoSync: true, Prune: true, SelfHeal: true, DriftDetection: "enabled"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := controller.Read(t.Context(), cluster.Config(), tc.git)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			st.Cluster = "prod"
			if tc.wantState != nil {
				if diff := cmp.Diff(tc.wantState, st); diff != "" {
					t.Errorf("state (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.want, controller.Findings(tc.git, st)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

func testReadErrors(t *testing.T) {
	ns := cluster.Namespace(t)
	seed(t, ns, shopApp)
	ctrl := diffing.Controller{Kind: "Application", Name: "shop", Namespace: ns}

	t.Run("forbidden is an error, not a missing controller", func(t *testing.T) {
		cfg := cluster.UserConfig(t, "no-argo", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}})
		st, err := controller.Read(t.Context(), cfg, ctrl)
		if err == nil || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "reading live Application "+ns+"/shop") {
			t.Fatalf("Read = %+v, %v; want a forbidden error naming the Application", st, err)
		}
	})
	t.Run("get on the one object is enough", func(t *testing.T) {
		cfg := cluster.UserConfig(t, "argo-get", []rbacv1.PolicyRule{{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get"}}})
		st, err := controller.Read(t.Context(), cfg, ctrl)
		if err != nil || !st.Exists {
			t.Fatalf("Read = %+v, %v; want the live Application", st, err)
		}
	})
	t.Run("unsupported kind", func(t *testing.T) {
		_, err := controller.Read(t.Context(), cluster.Config(), diffing.Controller{Kind: diffing.ArgoCDApplicationSet.Kind, Name: "x"})
		if err == nil || !strings.Contains(err.Error(), "unsupported kind") {
			t.Fatalf("Read error = %v; want unsupported kind", err)
		}
	})
	t.Run("nil live state gives no findings", func(t *testing.T) {
		if got := controller.Findings(ctrl, nil); got != nil {
			t.Fatalf("Findings(nil) = %v", got)
		}
	})
}

func TestParseInventoryID(t *testing.T) {
	tests := []struct {
		id   string
		want render.ObjectKey
		ok   bool
	}{
		{"shop_web_apps_Deployment", render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}, true},
		{"_shop__Namespace", render.ObjectKey{Kind: "Namespace", Name: "shop"}, true},
		{"shop__apps_Deployment", render.ObjectKey{}, false},
		{"a_b_c", render.ObjectKey{}, false},
	}
	for _, tc := range tests {
		got, ok := controller.ParseInventoryID(tc.id)
		if diff := cmp.Diff(tc.want, got); diff != "" || ok != tc.ok {
			t.Errorf("ParseInventoryID(%q) = %v (-want +got):\n%s", tc.id, ok, diff)
		}
	}
}

// testArgoSettings: Read takes Argo CD's tracking settings from argocd-cm next to
// the Application when it is readable, and leaves them empty (Argo CD's defaults)
// when it is missing or forbidden.
func testArgoSettings(t *testing.T) {
	ns := cluster.Namespace(t)
	seed(t, ns, shopApp)
	app := diffing.Controller{Kind: "Application", Name: "shop", Namespace: ns}
	st, err := controller.Read(t.Context(), cluster.Config(), app)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(controller.ArgoSettings{}, st.Argo); diff != "" {
		t.Errorf("without argocd-cm (-want +got):\n%s", diff)
	}
	cm := testcluster.FromYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: `+ns+`}
data:
  application.instanceLabelKey: argocd.argoproj.io/instance
  application.resourceTrackingMethod: annotation+label
  installationID: blue
`)
	cluster.ApplyAs(t.Context(), t, cm, "argocd-operator")
	st, err = controller.Read(t.Context(), cluster.Config(), app)
	if err != nil {
		t.Fatal(err)
	}
	want := controller.ArgoSettings{Read: true, Namespace: ns, InstanceLabelKey: "argocd.argoproj.io/instance",
		TrackingMethod: "annotation+label", InstallationID: "blue"}
	if diff := cmp.Diff(want, st.Argo); diff != "" {
		t.Errorf("with argocd-cm (-want +got):\n%s", diff)
	}
	// An identity that may read Applications but not ConfigMaps gets the defaults.
	appsOnly := cluster.UserConfig(t, "argo-apps-only", []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"applications"}, Verbs: []string{"get"}},
	})
	st, err = controller.Read(t.Context(), appsOnly, app)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Exists || cmp.Diff(controller.ArgoSettings{}, st.Argo) != "" {
		t.Errorf("forbidden argocd-cm: exists %v, settings %+v; want the Application and default settings", st.Exists, st.Argo)
	}
}
