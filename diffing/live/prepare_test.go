package live_test

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

var (
	coreV1   = schema.GroupVersion{Version: "v1"}
	appsV1   = schema.GroupVersion{Group: "apps", Version: "v1"}
	widgetV1 = schema.GroupVersion{Group: "live.example.com", Version: "v1"}
)

// openAPIGets counts the OpenAPI v3 requests a client sends and can cancel a
// context on the first of them.
type openAPIGets struct {
	mu       sync.Mutex
	n        int
	paths    map[string]int // requests by path
	cancelAt int            // the OpenAPI request (1 is the first) before which cancel is called
	cancel   func()         // nil: never
	next     http.RoundTripper
}

func (o *openAPIGets) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasPrefix(req.URL.Path, "/openapi/v3") {
		o.mu.Lock()
		o.n++
		if o.paths == nil {
			o.paths = map[string]int{}
		}
		o.paths[req.URL.Path]++
		var cancel func()
		if o.n == o.cancelAt {
			cancel = o.cancel
		}
		o.mu.Unlock()
		if cancel != nil {
			cancel()
			<-req.Context().Done()
		}
	}
	return o.next.RoundTrip(req)
}

func (o *openAPIGets) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

// TestPrepareSchemas: converters built ahead are the ones a Read uses (it sends
// no OpenAPI request of its own, and predicts what a Reader without them
// predicts); a preparation cancelled halfway keeps nothing, so the Read after it
// is not handed the cancellation as its error.
func TestPrepareSchemas(t *testing.T) {
	ns := cluster.Namespace(t)
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	base := set(deployment(t, ns, 2, "web"), configMap(t, ns, "cfg", map[string]any{"a": "1"}), widget(t, ns, "w", 80))
	for _, o := range base.Objects {
		cluster.ApplyAs(ctx, t, o.Obj, "kustomize-controller")
	}
	head := set(deployment(t, ns, 3, "web"), configMap(t, ns, "cfg", map[string]any{"a": "2"}), widget(t, ns, "w", 8080))
	want := mustRead(t, reader(t, nil), base, head, opts(ns))

	gets := &openAPIGets{}
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { gets.next = rt; return gets }
	r := reader(t, cfg)
	r.PrepareSchemas(ctx, coreV1, appsV1, widgetV1)
	if got := live.PreparedSchemas(r); !reflect.DeepEqual(got, map[schema.GroupVersion]bool{coreV1: true, appsV1: true, widgetV1: true}) {
		t.Fatalf("prepared %v, want core/v1, apps/v1 and the Widget's", got)
	}
	before := gets.count()
	if before == 0 {
		t.Fatal("PrepareSchemas sent no OpenAPI request")
	}
	got := mustRead(t, r, base, head, opts(ns))
	if n := gets.count() - before; n != 0 {
		t.Errorf("Read sent %d OpenAPI requests after PrepareSchemas, want 0", n)
	}
	if !samePredictions(got, want) {
		t.Errorf("predictions differ from a Reader that built its own converters")
	}

	// Cancelled at its first OpenAPI request (the index), or at the second (the
	// first document): nothing kept. The Widget, which client-go's built-in
	// schemas do not know, fails its Read if the cancellation was kept.
	for _, at := range []int{1, 2} {
		cctx, cancel := context.WithCancel(ctx)
		gets := &openAPIGets{cancelAt: at, cancel: cancel}
		cfg := cluster.Config()
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { gets.next = rt; return gets }
		r := reader(t, cfg)
		r.PrepareSchemas(cctx, widgetV1, coreV1)
		if got := live.PreparedSchemas(r); len(got) != 0 {
			t.Fatalf("cancelled at OpenAPI request %d: kept %v", at, got)
		}
		if got := mustRead(t, r, base, head, opts(ns)); !samePredictions(got, want) {
			t.Errorf("cancelled at OpenAPI request %d: predictions differ", at)
		}
	}
}

// TestReadBuildsEachSchemaOnce: a Read builds the schemas of its objects'
// GroupVersions while it lists them, each at most once although the
// simulations that need them start meanwhile (issue 25): the index and every
// document are read once, and the predictions are those of a Reader that
// built them ahead.
func TestReadBuildsEachSchemaOnce(t *testing.T) {
	ns := cluster.Namespace(t)
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	base := set(deployment(t, ns, 2, "web"), configMap(t, ns, "cfg", map[string]any{"a": "1"}), configMap(t, ns, "cfg2", map[string]any{"a": "1"}), widget(t, ns, "w", 80))
	for _, o := range base.Objects {
		cluster.ApplyAs(ctx, t, o.Obj, "kustomize-controller")
	}
	head := set(deployment(t, ns, 3, "web"), configMap(t, ns, "cfg", map[string]any{"a": "2"}), configMap(t, ns, "cfg2", map[string]any{"a": "3"}), widget(t, ns, "w", 8080))
	prepared := reader(t, nil)
	prepared.PrepareSchemas(ctx, coreV1, appsV1, widgetV1)
	want := mustRead(t, prepared, base, head, opts(ns))

	// The LISTs of the namespace wait (up to 10 s) for a schema's document to
	// be asked for: the Read builds them while it lists, not after.
	gets := &openAPIGets{}
	docAsked := make(chan struct{})
	var once sync.Once
	var late atomic.Bool
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		gets.next = rt
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch {
			case strings.HasPrefix(req.URL.Path, "/openapi/v3/api"):
				once.Do(func() { close(docAsked) })
			case strings.Contains(req.URL.Path, "/namespaces/"+ns+"/"):
				select {
				case <-docAsked:
				case <-time.After(10 * time.Second):
					late.Store(true)
				}
			}
			return gets.RoundTrip(req)
		})
	}
	got := mustRead(t, reader(t, cfg), base, head, opts(ns))
	if late.Load() {
		t.Errorf("no OpenAPI document was asked for while the objects were listed")
	}
	gets.mu.Lock()
	paths := gets.paths
	gets.mu.Unlock()
	for _, p := range []string{"/openapi/v3", "/openapi/v3/api/v1", "/openapi/v3/apis/apps/v1", "/openapi/v3/apis/live.example.com/v1"} {
		if paths[p] != 1 {
			t.Errorf("%s read %d times, want once (all: %v)", p, paths[p], paths)
		}
	}
	if !samePredictions(got, want) {
		t.Errorf("predictions differ from a Reader that built its schemas ahead")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// samePredictions compares two Reads' predictions but for the times of their
// managedFields entries (each simulation stamps its own now).
func samePredictions(a, b *diffing.LiveState) bool {
	strip := func(st *diffing.LiveState) map[string]any {
		out := map[string]any{}
		for k, p := range st.Predictions {
			var obj map[string]any
			if p.Object != nil {
				o := p.Object.DeepCopy()
				mf := o.GetManagedFields()
				for i := range mf {
					mf[i].Time = nil
				}
				o.SetManagedFields(mf)
				obj = o.Object
			}
			out[k.String()] = []any{obj, p.Conflicts, fmt.Sprint(p.Err), p.Note}
		}
		return out
	}
	return len(a.Predictions) >= 3 && len(a.Predictions) == len(b.Predictions) && reflect.DeepEqual(strip(a), strip(b))
}
