package live_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

// TestSimulateLeavesInputs: simulate puts server defaults back and makes values
// canonical in the field manager's answer itself, without copying it, so neither
// the live objects Read returns nor the head objects it was given may change: after
// a Read that simulates in full (no-op shortcut off) a StatefulSet whose atomic
// volumeClaimTemplates get their defaults back, a Deployment with a quantity in
// another form and a field another manager owns (a conflict, so two applies), a
// client-side-applied ConfigMap and an unchanged one, each live object is the one
// the apiserver returns and each head object is as it was.
func TestSimulateLeavesInputs(t *testing.T) {
	defer live.SetShortcuts(false)()
	ctx := t.Context()
	ns := cluster.Namespace(t)
	const manager = "kustomize-controller"
	sts := func(storage, cpu string) *unstructured.Unstructured {
		return testcluster.FromYAML(t, `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: `+ns+`}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres:16, resources: {requests: {cpu: "`+cpu+`"}}}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: `+storage+`}}}
`)
	}
	dep := func(cpu string, replicas int64) *unstructured.Unstructured {
		d := deployment(t, ns, replicas, "web")
		_ = unstructured.SetNestedSlice(d.Object, []any{map[string]any{
			"name": "web", "image": "nginx:1.27",
			"resources": map[string]any{"requests": map[string]any{"cpu": cpu, "memory": "1024Mi"}},
		}}, "spec", "template", "spec", "containers")
		return d
	}
	baseSts, baseDep := sts("10Gi", "1"), dep("1", 2)
	baseCSA := configMap(t, ns, "csa", map[string]any{"a": "1"})
	baseSame := configMap(t, ns, "same", map[string]any{"a": "1"})
	cluster.ApplyAs(ctx, t, baseSts, manager)
	cluster.ApplyAs(ctx, t, baseDep, manager)
	cluster.ScaleAs(ctx, t, baseDep, 5, "kube-controller-manager")
	cluster.ClientSideApplyAs(ctx, t, baseCSA, manager)
	cluster.ApplyAs(ctx, t, baseSame, manager)

	head := set(sts("50Gi", "500m"), dep("2000m", 3),
		configMap(t, ns, "csa", map[string]any{"a": "2"}), configMap(t, ns, "same", map[string]any{"a": "1"}))
	headBefore := map[render.ObjectKey]map[string]any{}
	for _, o := range head.Objects {
		headBefore[o.Key] = o.Obj.DeepCopy().Object
	}
	st := mustRead(t, reader(t, nil), set(baseSts, baseDep, baseCSA, baseSame), head, opts(ns))

	for _, o := range head.Objects {
		if diff := cmp.Diff(headBefore[o.Key], o.Obj.Object); diff != "" {
			t.Errorf("head %s changed (-before +after):\n%s", o.Key, diff)
		}
		lo := st.Objects[o.Key]
		if lo == nil {
			t.Fatalf("%s: not live", o.Key)
		}
		server, err := cluster.Resource(t, lo).Get(ctx, lo.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(server.Object, lo.Object); diff != "" {
			t.Errorf("live %s changed (-server +after):\n%s", o.Key, diff)
		}
		p := st.Predictions[o.Key]
		if p.Err != nil || p.Object == nil {
			t.Fatalf("%s: prediction %+v", o.Key, p)
		}
	}
	// The defaults and canonical forms did reach the predictions.
	stsKey := render.KeyOf(baseSts)
	if k, _, _ := unstructured.NestedSlice(st.Predictions[stsKey].Object.Object, "spec", "volumeClaimTemplates"); len(k) != 1 || k[0].(map[string]any)["kind"] != "PersistentVolumeClaim" {
		t.Errorf("volumeClaimTemplates without their server defaults: %v", k)
	}
	c, _, _ := unstructured.NestedSlice(st.Predictions[render.KeyOf(baseDep)].Object.Object, "spec", "template", "spec", "containers")
	if len(c) != 1 || c[0].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] != "2" {
		t.Errorf("cpu not in its canonical form: %v", c)
	}
	if len(st.Predictions[render.KeyOf(baseDep)].Conflicts) == 0 {
		t.Errorf("no conflict on replicas")
	}
}
