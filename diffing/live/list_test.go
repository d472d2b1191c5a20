package live_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// TestListPageSameAsDynamicClient: the one-pass decode of a LIST page gives the
// objects, kinds and continue token client-go's dynamic client gives for the same
// request: built-in and custom resources, namespaced, cluster-wide and
// cluster-scoped, several pages, an empty list, and a type the server does not
// serve (not found, as the dynamic client reports it).
func TestListPageSameAsDynamicClient(t *testing.T) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	ns := cluster.Namespace(t)
	empty := cluster.Namespace(t)
	for i := range 7 {
		cluster.ApplyAs(ctx, t, configMap(t, ns, fmt.Sprintf("cm-%d", i), map[string]any{"n": fmt.Sprint(i), "f": "1.5"}), "kustomize-controller")
	}
	cluster.ApplyAs(ctx, t, deployment(t, ns, 2, "web"), "kustomize-controller")
	cluster.ScaleAs(ctx, t, deployment(t, ns, 2, "web"), 5, "kube-controller-manager")
	cluster.ApplyAs(ctx, t, widget(t, ns, "w", 8080), "kustomize-controller")
	r := reader(t, nil)
	dyn := cluster.Dynamic()
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, tc := range []struct {
		name  string
		gvr   schema.GroupVersionResource
		ns    string
		limit int64
	}{
		{"configmaps in pages", cms, ns, 3},
		{"configmaps cluster-wide", cms, "", 500},
		{"empty namespace", cms, empty, 500},
		{"deployments", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, ns, 500},
		{"custom resources", schema.GroupVersionResource{Group: "live.example.com", Version: "v1", Resource: "widgets"}, ns, 500},
		{"cluster-scoped", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", 500},
		{"not served", schema.GroupVersionResource{Group: "live.example.com", Version: "v9", Resource: "widgets"}, ns, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := metav1.ListOptions{Limit: tc.limit}
			// Both read one snapshot: other tests' namespaces come and go.
			if l, err := dyn.Resource(tc.gvr).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				opts.ResourceVersion, opts.ResourceVersionMatch = l.GetResourceVersion(), metav1.ResourceVersionMatchExact
			}
			pages := 0
			for {
				var want *unstructured.UnstructuredList
				var err error
				if tc.ns == "" {
					want, err = dyn.Resource(tc.gvr).List(ctx, opts)
				} else {
					want, err = dyn.Resource(tc.gvr).Namespace(tc.ns).List(ctx, opts)
				}
				got, next, gotErr := live.ListPage(ctx, r, tc.gvr, tc.ns, opts)
				if err != nil || gotErr != nil {
					if !apierrors.IsNotFound(err) || !apierrors.IsNotFound(gotErr) {
						t.Fatalf("errors: dynamic %v, ListPage %v", err, gotErr)
					}
					return
				}
				if tc.name == "not served" {
					t.Fatal("the LIST of a type not served succeeded")
				}
				var wantItems []*unstructured.Unstructured
				for i := range want.Items {
					wantItems = append(wantItems, &want.Items[i])
				}
				if diff := cmp.Diff(wantItems, got, equateEmpty); diff != "" {
					t.Fatalf("page %d (-dynamic +ListPage):\n%s", pages, diff)
				}
				if len(got) == 0 && tc.ns != empty {
					t.Fatal("no items: the case tests nothing")
				}
				if next != want.GetContinue() {
					t.Fatalf("continue %q, want %q", next, want.GetContinue())
				}
				pages++
				if next == "" {
					break
				}
				opts.Continue = next
				opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
			}
			if tc.limit == 3 && pages < 3 {
				t.Errorf("%d pages, want at least 3", pages)
			}
		})
	}
}
