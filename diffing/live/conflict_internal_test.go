package live

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveFieldPath(t *testing.T) {
	obj := map[string]any{
		"data": map[string]any{"app": "x", "app.properties": "a=1", "a/b~c": "y"},
		"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "side", "image": "envoy"},
				map[string]any{"name": "web", "image": "nginx", "ports": []any{
					map[string]any{"containerPort": int64(80), "protocol": "TCP", "name": "http"},
					map[string]any{"containerPort": int64(80), "protocol": "UDP"},
				}},
			},
			"finalizers": []any{"a", "b,]c"},
			"args":       []any{"x", "y"},
		},
	}
	tests := []struct {
		path    string
		wantPtr string
		wantVal any
		wantOK  bool
	}{
		{".data.app", "/data/app", "x", true},
		{".data.app.properties", "/data/app.properties", "a=1", true},
		{".data.a/b~c", "/data/a~1b~0c", "y", true},
		{`.spec.containers[name="web"].image`, "/spec/containers/1/image", "nginx", true},
		{`.spec.containers[name="web"].ports[containerPort=80,protocol="UDP"]`, "/spec/containers/1/ports/1", map[string]any{"containerPort": int64(80), "protocol": "UDP"}, true},
		{`.spec.finalizers[="b,]c"]`, "/spec/finalizers/1", "b,]c", true},
		{".spec.args[1]", "/spec/args/1", "y", true},
		{`.spec.containers[name="db"].image`, "", nil, false},
		{".data.missing", "", nil, false},
		{`.spec.containers[name=web]`, "", nil, false}, // not JSON
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			ptr, val, ok := resolveFieldPath(obj, tt.path)
			if diff := cmp.Diff([]any{tt.wantPtr, tt.wantVal, tt.wantOK}, []any{ptr, val, ok}); diff != "" {
				t.Errorf("resolveFieldPath(%q) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
}

func TestParseConflictManager(t *testing.T) {
	tests := []struct {
		msg        string
		name, sub  string
		wantUpdate bool
	}{
		{`conflict with "kustomize-controller"`, "kustomize-controller", "", false},
		{`conflict with "kubectl-edit" using v1 at 2026-01-02T03:04:05Z`, "kubectl-edit", "", true},
		{`conflict with "kube-controller-manager" with subresource "scale" using apps/v1`, "kube-controller-manager", "scale", true},
		{`conflict with "odd \"name\"" using v1`, `odd "name"`, "", true},
		{`something else`, "something else", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			name, sub, update := parseConflictManager(tt.msg)
			if diff := cmp.Diff([]any{tt.name, tt.sub, tt.wantUpdate}, []any{name, sub, update}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
