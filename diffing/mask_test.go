package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNormalize(t *testing.T) {
	in := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 0b5a4c1e-1111-2222-3333-444455556666
  resourceVersion: "4242"
  generation: 7
  creationTimestamp: "2026-10-01T10:00:00Z"
  selfLink: /apis/apps/v1/namespaces/shop/deployments/web
  annotations:
    deployment.kubernetes.io/revision: "3"
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"Deployment"}'
  labels:
    app: web
  managedFields:
  - manager: kubectl-edit
    operation: Update
    apiVersion: apps/v1
    fieldsType: FieldsV1
    fieldsV1: {"f:spec": {"f:replicas": {}}}
spec:
  replicas: 3
status:
  readyReplicas: 3
`)
	want := obj(t, `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app: web
spec:
  replicas: 3
`)
	got := Normalize(in)
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("Normalize (-want +got):\n%s", diff)
	}
	if _, ok := in.Object["status"]; !ok {
		t.Error("Normalize changed its input")
	}
}

func TestMask(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "secret data and stringData",
			in: `
apiVersion: v1
kind: Secret
metadata:
  name: api-creds
  namespace: shop
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"data":{"password":"aHVudGVyMi1TRUNSRVQ="}}'
    team: payments
data:
  password: aHVudGVyMi1TRUNSRVQ=
stringData:
  token: hunter2-SECRET
type: Opaque
`,
			want: `
apiVersion: v1
kind: Secret
metadata:
  name: api-creds
  namespace: shop
  annotations:
    team: payments
data:
  password: <hidden>
stringData:
  token: <hidden>
type: Opaque
`,
		},
		{
			name: "last-applied removed from any kind",
			in: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{}'
data:
  LOG_LEVEL: info
`,
			want: `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  LOG_LEVEL: info
`,
		},
		{
			name: "a ConfigMap keeps its values",
			in:   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
			want: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: b}\n",
		},
		{
			name: "a custom resource named Secret in another group is not masked",
			in:   "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: c}\ndata: {a: b}\n",
			want: "apiVersion: example.com/v1\nkind: Secret\nmetadata: {name: c}\ndata: {a: b}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := obj(t, tt.in)
			before := in.DeepCopy()
			got := Mask(in)
			if diff := cmp.Diff(obj(t, tt.want).Object, got.Object); diff != "" {
				t.Errorf("Mask (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, in.Object); diff != "" {
				t.Errorf("Mask changed its input (-before +after):\n%s", diff)
			}
		})
	}
	if Mask(nil) != nil || Normalize(nil) != nil {
		t.Error("Mask(nil) and Normalize(nil) must be nil")
	}
}
