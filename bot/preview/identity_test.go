package preview

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

// TestNamespaceFieldIsSameObject: a chart installed in default whose templates gain
// `namespace: {{ .Release.Namespace }}` (a ConfigMap and a ClusterRole) names the
// same objects: every change is unchanged, with the scope from the cluster's
// discovery (live on) and from the built-in table (live off).
func TestNamespaceFieldIsSameObject(t *testing.T) {
	dir := "../../fixtures/scenarios/18-namespace-field"
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	for _, s := range readSteps(t, dir) {
		seed(t.Context(), t, dir, s)
	}
	for _, live := range []bool{true, false} {
		req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow}
		if live {
			req.DefaultCluster = &Cluster{Name: "test", Config: cluster.Config(), LiveMode: "simulate"}
		}
		rep, err := Run(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		tr := targetNamed(t, rep, "web")
		want := map[string]bool{"ConfigMap/default/s18-settings": true, "ClusterRole/s18-reader": true}
		for _, c := range tr.Changes {
			if !want[c.Key.String()] || c.Action != diffing.ActionUnchanged {
				t.Errorf("live %v: %s is %s; want only ConfigMap/default/s18-settings and ClusterRole/s18-reader, unchanged", live, c.Key, c.Action)
			}
			if live && c.LiveAction != diffing.ActionUnchanged {
				t.Errorf("live: %s live action %s, want unchanged", c.Key, c.LiveAction)
			}
			delete(want, c.Key.String())
		}
		if len(want) > 0 || len(tr.Findings) > 0 {
			t.Errorf("live %v: missing %v; findings %v", live, want, tr.Findings)
		}
	}
}

// TestClusterScopedNamespaceIsDropped proves against the real apiserver what
// diffing.Identity assumes: a cluster-scoped object whose manifest sets
// metadata.namespace is stored without one (so the namespace is not part of its
// name), while a namespaced one is stored in the namespace it names.
func TestClusterScopedNamespaceIsDropped(t *testing.T) {
	role := testcluster.FromYAML(t, `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: identity-proof
  namespace: default
rules: []
`)
	out, err := cluster.Dynamic().Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).
		Apply(t.Context(), "identity-proof", role, metav1.ApplyOptions{FieldManager: "identity-proof", DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("apiserver refused a ClusterRole with metadata.namespace: %v", err)
	}
	if ns := out.GetNamespace(); ns != "" {
		t.Errorf("the apiserver kept namespace %q on a ClusterRole; Identity must not drop it", ns)
	}
	sets := diffing.Identity{}.Apply(render.ObjectSet{Objects: []render.Object{{Key: render.KeyOf(role), Obj: role}}})
	if k := sets[0].Objects[0].Key; k.Namespace != "" || sets[0].Objects[0].Obj.GetNamespace() != "" {
		t.Errorf("Identity keeps the namespace of a cluster-scoped object: %s", k)
	}
	if role.GetNamespace() != "default" {
		t.Error("Identity changed the rendered object in place")
	}
}

// TestBuiltinScopeTableMatchesTheAPIServer proves the built-in scope table that
// Identity falls back to without a cluster (render.ClusterScoped) against the
// discovery of the real apiserver: every built-in kind it serves is listed as
// cluster-scoped exactly when the apiserver says it is not namespaced.
func TestBuiltinScopeTableMatchesTheAPIServer(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		if !builtinGroup(gv.Group) {
			continue // CRDs installed by other tests
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			if render.ClusterScoped(gk) == r.Namespaced {
				t.Errorf("%s: the apiserver says namespaced=%v, the built-in table says cluster-scoped=%v", gk, r.Namespaced, render.ClusterScoped(gk))
			}
			checked++
		}
	}
	if checked < 40 {
		t.Errorf("only %d built-in kinds checked; discovery looks incomplete", checked)
	}
}

// builtinGroup reports whether an API group is Kubernetes' own: the core group,
// the unqualified ones (apps, batch, policy…) and *.k8s.io.
func builtinGroup(g string) bool {
	return !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io")
}
