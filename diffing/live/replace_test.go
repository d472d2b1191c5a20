package live_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/render"
)

// TestArgoReplaceDryRun proves with the apiserver what Argo CD's Replace=true
// does (kubectl replace: a PUT of the manifest, gitops-engine sync_context.go
// applyObject): dry-run mode sends the PUT. It refuses an immutable change as an
// apply does, and it stores the manifest as it is, so a field another manager
// set and git leaves out is reset to its default, where an apply keeps it.
func TestArgoReplaceDryRun(t *testing.T) {
	r := reader(t, nil)
	argo := &diffing.ArgoSync{Options: []string{"Replace=true"}, Automated: true}
	read := func(t *testing.T, ns string, head *unstructured.Unstructured, a *diffing.ArgoSync) diffing.Prediction {
		t.Helper()
		o := opts(ns)
		o.Mode = live.ModeDryRun
		o.Manager = "argocd-controller"
		o.Argo = a
		return mustRead(t, r, set(head), set(head), o).Predictions[render.KeyOf(head)]
	}

	t.Run("immutable selector refused", func(t *testing.T) {
		ns := cluster.Namespace(t)
		cluster.ApplyAs(t.Context(), t, deployment(t, ns, 2, "web"), "argocd-controller")
		p := read(t, ns, deployment(t, ns, 2, "web2"), argo)
		if p.Err == nil || !strings.Contains(p.Err.Error(), "dry-run replace of") {
			t.Fatalf("want the replace refused; err %v", p.Err)
		}
		if p.Refusal == nil || p.Refusal.Kind != diffing.RefusalImmutable {
			t.Errorf("refusal %+v, want %s", p.Refusal, diffing.RefusalImmutable)
		}
	})

	t.Run("replace resets what git leaves out", func(t *testing.T) {
		ns := cluster.Namespace(t)
		d := deployment(t, ns, 2, "web")
		cluster.ApplyAs(t.Context(), t, d, "argocd-controller")
		cluster.ScaleAs(t.Context(), t, d, 5, "kube-controller-manager")
		head := deployment(t, ns, 2, "web")
		unstructured.RemoveNestedField(head.Object, "spec", "replicas")
		for _, tc := range []struct {
			name string
			argo *diffing.ArgoSync
			want int64
		}{
			{"replace", argo, 1},
			{"apply", &diffing.ArgoSync{Automated: true}, 5},
			{"not argo", nil, 5},
		} {
			p := read(t, ns, head, tc.argo)
			if p.Err != nil {
				t.Fatalf("%s: %v", tc.name, p.Err)
			}
			if got, _, _ := unstructured.NestedInt64(p.Object.Object, "spec", "replicas"); got != tc.want {
				t.Errorf("%s: predicted replicas %d, want %d", tc.name, got, tc.want)
			}
		}
	})
}
