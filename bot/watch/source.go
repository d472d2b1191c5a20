package watch

import (
	"context"
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// sourceKey is one informer (or poll): a resource of a cluster, in one namespace
// ("" for cluster-scoped resources).
type sourceKey struct {
	cluster string
	gvr     schema.GroupVersionResource
	ns      string
}

// source watches (or, when watch is forbidden, polls) one sourceKey. Its fields
// are guarded by the Watcher's mu, except store (thread-safe) and done.
type source struct {
	w       *Watcher
	key     sourceKey
	ids     map[objID]int // watched objects and how many pull requests watch each
	polling bool
	store   cache.Store // the informer's cache; nil once polling
	cancel  context.CancelFunc
	done    chan struct{}
}

// seen is what the informer's cache keeps of an object: its name and, when a
// preview includes it, what the comparison reads (diffing.SeenLive). Everything
// else of the object (status, managedFields, the values themselves) is dropped by
// the transform before the object is cached.
type seen struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Live *diffing.LiveObject
}

// DeepCopyObject implements runtime.Object; seen is never modified once built.
func (s *seen) DeepCopyObject() runtime.Object { c := *s; return &c }

// startSource starts the informer of key (w.mu held).
func (w *Watcher) startSource(key sourceKey) *source {
	ctx, cancel := context.WithCancel(context.Background())
	src := &source{w: w, key: key, ids: map[objID]int{}, cancel: cancel, done: make(chan struct{})}
	w.sources[key] = src
	inf := dynamicinformer.NewFilteredDynamicInformer(w.client(key.cluster), key.gvr, key.ns, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(src.transform)
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || errors.Is(err, errWatchForbidden) {
			src.toPoll()
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { src.event(obj, false) },
		UpdateFunc: func(_, obj any) { src.event(obj, false) },
		DeleteFunc: func(obj any) { src.event(obj, true) },
	})
	src.store = inf.GetStore()
	go func() {
		defer close(src.done)
		inf.RunWithContext(ctx)
	}()
	return src
}

// errWatchForbidden lets tests stand for a forbidden watch.
var errWatchForbidden = errors.New("watch forbidden")

func (s *source) unref(id objID) {
	if s.ids[id]--; s.ids[id] <= 0 {
		delete(s.ids, id)
	}
}

func (s *source) stop() { s.cancel() }

// objectID is the objID of a cached or listed object of this source.
func (s *source) objectID(kind, group, ns, name string) objID {
	return objID{cluster: s.key.cluster, group: group, kind: kind, ns: ns, name: name}
}

// live is what a preview would record of u, when a preview watches it.
func (s *source) live(u *unstructured.Unstructured) (objID, *diffing.LiveObject) {
	gvk := u.GroupVersionKind()
	id := s.objectID(gvk.Kind, gvk.Group, u.GetNamespace(), u.GetName())
	s.w.mu.Lock()
	_, watched := s.w.index[id]
	s.w.mu.Unlock()
	if !watched {
		return id, nil
	}
	k := render.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	o := diffing.SeenLive(s.key.cluster, k, gvk.Version, u)
	return id, &o
}

// transform strips an object to what watching needs (seen), before the
// informer caches it.
func (s *source) transform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil // already transformed, or a tombstone
	}
	_, o := s.live(u)
	out := &seen{Live: o}
	out.APIVersion, out.Kind = u.GetAPIVersion(), u.GetKind()
	out.Name, out.Namespace, out.ResourceVersion = u.GetName(), u.GetNamespace(), u.GetResourceVersion()
	return out, nil
}

// event handles one informer notification.
func (s *source) event(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = t.Obj, true
	}
	o, ok := obj.(*seen)
	if !ok {
		return
	}
	gvk := o.GroupVersionKind()
	id := s.objectID(gvk.Kind, gvk.Group, o.Namespace, o.Name)
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	switch {
	case deleted:
		s.w.observe(id, &diffing.LiveObject{Absent: true})
	case o.Live != nil:
		s.w.observe(id, o.Live)
	}
}

// current is the cached state of id: known is false when the cache cannot say
// (not synced yet, polling, or cached before a preview included it). w.mu held.
func (s *source) current(id objID) (*diffing.LiveObject, bool) {
	if s.polling || s.store == nil {
		return nil, false
	}
	key := id.name
	if id.ns != "" {
		key = id.ns + "/" + id.name
	}
	obj, exists, err := s.store.GetByKey(key)
	if err != nil || !exists {
		return nil, false // absent, or not listed yet: the informer's add says
	}
	o, ok := obj.(*seen)
	if !ok || o.Live == nil {
		return nil, false
	}
	return o.Live, true
}

// toPoll replaces the informer by a periodic LIST: the identity may list the
// type but not watch it.
func (s *source) toPoll() {
	s.w.mu.Lock()
	if s.polling || s.w.sources[s.key] != s {
		s.w.mu.Unlock()
		return
	}
	s.polling = true
	s.store = nil
	s.w.mu.Unlock()
	s.w.opts.Logger.Warn("watch forbidden: polling with LIST instead", "cluster", s.key.cluster,
		"resource", s.key.gvr.String(), "namespace", s.key.ns, "interval", s.w.opts.PollInterval)
	s.cancel()
	ctx, cancel := context.WithCancel(context.Background())
	s.w.mu.Lock()
	s.cancel = cancel
	s.w.mu.Unlock()
	go s.pollLoop(ctx)
}

func (s *source) pollLoop(ctx context.Context) {
	t := time.NewTicker(s.w.opts.PollInterval)
	defer t.Stop()
	for {
		if err := s.poll(ctx); err != nil && ctx.Err() == nil {
			s.w.opts.Logger.Warn("re-check LIST failed", "cluster", s.key.cluster, "resource", s.key.gvr.String(),
				"namespace", s.key.ns, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// listPage is how many objects one LIST page holds.
const listPage = 500

// poll LISTs the source once and compares every watched object, present or
// gone, with what the previews saw.
func (s *source) poll(ctx context.Context) error {
	ri := s.w.client(s.key.cluster).Resource(s.key.gvr).Namespace(s.key.ns)
	present := map[objID]*diffing.LiveObject{}
	opts := metav1.ListOptions{Limit: listPage}
	for {
		l, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range l.Items {
			if id, o := s.live(&l.Items[i]); o != nil {
				present[id] = o
			}
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			break
		}
	}
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	for id := range s.ids {
		cur := present[id]
		if cur == nil {
			cur = &diffing.LiveObject{Absent: true}
		}
		s.w.observe(id, cur)
	}
	return nil
}
