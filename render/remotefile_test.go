package render_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestKustomizeNeverFetchesRemoteFiles: a kustomization listing a remote file
// (resources: [https://…/x.yaml]) would make kustomize's own loader http.Get
// it, past the remote policy. The render must not let it: the server sees no
// request, with or without a fetcher that allows the URL, and the target is
// not rendered.
func TestKustomizeNeverFetchesRemoteFiles(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n"))
	}))
	t.Cleanup(srv.Close)
	root := checkout(t, map[string]string{
		"app/kustomization.yaml": kustHeader + "resources:\n- cm.yaml\n- " + srv.URL + "/x.yaml\n",
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n",
	})
	for name, f := range map[string]*render.Options{"no fetcher": nil, "allowed": {Remote: fetcher(t, srv.URL+"/")}} {
		opts := render.DefaultOptions()
		opts.Renderer = render.RendererKustomize
		if f != nil {
			opts.Remote = f.Remote
		}
		set, err := render.Render(t.Context(), root, "app", opts)
		if err == nil {
			t.Errorf("%s: rendered %v", name, kindNames(set))
		} else if msg := err.Error(); !strings.Contains(msg, "app/kustomization.yaml:5") ||
			!(strings.Contains(msg, "is not fetched") || strings.Contains(msg, "not supported")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the remote file was fetched %d times", n)
	}
}
