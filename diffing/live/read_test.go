package live_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

// readOnly is the RBAC simulate mode needs: read everything and the OpenAPI document.
var readOnly = []rbacv1.PolicyRule{
	{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	{NonResourceURLs: []string{"/openapi/*", "/api", "/api/*", "/apis", "/apis/*"}, Verbs: []string{"get"}},
}

func TestReadOnlyUser(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	cluster.ApplyAs(ctx, t, deployment(t, ns, 2, "web"), "kustomize-controller")
	cluster.ScaleAs(ctx, t, deployment(t, ns, 2, "web"), 7, "kube-controller-manager")
	head := deployment(t, ns, 3, "web")

	r := reader(t, cluster.UserConfig(t, "driftpreview-reader", readOnly))
	st := mustRead(t, r, set(head), set(head), opts(ns))
	p := st.Predictions[render.KeyOf(head)]
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	want := []diffing.Conflict{{Path: "/spec/replicas", Manager: "kube-controller-manager", Operation: "Update", Live: int64(7), Head: int64(3)}}
	if diff := cmp.Diff(norm(want), norm(p.Conflicts)); diff != "" {
		t.Errorf("conflicts as a read-only user (-want +got):\n%s", diff)
	}
}

func TestForbiddenListIsNoPartialState(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	cm := configMap(t, ns, "settings", map[string]any{"a": "b"})
	cluster.ApplyAs(ctx, t, cm, "kustomize-controller")
	cluster.ApplyAs(ctx, t, deployment(t, ns, 2, "web"), "kustomize-controller")
	// Everything readonly needs, but configmaps.
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
		readOnly[1],
	}
	r := reader(t, cluster.UserConfig(t, "no-configmaps", rules))
	st := r.Read(ctx, set(), set(cm, deployment(t, ns, 2, "web")), opts(ns))
	if st.Err == nil {
		t.Fatalf("Read succeeded; want a forbidden error")
	}
	want := "listing configmaps in namespace " + ns + " on cluster test: forbidden: "
	if !strings.HasPrefix(st.Err.Error(), want) {
		t.Errorf("error = %q, want prefix %q", st.Err, want)
	}
	if diff := cmp.Diff(&diffing.LiveState{Mode: "simulate", Cluster: "test", Err: st.Err}, st, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
		t.Errorf("live state holds partial results (-want +got):\n%s", diff)
	}
}

func TestUnreachableCluster(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	cfg := &rest.Config{Host: "https://" + addr, Timeout: 2 * time.Second}
	cfg.Insecure = true
	r := reader(t, cfg)
	o := opts("shop")
	o.Cluster = "prod"
	st := r.Read(t.Context(), set(), set(configMap(t, "shop", "a", map[string]any{"k": "v"})), o)
	if st.Err == nil {
		t.Fatal("Read of an unreachable cluster succeeded")
	}
	if !strings.Contains(st.Err.Error(), "cluster prod") || !strings.Contains(st.Err.Error(), "connection refused") {
		t.Errorf("error = %q, want it to name cluster prod and the refused connection", st.Err)
	}
	if st.Objects != nil || st.Predictions != nil {
		t.Errorf("unreachable cluster gave objects %v predictions %v", st.Objects, st.Predictions)
	}
}

func TestBadOptions(t *testing.T) {
	r := reader(t, nil)
	tests := []struct {
		name string
		opts live.Options
		want string
	}{
		{"unknown mode", live.Options{Mode: "apply", Manager: "m", Cluster: "c"}, `reading cluster c: unknown live mode "apply" (want simulate or dry-run)`},
		{"no manager", live.Options{Cluster: "c"}, "reading cluster c: no field manager set to predict the apply as"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := r.Read(t.Context(), set(), set(), tt.opts)
			if st.Err == nil || st.Err.Error() != tt.want {
				t.Errorf("error = %v, want %q", st.Err, tt.want)
			}
		})
	}
}

