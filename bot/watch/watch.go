package watch

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/driftpreview/driftpreview/diffing"
)

// Defaults of Options.
const (
	DefaultDebounce     = 5 * time.Second
	DefaultRepoPerMin   = 30
	DefaultRepoBurst    = 10
	DefaultPollInterval = 5 * time.Minute
)

// Options configures a Watcher.
type Options struct {
	// Debounce is the window after a pull request's first relevant change in
	// which further changes give no further run (DefaultDebounce).
	Debounce time.Duration
	// RepoPerMinute and RepoBurst rate-limit the re-previews of one repository
	// (a token bucket; DefaultRepoPerMin, DefaultRepoBurst). A re-preview over
	// the limit waits for its token; it is not dropped.
	RepoPerMinute float64
	RepoBurst     int
	// PollInterval is how often a type the identity may not watch is LISTed
	// instead (DefaultPollInterval).
	PollInterval time.Duration
	Logger       *slog.Logger
}

func (o Options) normalized() Options {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.RepoPerMinute <= 0 {
		o.RepoPerMinute = DefaultRepoPerMin
	}
	if o.RepoBurst <= 0 {
		o.RepoBurst = DefaultRepoBurst
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Client is what the Watcher needs of one cluster: a dynamic client and a REST
// mapper to find each kind's resource.
type Client struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// NewClient builds the Client of a rest.Config: the dynamic client and a mapper
// over memory-cached discovery.
func NewClient(cfg *rest.Config) (Client, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Client{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Client{}, err
	}
	return Client{Dynamic: dc, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Fire is called, on a goroutine of its own, with the key of a pull request whose
// previewed live objects changed in a way that can alter its preview.
type Fire func(pr string)

// objID names one live object across clusters.
type objID struct {
	cluster, group, kind, ns, name string
}

func idOf(o *diffing.LiveObject) objID {
	return objID{o.Cluster, o.Group, o.Kind, o.Namespace, o.Name}
}

// prState is one watched pull request.
type prState struct {
	repo  string
	objs  map[objID]*diffing.LiveObject
	srcs  map[objID]*source
	timer *time.Timer // the pending callback; a Watch in between keeps it
}

// Watcher watches the live objects of open pull requests' previews. It is safe
// for concurrent use.
type Watcher struct {
	opts    Options
	fire    Fire
	clients map[string]Client

	mu       sync.Mutex
	prs      map[string]*prState
	index    map[objID]map[string]*diffing.LiveObject
	sources  map[sourceKey]*source
	limiters map[string]*rate.Limiter
	mapping  map[mapKey]mapping
	stats    Stats
	stopped  bool
}

// Stats are the Watcher's counters and sizes, for metrics and benchmarks.
type Stats struct {
	PRs      int // pull requests watched
	Objects  int // distinct live objects watched
	Watches  int // informers running
	Polls    int // sources polled with LIST because watch is forbidden
	Changes  int // events that differ from what a preview saw
	Fired    int // callbacks (re-previews asked for)
	Limited  int // callbacks delayed by the per-repository rate limit
	Unmapped int // objects whose kind the cluster does not serve (not watched)
}

// New builds a Watcher of the clusters by name, calling fire for each pull
// request to re-preview.
func New(clusters map[string]*rest.Config, fire Fire, opts Options) (*Watcher, error) {
	clients := map[string]Client{}
	for name, cfg := range clusters {
		c, err := NewClient(cfg)
		if err != nil {
			return nil, fmt.Errorf("watching cluster %s: %w", name, err)
		}
		clients[name] = c
	}
	return NewWithClients(clients, fire, opts), nil
}

// NewWithClients is New with ready clients (tests, fakes).
func NewWithClients(clients map[string]Client, fire Fire, opts Options) *Watcher {
	return &Watcher{
		opts: opts.normalized(), fire: fire, clients: clients,
		prs: map[string]*prState{}, index: map[objID]map[string]*diffing.LiveObject{},
		sources: map[sourceKey]*source{}, limiters: map[string]*rate.Limiter{}, mapping: map[mapKey]mapping{},
	}
}

// Stats returns the current counters.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.PRs, s.Objects = len(w.prs), len(w.index)
	for _, src := range w.sources {
		if src.polling {
			s.Polls++
		} else {
			s.Watches++
		}
	}
	return s
}

// Watch makes objs, the live objects of pr's latest preview, the ones watched
// for pr (replacing what was watched for it); repo is pr's repository, the unit
// of rate limiting. Objects of clusters the Watcher does not know, and of kinds
// the cluster does not serve, are not watched (logged). It returns after the
// needed informers were started, not synced.
func (w *Watcher) Watch(pr, repo string, objs []diffing.LiveObject) {
	// Resolve resources before taking the lock: discovery may ask the cluster.
	type placed struct {
		o   *diffing.LiveObject
		key sourceKey
	}
	var keep []placed
	for i := range objs {
		o := &objs[i]
		key, err := w.sourceFor(o)
		if err != nil {
			w.opts.Logger.Warn("not watching a previewed object", "pr", pr, "cluster", o.Cluster, "kind", o.Kind, "error", err)
			w.mu.Lock()
			w.stats.Unmapped++
			w.mu.Unlock()
			continue
		}
		keep = append(keep, placed{o, key})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	old := w.prs[pr]
	st := &prState{repo: repo, objs: map[objID]*diffing.LiveObject{}, srcs: map[objID]*source{}}
	if old != nil {
		st.timer = old.timer // the change that started it still holds
	}
	for _, p := range keep {
		id := idOf(p.o)
		st.objs[id] = p.o
		src := w.sources[p.key]
		if src == nil {
			src = w.startSource(p.key)
		}
		src.ids[id]++
		st.srcs[id] = src
		if w.index[id] == nil {
			w.index[id] = map[string]*diffing.LiveObject{}
		}
		w.index[id][pr] = p.o
	}
	w.prs[pr] = st
	if old != nil {
		w.release(pr, old)
	}
	// A change that reached the cache before this preview was recorded (or
	// while its job ran) is compared now.
	for id, o := range st.objs {
		if cur, known := st.srcs[id].current(id); known && !o.SameAs(cur) {
			w.changed(pr, st)
			break
		}
	}
}

// Forget stops watching pr (closed or merged): no callback for it follows.
func (w *Watcher) Forget(pr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.prs[pr]
	if st == nil {
		return
	}
	delete(w.prs, pr)
	if st.timer != nil {
		st.timer.Stop()
	}
	w.release(pr, st)
}

// release drops old's index entries and source references for pr (w.mu held).
func (w *Watcher) release(pr string, old *prState) {
	for id := range old.objs {
		if cur := w.prs[pr]; cur != nil && cur != old {
			if _, still := cur.objs[id]; still {
				// The new state's entry replaced it in the index already.
				old.srcs[id].unref(id)
				w.dropIfUnused(old.srcs[id])
				continue
			}
		}
		if m := w.index[id]; m != nil {
			delete(m, pr)
			if len(m) == 0 {
				delete(w.index, id)
			}
		}
		old.srcs[id].unref(id)
		w.dropIfUnused(old.srcs[id])
	}
}

func (w *Watcher) dropIfUnused(src *source) {
	if len(src.ids) == 0 && w.sources[src.key] == src {
		delete(w.sources, src.key)
		src.stop()
	}
}

// Stop ends every informer and poll and every pending callback.
func (w *Watcher) Stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, st := range w.prs {
		if st.timer != nil {
			st.timer.Stop()
		}
	}
	for k, src := range w.sources {
		src.stop()
		delete(w.sources, k)
	}
	w.prs = map[string]*prState{}
	w.index = map[objID]map[string]*diffing.LiveObject{}
}

// observe compares one object as the cluster has it now (cur; Absent when it is
// gone) with what every preview that includes it saw, and schedules the pull
// requests it differs for. w.mu held.
func (w *Watcher) observe(id objID, cur *diffing.LiveObject) {
	for pr, seen := range w.index[id] {
		if seen.SameAs(cur) {
			continue
		}
		w.stats.Changes++
		if st := w.prs[pr]; st != nil {
			w.changed(pr, st)
		}
	}
}

// changed schedules pr's callback after the debounce window unless one is
// pending already: many changes within the window give one run. w.mu held.
func (w *Watcher) changed(pr string, st *prState) {
	if st.timer != nil || w.stopped {
		return
	}
	st.timer = time.AfterFunc(w.opts.Debounce, func() { w.due(pr, false) })
}

// due runs when pr's window closed: it takes a token of the repository's rate
// limit (waiting for one when none is left) and calls back.
func (w *Watcher) due(pr string, reserved bool) {
	w.mu.Lock()
	st := w.prs[pr]
	if st == nil || w.stopped {
		w.mu.Unlock()
		return
	}
	if !reserved {
		lim := w.limiters[st.repo]
		if lim == nil {
			lim = rate.NewLimiter(rate.Limit(w.opts.RepoPerMinute/60), w.opts.RepoBurst)
			w.limiters[st.repo] = lim
		}
		if d := lim.Reserve().Delay(); d > 0 {
			w.stats.Limited++
			st.timer = time.AfterFunc(d, func() { w.due(pr, true) })
			w.mu.Unlock()
			return
		}
	}
	st.timer = nil
	w.stats.Fired++
	w.mu.Unlock()
	w.fire(pr)
}

// mapKey and mapping cache the REST mapping of a kind.
type mapKey struct {
	cluster, group, version, kind string
}

type mapping struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// sourceFor finds the source (cluster, resource, namespace) that sees o.
func (w *Watcher) sourceFor(o *diffing.LiveObject) (sourceKey, error) {
	c, ok := w.clients[o.Cluster]
	if !ok {
		return sourceKey{}, fmt.Errorf("cluster %q is not configured", o.Cluster)
	}
	mk := mapKey{o.Cluster, o.Group, o.Version, o.Kind}
	w.mu.Lock()
	m, ok := w.mapping[mk]
	w.mu.Unlock()
	if !ok {
		rm, err := c.Mapper.RESTMapping(schema.GroupKind{Group: o.Group, Kind: o.Kind}, o.Version)
		if err != nil {
			return sourceKey{}, err
		}
		m = mapping{gvr: rm.Resource, namespaced: rm.Scope.Name() == meta.RESTScopeNameNamespace}
		w.mu.Lock()
		w.mapping[mk] = m
		w.mu.Unlock()
	}
	key := sourceKey{cluster: o.Cluster, gvr: m.gvr}
	if m.namespaced {
		key.ns = o.Namespace
	}
	return key, nil
}

// client is the dynamic client of cluster.
func (w *Watcher) client(cluster string) dynamic.Interface { return w.clients[cluster].Dynamic }
