package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// set builds an ObjectSet as a renderer would.
func set(objs ...*unstructured.Unstructured) render.ObjectSet {
	var s render.ObjectSet
	for _, o := range objs {
		s.Objects = append(s.Objects, render.Object{Key: render.KeyOf(o), Obj: o, Source: "test.yaml"})
	}
	s.Sort()
	return s
}

// reader is a Reader on cfg (the admin config when nil).
func reader(t testing.TB, cfg *rest.Config) *live.Reader {
	t.Helper()
	if cfg == nil {
		cfg = cluster.Config()
	}
	r, err := live.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// opts are DefaultOptions as kustomize-controller on cluster "test".
func opts(ns string) live.Options {
	o := live.DefaultOptions()
	o.Manager = "kustomize-controller"
	o.Cluster = "test"
	o.Namespace = ns
	return o
}

// managerTime is the time live's managedFields give manager, as Conflicts carry it.
func managerTime(t *testing.T, obj *unstructured.Unstructured, manager string) *time.Time {
	t.Helper()
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Time != nil {
			u := e.Time.UTC()
			return &u
		}
	}
	return nil
}

// norm gives conflict values in JSON form, so int64 7 from the API and 7 written in
// a test compare equal.
func norm(cs []diffing.Conflict) []diffing.Conflict {
	out := make([]diffing.Conflict, len(cs))
	for i, c := range cs {
		c.Live, c.Head = jsonText(c.Live), jsonText(c.Head)
		out[i] = c
	}
	return out
}

func jsonText(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable %T", v)
	}
	return string(b)
}

var equateEmpty = cmpopts.EquateEmpty()

func mustRead(t testing.TB, r *live.Reader, base, head render.ObjectSet, o live.Options) *diffing.LiveState {
	t.Helper()
	st := r.Read(context.Background(), base, head, o)
	if st.Err != nil {
		t.Fatalf("Read: %v", st.Err)
	}
	return st
}

// requestLog records the API requests a client makes, for counting LISTs.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "GET /api/v1/namespaces/x/configmaps"
}

func (l *requestLog) add(method, path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, method+" "+path)
}

var (
	pvGVR      = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	deleteOpts = metav1.DeleteOptions{}
)
