package diffing

import (
	"reflect"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestDiffOneSetAtBothSides: diffing a set against itself (the same objects at
// base and head, as markPreExisting judges the base) gives exactly the report of
// diffing it against a copy, which takes the full normalise-and-compare path,
// with ignore rules (paths that hide lines), a Secret, live drift and a live
// object the render lacks.
func TestDiffOneSetAtBothSides(t *testing.T) {
	s := set(t, fixture(t, "changes/head.yaml")+`
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
type: Opaque
stringData: {password: hunter2}
data: {token: c2VjcmV0}
`)
	live := liveState(t, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web}
  managedFields:
  - manager: kubectl-edit
    operation: Update
    fieldsType: FieldsV1
    fieldsV1: {f:spec: {f:replicas: {}}}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.24
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: shop}
type: Opaque
data: {password: b2xk, token: c2VjcmV0}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: orphan, namespace: shop}
data: {A: b}
`)
	copied := func(s render.ObjectSet) render.ObjectSet {
		c := s
		c.Objects = make([]render.Object, len(s.Objects))
		for i, o := range s.Objects {
			o.Obj = o.Obj.DeepCopy()
			c.Objects[i] = o
		}
		return c
	}
	for _, opts := range []Options{
		testOptions(),
		func() Options {
			o := testOptions()
			o.Ignore = []IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas", "/spec/template/spec/containers/0/image"}, Reason: "owned elsewhere"}, {Kind: "Secret", Paths: []string{"/data/token"}}}
			return o
		}(),
	} {
		for _, l := range []*LiveState{nil, live} {
			same := Diff(Input{Name: "t", Base: s, Head: s, Live: l}, opts)
			full := Diff(Input{Name: "t", Base: s, Head: copied(s), Live: l}, opts)
			if !reflect.DeepEqual(same, full) {
				t.Errorf("ignore %v, live %v: one set at both sides\n%+v\nagainst a copy\n%+v", opts.Ignore != nil, l != nil, same, full)
			}
			if l == nil && (same.Summary.Unchanged != len(s.Objects) || len(same.Changes) != len(s.Objects)) {
				t.Errorf("ignore %v: summary %+v, want all %d unchanged", opts.Ignore != nil, same.Summary, len(s.Objects))
			}
		}
	}
}
