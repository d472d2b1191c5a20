package watch

import (
	"context"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kwatch "k8s.io/apimachinery/pkg/watch"
	dynfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

var (
	cmGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	depGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

type fixture struct {
	t      *testing.T
	client *dynfake.FakeDynamicClient
	w      *Watcher
	mu     sync.Mutex
	fired  map[string]int
}

func newFixture(t *testing.T, opts Options, forbidWatch bool) *fixture {
	t.Helper()
	client := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cmGVR: "ConfigMapList", depGVR: "DeploymentList",
	})
	if forbidWatch {
		client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, kwatch.Interface, error) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), "", nil)
		})
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	f := &fixture{t: t, client: client, fired: map[string]int{}}
	f.w = NewWithClients(map[string]Client{"prod": {Dynamic: client, Mapper: mapper}}, func(pr string) {
		f.mu.Lock()
		f.fired[pr]++
		f.mu.Unlock()
	}, opts)
	t.Cleanup(f.w.Stop)
	return f
}

func (f *fixture) count(pr string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired[pr]
}

// waitFired waits until pr fired n times, failing after a generous deadline.
func (f *fixture) waitFired(pr string, n int) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for f.count(pr) < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("%s fired %d times, want %d", pr, f.count(pr), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quiet asserts pr fired exactly n times after several debounce windows.
func (f *fixture) quiet(pr string, n int, window time.Duration) {
	f.t.Helper()
	time.Sleep(5 * window)
	if got := f.count(pr); got != n {
		f.t.Fatalf("%s fired %d times, want %d", pr, got, n)
	}
}

func configMap(name string, data map[string]any, manager string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"data":     data,
	}}
	u.SetManagedFields(managed(manager, data))
	return u
}

func managed(manager string, data map[string]any) []metav1.ManagedFieldsEntry {
	fields := `{"f:data":{`
	first := true
	for k := range data {
		if !first {
			fields += ","
		}
		first = false
		fields += `"f:` + k + `":{}`
	}
	fields += `}}`
	now := metav1.NewTime(time.Now())
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Time: &now,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)}}
}

// seenBy records u as a preview of cluster prod would.
func seenBy(u *unstructured.Unstructured) diffing.LiveObject {
	gvk := u.GroupVersionKind()
	return diffing.SeenLive("prod", render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}, gvk.Version, u)
}

func (f *fixture) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	out, err := f.client.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

func (f *fixture) update(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	f.t.Helper()
	if _, err := f.client.Resource(gvr).Namespace(u.GetNamespace()).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// waitSynced waits until the watcher's sources have listed (Watch starts them
// asynchronously): an object created before is then in the cache.
func (f *fixture) waitSources(watches, polls int) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := f.w.Stats()
		if s.Watches == watches && s.Polls == polls {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("sources: %d watches, %d polls; want %d, %d", s.Watches, s.Polls, watches, polls)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDebounceGivesOneRunPerWindow(t *testing.T) {
	const window = 300 * time.Millisecond
	f := newFixture(t, Options{Debounce: window}, false)
	cm := f.create(cmGVR, configMap("settings", map[string]any{"LOG_LEVEL": "info"}, "kustomize-controller"))
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(cm)})
	f.quiet("pr1", 0, window) // the initial list matches what the preview saw
	for _, level := range []string{"debug", "trace", "warn"} {
		f.update(cmGVR, configMap("settings", map[string]any{"LOG_LEVEL": level}, "kubectl-edit"))
	}
	f.waitFired("pr1", 1)
	f.quiet("pr1", 1, window)
	f.update(cmGVR, configMap("settings", map[string]any{"LOG_LEVEL": "error"}, "kubectl-edit"))
	f.waitFired("pr1", 2)
}

func TestObjectIndexMapsChangesToTheirPullRequests(t *testing.T) {
	const window = 100 * time.Millisecond
	f := newFixture(t, Options{Debounce: window}, false)
	a := f.create(cmGVR, configMap("a", map[string]any{"K": "1"}, "kustomize-controller"))
	b := f.create(cmGVR, configMap("b", map[string]any{"K": "1"}, "kustomize-controller"))
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(a)})
	f.w.Watch("pr2", "acme/shop", []diffing.LiveObject{seenBy(a), seenBy(b)})
	if s := f.w.Stats(); s.PRs != 2 || s.Objects != 2 || s.Watches != 1 {
		t.Fatalf("stats %+v: want 2 PRs, 2 objects, 1 informer shared by both", s)
	}
	f.update(cmGVR, configMap("b", map[string]any{"K": "2"}, "kubectl-edit"))
	f.waitFired("pr2", 1)
	f.quiet("pr1", 0, window)

	f.update(cmGVR, configMap("a", map[string]any{"K": "2"}, "kubectl-edit"))
	f.waitFired("pr1", 1)
	f.waitFired("pr2", 2)

	// Closing pr2 stops its re-checks; pr1 still watches a.
	f.w.Forget("pr2")
	f.update(cmGVR, configMap("a", map[string]any{"K": "3"}, "kubectl-edit"))
	f.waitFired("pr1", 2)
	f.update(cmGVR, configMap("b", map[string]any{"K": "3"}, "kubectl-edit"))
	f.quiet("pr2", 2, window)
	if s := f.w.Stats(); s.PRs != 1 || s.Objects != 1 {
		t.Fatalf("stats after Forget %+v: want 1 PR, 1 object", s)
	}
	// The last pull request gone, the informer stops.
	f.w.Forget("pr1")
	f.waitSources(0, 0)
}

