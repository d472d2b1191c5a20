package live_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// TestFieldsSetMatchesFromJSON: the field set appliedFields builds straight from a
// managed fields entry is the one structured-merge-diff reads from the entry's
// JSON (fieldpath.Set.FromJSON, as the apiserver decodes managedFields), for every
// entry the apiserver wrote on objects with list maps keyed by one and two fields,
// sets, atomic lists, a custom resource, status and scale subresources, and for
// hand-written maps: "." members, unknown path element kinds, keys out of order.
// Maps FromJSON would refuse or read oddly are left to the JSON way (ok false).
func TestFieldsSetMatchesFromJSON(t *testing.T) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	ns := cluster.Namespace(t)
	dep := testcluster.FromYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`, labels: {app: web}, annotations: {a: b}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      tolerations: [{key: k, operator: Exists}]
      containers:
      - name: web
        image: nginx:1.27
        args: [a, b]
        ports: [{containerPort: 80, name: http, protocol: TCP}, {containerPort: 80, protocol: UDP}]
        env: [{name: A, value: "1"}, {name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        resources: {requests: {cpu: "1", memory: 1Gi}}
      - name: side
        image: busybox
`)
	svc := testcluster.FromYAML(t, `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: `+ns+`, finalizers: [example.com/x]}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}, {name: dns, port: 53, protocol: UDP}]
`)
	var objs []*unstructured.Unstructured
	objs = append(objs,
		cluster.ApplyAs(ctx, t, dep, "kustomize-controller"),
		cluster.ScaleAs(ctx, t, dep, 3, "kube-controller-manager"),
		cluster.ApplyAs(ctx, t, svc, "argocd-controller"),
		cluster.EditAs(ctx, t, svc, "kubectl-edit", func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "None", "spec", "sessionAffinity")
		}),
		cluster.ApplyAs(ctx, t, widget(t, ns, "w", 8080), "kustomize-controller"),
		cluster.ApplyAs(ctx, t, configMap(t, ns, "settings", map[string]any{"a": "1", "b.c": "2"}), "helm"),
	)
	entries := 0
	for _, o := range objs {
		for _, e := range o.GetManagedFields() {
			var fields map[string]any
			if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &fields); err != nil {
				t.Fatal(err)
			}
			entries++
			direct, ok, viaJSON := live.FieldSets(fields)
			if !ok || viaJSON == nil || !direct.Equals(viaJSON) {
				t.Errorf("%s %s (%s): direct %v (ok %v), from JSON %v", o.GetKind(), e.Manager, e.Subresource, direct, ok, viaJSON)
			}
		}
	}
	if entries < 7 {
		t.Fatalf("only %d managed fields entries", entries)
	}
	for _, tc := range []struct {
		name, fields string
		ok           bool
	}{
		{"empty", `{}`, true},
		{"members and children", `{"f:spec":{".":{},"f:a":{},"f:b":{"f:c":{}}}}`, true},
		{"out of order", `{"f:z":{},"f:a":{"f:y":{},"f:b":{}},"k:{\"name\":\"b\"}":{".":{},"f:name":{}},"k:{\"name\":\"a\"}":{}}`, true},
		{"sets and indexes", `{"f:args":{"v:\"b\"":{},"v:\"a\"":{},"v:1":{}},"f:l":{"i:1":{},"i:0":{"f:x":{}}}}`, true},
		{"unknown path element kind", `{"f:a":{"z:future":{"f:b":{}}},"q:x":{}}`, true},
		{"not a map", `{"f:a":1}`, false},
		{"bad key", `{"f:a":{"k:{not json":{}}}`, false},
	} {
		var fields map[string]any
		if err := json.Unmarshal([]byte(tc.fields), &fields); err != nil {
			t.Fatal(err)
		}
		direct, ok, viaJSON := live.FieldSets(fields)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok && (viaJSON == nil || !direct.Equals(viaJSON)) {
			t.Errorf("%s: direct %v, from JSON %v", tc.name, direct, viaJSON)
		}
	}
}
