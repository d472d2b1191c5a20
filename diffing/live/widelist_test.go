package live_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
)

// wideFixture is seven namespaces with two ConfigMaps each, one of them edited
// by hand, as the targets of one job that spans many namespaces.
func wideFixture(t *testing.T) (namespaces []string, targets [][]*unstructured.Unstructured) {
	ctx := t.Context()
	for range 7 {
		ns := cluster.Namespace(t)
		var objs []*unstructured.Unstructured
		for _, n := range []string{"app", "settings"} {
			objs = append(objs, cluster.ApplyAs(ctx, t, configMap(t, ns, n, map[string]any{"level": "info"}), "kustomize-controller"))
		}
		cluster.EditAs(ctx, t, objs[1], "kubectl-edit", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "debug", "data", "level")
		})
		namespaces = append(namespaces, ns)
		targets = append(targets, objs)
	}
	return namespaces, targets
}

// readAll reads every target (head changes the level) with r, in order.
func readAll(t *testing.T, r *live.Reader, namespaces []string, targets [][]*unstructured.Unstructured) []*diffing.LiveState {
	t.Helper()
	var out []*diffing.LiveState
	for i, objs := range targets {
		var head []*unstructured.Unstructured
		for _, o := range objs {
			h := configMap(t, namespaces[i], o.GetName(), map[string]any{"level": "warn"})
			head = append(head, h)
		}
		out = append(out, mustRead(t, r, set(objs...), set(head...), opts(namespaces[i])))
	}
	return out
}

// configMapLists are the LISTs of configmaps in log: "cluster-wide" or the
// namespace's index in namespaces.
func configMapLists(log *requestLog, namespaces []string) []string {
	var got []string
	for _, req := range log.reqs {
		_, path, _ := strings.Cut(req, " ")
		switch c := classify(path); {
		case c == "list configmaps":
			got = append(got, "cluster-wide")
		case strings.HasPrefix(c, "list configmaps in "):
			got = append(got, fmt.Sprint(slices.Index(namespaces, strings.TrimPrefix(c, "list configmaps in "))))
		}
	}
	return got
}

// TestWideListSameAsPerNamespace: a job whose targets span more than four
// namespaces reads the rest of a type with one cluster-wide LIST, and every
// target's live state is what per-namespace LISTs give.
func TestWideListSameAsPerNamespace(t *testing.T) {
	namespaces, targets := wideFixture(t)
	want := readAll(t, reader(t, nil), namespaces, targets)

	log := &requestLog{}
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter{log: log, next: rt} }
	r := reader(t, cfg)
	r.ShareLists()
	got := readAll(t, r, namespaces, targets)
	again := readAll(t, r, namespaces[:1], targets[:1])
	assertSameStates(t, want, got)
	assertSameStates(t, want[:1], again)
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "cluster-wide"}, configMapLists(log, namespaces)); diff != "" {
		t.Errorf("LISTs of configmaps (-want +got):\n%s", diff)
	}
}

// TestWideListForbiddenFallsBack: an identity that may list ConfigMaps only in
// the targets' namespaces (RoleBindings, no ClusterRoleBinding) is refused the
// cluster-wide LIST and reads each namespace on its own, with the same result.
func TestWideListForbiddenFallsBack(t *testing.T) {
	ctx := t.Context()
	namespaces, targets := wideFixture(t)
	want := readAll(t, reader(t, nil), namespaces, targets)

	// Discovery and OpenAPI cluster-wide; ConfigMaps only per namespace.
	cfg := cluster.UserConfig(t, "namespaced-reader", readOnly[1:])
	user := certUser(t, cfg)
	kube := cluster.Kube()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "namespaced-reader:" + user},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	for _, ns := range namespaces {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "namespaced-reader", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
		if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, ns := range namespaces { // the authorizer's cache sees the bindings
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := dyn.Resource(cms).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		}); err != nil {
			t.Fatalf("the role binding in %s did not take effect: %v", ns, err)
		}
	}
	if _, err := dyn.Resource(cms).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
		t.Fatal("the identity may list configmaps cluster-wide; the test needs it refused")
	}

	log := &requestLog{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter{log: log, next: rt} }
	r := reader(t, cfg)
	r.ShareLists()
	assertSameStates(t, want, readAll(t, r, namespaces, targets))
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "cluster-wide", "4", "5", "6"}, configMapLists(log, namespaces)); diff != "" {
		t.Errorf("LISTs of configmaps (-want +got):\n%s", diff)
	}
}

// TestWideListTooLargeFallsBack: a cluster-wide LIST with more objects than the
// cap is dropped, and the namespaces are read on their own, with the same result.
func TestWideListTooLargeFallsBack(t *testing.T) {
	namespaces, targets := wideFixture(t)
	want := readAll(t, reader(t, nil), namespaces, targets)
	t.Cleanup(live.SetWideMaxItems(1))
	log := &requestLog{}
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return counter{log: log, next: rt} }
	r := reader(t, cfg)
	r.ShareLists()
	assertSameStates(t, want, readAll(t, r, namespaces, targets))
	if diff := cmp.Diff([]string{"0", "1", "2", "3", "cluster-wide", "4", "5", "6"}, configMapLists(log, namespaces)); diff != "" {
		t.Errorf("LISTs of configmaps (-want +got):\n%s", diff)
	}
}

func assertSameStates(t *testing.T, want, got []*diffing.LiveState) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d states, want %d", len(got), len(want))
	}
	for i := range want {
		if len(want[i].Objects) == 0 || len(want[i].Predictions) == 0 {
			t.Fatalf("target %d: nothing read per namespace: the test proves nothing", i)
		}
		applyTimes(want[i])
		applyTimes(got[i])
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("target %d: live state (-per namespace +shared):\n%s", i, diff)
		}
	}
}

// applyTimes drops the time of the simulated apply's managed-fields entry from
// the predictions: it is the time of the simulation.
func applyTimes(st *diffing.LiveState) {
	for k, p := range st.Predictions {
		if p.Object != nil {
			// Predictions are read only (a no-op's is the live object
			// itself): the time goes from a copy.
			p.Object = p.Object.DeepCopy()
			dropApplyTime(p.Object.Object, "kustomize-controller")
			st.Predictions[k] = p
		}
	}
}

// dropApplyTime drops the time of manager's entries in obj's managed fields.
func dropApplyTime(obj map[string]any, manager string) {
	mf, _, _ := unstructured.NestedSlice(obj, "metadata", "managedFields")
	for _, e := range mf {
		if m, ok := e.(map[string]any); ok && m["manager"] == manager {
			delete(m, "time")
		}
	}
	if mf != nil {
		_ = unstructured.SetNestedSlice(obj, mf, "metadata", "managedFields")
	}
}

// certUser is the user name of a client-certificate config (its CN).
func certUser(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	b, _ := pem.Decode(cfg.CertData)
	if b == nil {
		t.Fatal("the user config has no client certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.Subject.CommonName
}