func TestTracking(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	mk := func(name string, labels, annotations map[string]string) *unstructured.Unstructured {
		cm := configMap(t, ns, name, map[string]any{"k": "v"})
		cm.SetLabels(labels)
		cm.SetAnnotations(annotations)
		cluster.ApplyAs(ctx, t, cm, "kustomize-controller")
		return cm
	}
	inGit := mk("in-git", nil, nil)
	mk("argo-label", map[string]string{"app.kubernetes.io/instance": "shop"}, nil)
	mk("argo-annotation", nil, map[string]string{"argocd.argoproj.io/tracking-id": "shop:/ConfigMap:" + ns + "/argo-annotation"})
	mk("flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil)
	mk("helm", nil, map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": ns})
	mk("inventory", nil, nil)
	mk("other-app", map[string]string{"app.kubernetes.io/instance": "shopping"}, map[string]string{"argocd.argoproj.io/tracking-id": "shopping:/ConfigMap:x/y"})
	mk("other-flux", map[string]string{"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "elsewhere"}, nil)
	mk("untracked", nil, nil)

	key := func(name string) render.ObjectKey {
		return render.ObjectKey{Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	tests := []struct {
		name      string
		tracking  live.Tracking
		inventory []render.ObjectKey
		want      []string // tracked names
	}{
		{"argo", live.Tracking{ArgoApp: "shop"}, nil, []string{"argo-annotation", "argo-label"}},
		{"flux", live.Tracking{FluxName: "shop", FluxNamespace: "flux-system"}, nil, []string{"flux"}},
		{"helm", live.Tracking{HelmRelease: "shop", HelmNamespace: ns}, nil, []string{"helm"}},
		{"inventory", live.Tracking{}, []render.ObjectKey{key("inventory"), key("gone")}, []string{"inventory"}},
	}
	r := reader(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(ns)
			o.Tracking, o.Inventory = tt.tracking, tt.inventory
			st := mustRead(t, r, set(inGit), set(inGit), o)
			var tracked, objects []string
			for k := range st.Tracked {
				tracked = append(tracked, k.Name)
			}
			for k := range st.Objects {
				objects = append(objects, k.Name)
			}
			sort.Strings(tracked)
			sort.Strings(objects)
			if diff := cmp.Diff(tt.want, tracked); diff != "" {
				t.Errorf("tracked (-want +got):\n%s", diff)
			}
			wantObjects := append([]string{"in-git"}, tt.want...)
			sort.Strings(wantObjects)
			if diff := cmp.Diff(wantObjects, objects); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefaultNamespaceKeys(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	cluster.ApplyAs(ctx, t, configMap(t, ns, "settings", map[string]any{"a": "b"}), "kustomize-controller")
	head := configMap(t, "", "settings", map[string]any{"a": "c"})
	st := mustRead(t, reader(t, nil), set(head), set(head), opts(ns))
	k := render.ObjectKey{Kind: "ConfigMap", Name: "settings"} // as rendered, without a namespace
	if st.Objects[k] == nil || st.Objects[k].GetNamespace() != ns {
		t.Fatalf("live object under %v = %v, want the one in %s", k, st.Objects[k], ns)
	}
	if p := st.Predictions[k]; p.Err != nil || p.Object == nil || p.Object.GetNamespace() != ns {
		t.Errorf("prediction = %+v, want the object in %s", p, ns)
	}
}

func TestChildren(t *testing.T) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, strings.ReplaceAll(widgetCRD, "live.example.com", "children.example.com")))
	doomed := cluster.Namespace(t)
	other := cluster.Namespace(t)
	for _, n := range []string{"a", "b"} {
		cluster.ApplyAs(ctx, t, configMap(t, doomed, n, map[string]any{"k": "v"}), "kustomize-controller")
	}
	cluster.ApplyAs(ctx, t, pvc(t, doomed, "data", ""), "kustomize-controller")
	cluster.ApplyAs(ctx, t, testcluster.FromYAML(t, `
apiVersion: v1
kind: Event
metadata: {name: ev, namespace: `+doomed+`}
involvedObject: {kind: ConfigMap, name: a, namespace: `+doomed+`}
reason: Test
`), "kube-controller-manager")
	w := func(ns, name string) *unstructured.Unstructured {
		u := widget(t, ns, name, 80)
		u.SetAPIVersion("children.example.com/v1")
		return u
	}
	for _, o := range []*unstructured.Unstructured{w(doomed, "w1"), w(other, "w2"), w(other, "w3")} {
		cluster.ApplyAs(ctx, t, o, "kustomize-controller")
	}
	nsObj := testcluster.FromYAML(t, `{apiVersion: v1, kind: Namespace, metadata: {name: `+doomed+`}}`)
	crd := testcluster.FromYAML(t, `{apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: widgets.children.example.com}}`)
	kept := testcluster.FromYAML(t, `{apiVersion: v1, kind: Namespace, metadata: {name: `+other+`}}`)

	st := mustRead(t, reader(t, nil), set(nsObj, crd, kept), set(kept), opts(other))
	want := map[render.ObjectKey]diffing.Children{
		render.KeyOf(nsObj): {Total: 4, ByKind: map[string]int{"ConfigMap": 2, "PersistentVolumeClaim": 1, "Widget": 1}},
		render.KeyOf(crd):   {Total: 3, ByKind: map[string]int{"Widget": 3}},
	}
	if diff := cmp.Diff(want, st.Children); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}

func pvc(t testing.TB, ns, name, volume string) *unstructured.Unstructured {
	t.Helper()
	u := testcluster.FromYAML(t, `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: `+name+`, namespace: `+ns+`}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: 1Gi}}
`)
	if volume != "" {
		_ = unstructured.SetNestedField(u.Object, volume, "spec", "volumeName")
	}
	return u
}

func TestVolumes(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	pvName := ns + "-pv"
	pv := testcluster.FromYAML(t, `
apiVersion: v1
kind: PersistentVolume
metadata: {name: `+pvName+`}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: ""
  hostPath: {path: /tmp/driftpreview-test}
  claimRef: {namespace: `+ns+`, name: data}
`)
	cluster.ApplyAs(ctx, t, pv, "test")
	t.Cleanup(func() {
		_ = cluster.Dynamic().Resource(pvGVR).Delete(context.Background(), pvName, deleteOpts)
	})
	cluster.SetStatusAs(ctx, t, pv, map[string]any{"phase": "Bound"}, "test")
	claim := pvc(t, ns, "data", pvName)
	cluster.ApplyAs(ctx, t, claim, "kustomize-controller")
	cluster.SetStatusAs(ctx, t, claim, map[string]any{"phase": "Bound"}, "test")
	// A claim naming a volume bound to another claim gets none.
	stray := pvc(t, ns, "stray", pvName)
	cluster.ApplyAs(ctx, t, stray, "kustomize-controller")
	unbound := pvc(t, ns, "unbound", "")
	cluster.ApplyAs(ctx, t, unbound, "kustomize-controller")

	st := mustRead(t, reader(t, nil), set(claim, stray, unbound), set(unbound), opts(ns))
	var got []string
	for k, v := range st.Volumes {
		got = append(got, k.Name+"="+v.GetName())
		if policy, _, _ := unstructured.NestedString(v.Object, "spec", "persistentVolumeReclaimPolicy"); policy != "Delete" {
			t.Errorf("volume of %s has reclaim policy %q, want Delete", k, policy)
		}
	}
	if diff := cmp.Diff([]string{"data=" + pvName}, got); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
}

// counter is a RoundTripper that logs every request.
type counter struct {
	log  *requestLog
	next http.RoundTripper
}

func (c counter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.log.add(req.Method, req.URL.Path)
	return c.next.RoundTrip(req)
}

// classify names a resource request: "list configmaps in ns" or "get configmaps/x in
// ns"; discovery and OpenAPI requests give "".
func classify(path string) string {
	var segs []string
	switch {
	case strings.HasPrefix(path, "/api/v1/"):
		segs = strings.Split(strings.TrimPrefix(path, "/api/v1/"), "/")
	case strings.HasPrefix(path, "/apis/"):
		parts := strings.Split(strings.TrimPrefix(path, "/apis/"), "/")
		if len(parts) < 3 {
			return ""
		}
		segs = parts[2:]
	default:
		return ""
	}
	ns := ""
	if len(segs) >= 3 && segs[0] == "namespaces" {
		ns, segs = segs[1], segs[2:]
	}
	where := ""
	if ns != "" {
		where = " in " + ns
	}
	switch len(segs) {
	case 1:
		return "list " + segs[0] + where
	default:
		return "get " + strings.Join(segs, "/") + where
	}
}

func TestOneListPerTypeAndNamespace(t *testing.T) {
	ctx := t.Context()
	ns1, ns2 := cluster.Namespace(t), cluster.Namespace(t)
	var objs []*unstructured.Unstructured
	for _, ns := range []string{ns1, ns2} {
		for _, n := range []string{"a", "b", "c"} {
			objs = append(objs, cluster.ApplyAs(ctx, t, configMap(t, ns, n, map[string]any{"k": "v"}), "kustomize-controller"))
		}
		objs = append(objs, cluster.ApplyAs(ctx, t, deployment(t, ns, 1, "web"), "kustomize-controller"))
	}
	head := set(objs...)
	log := &requestLog{}
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter{log: log, next: rt} }
	mustRead(t, reader(t, cfg), head, head, opts(ns1))

	var got []string
	for _, r := range log.reqs {
		method, path, _ := strings.Cut(r, " ")
		if c := classify(path); c != "" {
			got = append(got, method+" "+c)
		}
	}
	slices.Sort(got)
	want := []string{
		"GET list configmaps in " + ns1,
		"GET list configmaps in " + ns2,
		"GET list deployments in " + ns1,
		"GET list deployments in " + ns2,
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resource requests (-want +got):\n%s", diff)
	}
}

// TestShareListsAcrossReads: with ShareLists, the reads of several targets (and
// the same target read again) send each LIST once, and each read still finds
// its live objects, in a copy of its own.
func TestShareListsAcrossReads(t *testing.T) {
	ctx := t.Context()
	ns1, ns2 := cluster.Namespace(t), cluster.Namespace(t)
	var one, two []*unstructured.Unstructured
	for _, n := range []string{"a", "b"} {
		one = append(one, cluster.ApplyAs(ctx, t, configMap(t, ns1, n, map[string]any{"k": "v"}), "kustomize-controller"))
		two = append(two, cluster.ApplyAs(ctx, t, configMap(t, ns2, n, map[string]any{"k": "v"}), "kustomize-controller"))
	}
	log := &requestLog{}
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter{log: log, next: rt} }
	r := reader(t, cfg)
	r.ShareLists()
	first := mustRead(t, r, set(one...), set(one...), opts(ns1))
	mustRead(t, r, set(two...), set(two...), opts(ns2))
	again := mustRead(t, r, set(one...), set(one...), opts(ns1))

	var got []string
	for _, req := range log.reqs {
		method, path, _ := strings.Cut(req, " ")
		if c := classify(path); strings.HasPrefix(c, "list ") {
			got = append(got, method+" "+c)
		}
	}
	slices.Sort(got)
	want := []string{"GET list configmaps in " + ns1, "GET list configmaps in " + ns2}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LISTs over three reads (-want +got):\n%s", diff)
	}
	for _, o := range one {
		k := render.KeyOf(o)
		a, b := first.Objects[k], again.Objects[k]
		if a == nil || b == nil {
			t.Fatalf("%s not found live: first %v, again %v", k, a != nil, b != nil)
		}
		if a == b {
			t.Errorf("%s: two reads share one live object", k)
		}
	}
}
