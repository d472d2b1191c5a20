package live_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

func TestDryRun(t *testing.T) { runScenarios(t, live.ModeDryRun) }

func TestDryRunApplyErrors(t *testing.T) {
	tests := []struct {
		name string
		// seed creates the live object and returns head.
		seed func(t *testing.T, ns string) *unstructured.Unstructured
		// want are substrings of the prediction error; hidden must not appear.
		want   []string
		hidden []string
	}{
		{
			name: "immutable deployment selector",
			seed: func(t *testing.T, ns string) *unstructured.Unstructured {
				cluster.ApplyAs(t.Context(), t, deployment(t, ns, 2, "web"), "kustomize-controller")
				return deployment(t, ns, 2, "web2")
			},
			want: []string{"dry-run apply of Deployment/" + "", "spec.selector", "field is immutable", "on cluster test"},
		},
		{
			name: "immutable secret keeps its values out of the error",
			seed: func(t *testing.T, ns string) *unstructured.Unstructured {
				cluster.ApplyAs(t.Context(), t, testcluster.FromYAML(t, `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: `+ns+`}
immutable: true
stringData: {password: hunter2-live}
`), "kustomize-controller")
				return testcluster.FromYAML(t, `
apiVersion: v1
kind: Secret
metadata: {name: db, namespace: `+ns+`}
immutable: true
stringData: {password: hunter2-head}
`)
			},
			want:   []string{"dry-run apply of Secret/", "Invalid", "details hidden for Secrets"},
			hidden: []string{"hunter2", "aHVudGVy"},
		},
	}
	r := reader(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := cluster.Namespace(t)
			head := tt.seed(t, ns)
			o := opts(ns)
			o.Mode = live.ModeDryRun
			st := mustRead(t, r, set(head), set(head), o)
			p := st.Predictions[render.KeyOf(head)]
			if p.Err == nil {
				t.Fatalf("prediction has no error; object %v", p.Object)
			}
			msg := p.Err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			for _, h := range tt.hidden {
				if strings.Contains(msg, h) {
					t.Errorf("error %q leaks %q", msg, h)
				}
			}
		})
	}
}
