package live_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/render"
)

// TestReuseSameAsFreshRead: the second read that judges the base, given the
// first read to reuse, returns what a read of its own returns.
func TestReuseSameAsFreshRead(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	base := []*unstructured.Unstructured{
		cluster.ApplyAs(ctx, t, configMap(t, ns, "same", map[string]any{"level": "info"}), "kustomize-controller"),
		cluster.ApplyAs(ctx, t, configMap(t, ns, "changed", map[string]any{"level": "info"}), "kustomize-controller"),
		cluster.ApplyAs(ctx, t, configMap(t, ns, "quiet", map[string]any{"level": "info"}), "kustomize-controller"),
	}
	cluster.EditAs(ctx, t, base[0], "kubectl-edit", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "debug", "data", "level")
	})
	head := []*unstructured.Unstructured{
		configMap(t, ns, "same", map[string]any{"level": "info"}),
		configMap(t, ns, "changed", map[string]any{"level": "warn"}),
		configMap(t, ns, "quiet", map[string]any{"level": "info"}),
	}
	baseSet := set(configMap(t, ns, "same", map[string]any{"level": "info"}), configMap(t, ns, "changed", map[string]any{"level": "info"}),
		configMap(t, ns, "quiet", map[string]any{"level": "info"}))
	headSet := set(head...)
	r := reader(t, nil)
	r.ShareLists()
	first := mustRead(t, r, baseSet, headSet, opts(ns))
	want := mustRead(t, r, baseSet, baseSet, opts(ns))
	o := opts(ns)
	o.Reuse = &live.Reuse{Base: baseSet, Head: headSet, State: first}
	got := mustRead(t, r, baseSet, baseSet, o)
	// The no-op apply of "quiet" is predicted as this read's live object
	// itself, taken over from the first read's.
	quiet := render.KeyOf(head[2])
	if first.Predictions[quiet].Object != first.Objects[quiet] || got.Predictions[quiet].Object != got.Objects[quiet] {
		t.Errorf("the no-op's prediction is not the live object of its read")
	}
	applyTimes(want)
	applyTimes(got)
	if len(want.Predictions) != 3 || len(want.Predictions[render.KeyOf(head[0])].Conflicts) != 1 {
		t.Fatalf("the fixture does not predict a conflict on %s: %+v", render.KeyOf(head[0]), want.Predictions)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read with reuse (-fresh +reused):\n%s", diff)
	}
}

// TestReuseOnlySameApply: a prediction is taken from the earlier read only when
// head, base and live object are the same as then; otherwise it is simulated.
func TestReuseOnlySameApply(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(map[bool]string{false: "own-lists", true: "shared-lists"}[shared], func(t *testing.T) {
			testReuseOnlySameApply(t, shared)
		})
	}
}

func testReuseOnlySameApply(t *testing.T, shared bool) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	for _, n := range []string{"same", "head-differs", "base-differs", "live-differs"} {
		cluster.ApplyAs(ctx, t, configMap(t, ns, n, map[string]any{"level": "info"}), "kustomize-controller")
	}
	cm := func(name, level string) *unstructured.Unstructured {
		return configMap(t, ns, name, map[string]any{"level": level})
	}
	baseSet := set(cm("same", "info"), cm("head-differs", "info"), cm("base-differs", "info"), cm("live-differs", "info"))
	headSet := set(cm("same", "info"), cm("head-differs", "info"), cm("base-differs", "info"), cm("live-differs", "info"))
	// The second read sees the edit below: a Reader without shared LISTs reads
	// the cluster again, and so does another Reader with shared LISTs, whose
	// copies of the live objects are of other LIST items than the first's.
	r, r2 := reader(t, nil), reader(t, nil)
	if shared {
		r.ShareLists()
		r2.ShareLists()
	}
	first := mustRead(t, r, baseSet, headSet, opts(ns))
	marked := &diffing.LiveState{Mode: first.Mode, Cluster: first.Cluster, Objects: first.Objects, Predictions: map[render.ObjectKey]diffing.Prediction{}}
	for k, p := range first.Predictions {
		p.Note = "from the earlier read"
		marked.Predictions[k] = p
	}
	prevBase := set(cm("same", "info"), cm("head-differs", "info"), cm("base-differs", "other"), cm("live-differs", "info"))
	prevHead := set(cm("same", "info"), cm("head-differs", "other"), cm("base-differs", "info"), cm("live-differs", "info"))
	cluster.EditAs(ctx, t, cm("live-differs", "info"), "kubectl-edit", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "debug", "data", "level")
	})
	o := opts(ns)
	o.Reuse = &live.Reuse{Base: prevBase, Head: prevHead, State: marked}
	got := mustRead(t, r2, baseSet, headSet, o)
	reused := map[string]bool{}
	for k, p := range got.Predictions {
		reused[k.Name] = p.Note != ""
	}
	want := map[string]bool{"same": true, "head-differs": false, "base-differs": false, "live-differs": false}
	if diff := cmp.Diff(want, reused); diff != "" {
		t.Errorf("predictions taken from the earlier read (-want +got):\n%s", diff)
	}
}
