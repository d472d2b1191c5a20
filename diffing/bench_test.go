package diffing

import (
	"fmt"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render"
)

// BenchmarkDiffRename measures a kustomize namePrefix change over 200 ConfigMaps,
// the worst case of rename pairing (every deleted object against every created one).
func BenchmarkDiffRename(b *testing.B) {
	var base, head strings.Builder
	for i := range 200 {
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: shop}\ndata: {A: 'value-%d', B: b, C: c, D: d}\n---\n", i, i)
		base.WriteString(doc)
		head.WriteString(strings.Replace(doc, "name: cm-", "name: v2-cm-", 1))
	}
	in := Input{Name: "bench", Base: set(b, base.String()), Head: set(b, head.String())}
	opts := testOptions()
	b.ResetTimer()
	for b.Loop() {
		tr := Diff(in, opts)
		if len(tr.Findings) != 400 {
			b.Fatalf("got %d findings, want 400", len(tr.Findings))
		}
	}
}

// benchObj decodes one manifest the way renders and live reads do: integers as
// int64 (the test helper obj gives float64, which toYAML treats otherwise).
func benchObj(b *testing.B, y string) *unstructured.Unstructured {
	b.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := utiljson.Unmarshal(j, &m); err != nil {
		b.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// benchTarget is one target of an image-tag PR as in make bench's PR-wide: 25
// objects, 4 Deployments whose image changes, live equal to base plus status and
// managedFields, and predictions equal to head plus the same.
func benchTarget(b *testing.B) Input {
	b.Helper()
	var base, head render.ObjectSet
	ls := &LiveState{Mode: LiveSimulate, Cluster: "prod", Objects: map[render.ObjectKey]*unstructured.Unstructured{},
		Tracked: map[render.ObjectKey]bool{}, Predictions: map[render.ObjectKey]Prediction{},
		Children: map[render.ObjectKey]Children{}, Volumes: map[render.ObjectKey]*unstructured.Unstructured{}}
	serverSide := func(o *unstructured.Unstructured) *unstructured.Unstructured {
		o = o.DeepCopy()
		o.SetResourceVersion("12345")
		o.SetUID("0b9c2a8e-1111-2222-3333-444455556666")
		o.Object["status"] = map[string]any{"observedGeneration": int64(3), "replicas": int64(2)}
		md := o.Object["metadata"].(map[string]any)
		md["managedFields"] = []any{map[string]any{"manager": "kustomize-controller", "operation": "Apply",
			"fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}}}
		return o
	}
	for i := range 25 {
		var doc string
		if i < 4 {
			doc = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%d, namespace: shop, labels: {app: app-%d, tier: web}, annotations: {team: payments}}
spec:
  replicas: 2
  selector: {matchLabels: {app: app-%d}}
  template:
    metadata: {labels: {app: app-%d}}
    spec:
      containers:
      - name: app
        image: registry.example.com/app:TAG
        ports: [{containerPort: 8080, protocol: TCP}]
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 256Mi}}
        env: [{name: LOG_LEVEL, value: info}, {name: PORT, value: "8080"}]
`, i, i, i, i)
		} else {
			doc = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: shop, labels: {app: shop}}\ndata: {A: 'value-%d', B: b, C: c, D: d, PORT: '8080'}\n", i, i)
		}
		bo := benchObj(b, strings.Replace(doc, "TAG", "1.0.0", 1))
		ho := benchObj(b, strings.Replace(doc, "TAG", "1.1.0", 1))
		k := render.KeyOf(bo)
		base.Objects = append(base.Objects, render.Object{Key: k, Obj: bo, Source: "app.yaml"})
		head.Objects = append(head.Objects, render.Object{Key: k, Obj: ho, Source: "app.yaml"})
		ls.Objects[k], ls.Tracked[k] = serverSide(bo), true
		ls.Predictions[k] = Prediction{Object: serverSide(ho)}
	}
	base.Sort()
	head.Sort()
	return Input{Name: "bench", Base: base, Head: head, Live: ls}
}

// BenchmarkDiffTarget measures Diff on one target of an image-tag PR: most
// objects equal between base and head and to live (the copy-free comparison),
// four with a base and a live diff (Normalize, Mask, toYAML, the line diff).
func BenchmarkDiffTarget(b *testing.B) {
	in := benchTarget(b)
	opts := testOptions()
	b.ReportAllocs()
	for b.Loop() {
		tr := Diff(in, opts)
		if tr.Summary.Modified != 4 {
			b.Fatalf("modified %d, want 4", tr.Summary.Modified)
		}
	}
}

// BenchmarkDiffTargetAtBase is markPreExisting's second Diff: base as head.
func BenchmarkDiffTargetAtBase(b *testing.B) {
	in := benchTarget(b)
	in.Head = in.Base
	opts := testOptions()
	b.ReportAllocs()
	for b.Loop() {
		if tr := Diff(in, opts); tr.Summary.Unchanged != 25 {
			b.Fatalf("unchanged %d, want 25", tr.Summary.Unchanged)
		}
	}
}

// BenchmarkToYAML compares toYAML (appendYAML for this object) with yaml/v2's
// Marshal and the JSON round trip it replaces on a normalised Deployment.
func BenchmarkToYAML(b *testing.B) {
	o := Normalize(benchTarget(b).Head.Objects[0].Obj)
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = toYAML(o)
		}
	})
	b.Run("yaml-v2", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = yamlv2.Marshal(o.Object)
		}
	})
	b.Run("json-round-trip", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = roundTripYAML(b, o)
		}
	})
}