func TestStatusAndResourceVersionOnlyUpdatesAreIgnored(t *testing.T) {
	const window = 100 * time.Millisecond
	f := newFixture(t, Options{Debounce: window}, false)
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "resourceVersion": "1"},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"readyReplicas": int64(1)},
	}}
	dep = f.create(depGVR, dep)
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(dep)})

	status := dep.DeepCopy()
	_ = unstructured.SetNestedField(status.Object, int64(2), "status", "readyReplicas")
	status.SetResourceVersion("2")
	status.SetGeneration(5)
	f.update(depGVR, status)
	f.quiet("pr1", 0, window)

	spec := status.DeepCopy()
	_ = unstructured.SetNestedField(spec.Object, int64(7), "spec", "replicas")
	f.update(depGVR, spec)
	f.waitFired("pr1", 1)

	// A new manager taking over a field with the same value is a change too.
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(spec)})
	f.quiet("pr1", 1, window)
	took := spec.DeepCopy()
	took.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)}})
	f.update(depGVR, took)
	f.waitFired("pr1", 2)

	// Deleting a previewed object is a change.
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(took)})
	if err := f.client.Resource(depGVR).Namespace("shop").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitFired("pr1", 3)
}

func TestCreationOfAnAbsentObjectIsAChange(t *testing.T) {
	const window = 100 * time.Millisecond
	f := newFixture(t, Options{Debounce: window}, false)
	absent := diffing.SeenLive("prod", render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "new"}, "v1", nil)
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{absent})
	f.waitSources(1, 0)
	f.quiet("pr1", 0, window)
	f.create(cmGVR, configMap("new", map[string]any{"K": "1"}, "kubectl-create"))
	f.waitFired("pr1", 1)
}

func TestForbiddenWatchFallsBackToList(t *testing.T) {
	const window = 50 * time.Millisecond
	f := newFixture(t, Options{Debounce: window, PollInterval: 100 * time.Millisecond}, true)
	cm := f.create(cmGVR, configMap("settings", map[string]any{"LOG_LEVEL": "info"}, "kustomize-controller"))
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(cm)})
	f.waitSources(0, 1)
	f.quiet("pr1", 0, window) // LISTs that find what the preview saw run nothing
	f.update(cmGVR, configMap("settings", map[string]any{"LOG_LEVEL": "debug"}, "kubectl-edit"))
	f.waitFired("pr1", 1)
	if err := f.client.Resource(cmGVR).Namespace("shop").Delete(context.Background(), "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(configMap("settings", map[string]any{"LOG_LEVEL": "debug"}, "kubectl-edit"))})
	f.waitFired("pr1", 2)
	lists := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "list" {
			lists++
		}
	}
	if lists < 2 {
		t.Errorf("%d LISTs, want the periodic re-check to LIST", lists)
	}
}

func TestRateLimitPerRepository(t *testing.T) {
	const window = 20 * time.Millisecond
	// One re-preview a minute, burst 1: a second change of the same repository
	// waits; another repository's does not.
	f := newFixture(t, Options{Debounce: window, RepoPerMinute: 1, RepoBurst: 1}, false)
	a := f.create(cmGVR, configMap("a", map[string]any{"K": "1"}, "kustomize-controller"))
	b := f.create(cmGVR, configMap("b", map[string]any{"K": "1"}, "kustomize-controller"))
	f.w.Watch("pr1", "acme/shop", []diffing.LiveObject{seenBy(a)})
	f.w.Watch("pr2", "acme/shop", []diffing.LiveObject{seenBy(b)})
	f.w.Watch("pr3", "acme/other", []diffing.LiveObject{seenBy(b)})
	f.update(cmGVR, configMap("a", map[string]any{"K": "2"}, "kubectl-edit"))
	f.waitFired("pr1", 1)
	f.update(cmGVR, configMap("b", map[string]any{"K": "2"}, "kubectl-edit"))
	f.waitFired("pr3", 1)
	f.quiet("pr2", 0, window)
	if s := f.w.Stats(); s.Limited != 1 {
		t.Errorf("stats %+v: want one re-preview held back by the rate limit", s)
	}
}
