package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// DefaultTimeout bounds each API request of a Reader whose rest.Config sets no
// Timeout, so an unreachable cluster fails the read instead of hanging the job.
const DefaultTimeout = 30 * time.Second

// listPageSize is the page size of LIST requests; a namespace with more objects of
// one type is read in several pages of one logical LIST.
const listPageSize = 500

// Reader reads live state from one cluster. It caches discovery and OpenAPI schemas
// (for cacheTTL) across Reads and is safe for concurrent use, so the bot keeps one
// per cluster.
type Reader struct {
	host string
	dyn  dynamic.Interface
	// rest is the dynamic client's REST client, for LISTs (listPage).
	rest  rest.Interface
	meta  metadata.Interface
	disc  *discovery.DiscoveryClient
	cache cache
	// parallel bounds concurrent LIST requests.
	parallel int
	// dryDyn sends dry-run-mode predictions (dryRun), without client-go's
	// client-side rate limiter unless the rest.Config sets one; inflight bounds
	// how many of them are in flight for the whole Reader (dryRunInflight).
	dryDyn   dynamic.Interface
	inflight chan struct{}
	// admission is what the cluster's webhooks and admission policies may act
	// on, for the current catalog (getAdmission).
	admission admissionMemo
	// lists, when set (ShareLists), keeps every LIST result for the Reader's
	// later reads.
	lists *listMemo
}

// ShareLists makes the Reader LIST each resource type in each namespace once
// and answer later reads (of other targets, or of the same target again) from
// that result: for the reads of one job, which then all see one snapshot of the
// cluster. A failed LIST is not kept. Once the job has read a type in more than
// wideAfter namespaces, the next namespace is answered by one cluster-wide LIST
// of the type, which answers every later namespace too (see listMemo.wideFor).
// The LISTs are kept as the JSON the server sent, which each read decodes for
// itself (listItem): decoded, they were most of a large preview's memory.
// Call it before the first Read.
func (r *Reader) ShareLists() {
	r.lists = &listMemo{
		m:          map[listKey]*listResult{},
		wide:       map[schema.GroupVersionResource]*wideResult{},
		namespaces: map[schema.GroupVersionResource]map[string]bool{},
	}
}

// wideAfter is how many namespaces of one type a job reads with per-namespace
// LISTs before it LISTs the type cluster-wide. A job whose targets span many
// namespaces (one per application is common) then sends one LIST per type
// instead of one per type and namespace: client-go's rate limit (QPS 50) made
// 200 namespaces × 13 types take 52 s. A job of a few namespaces keeps reading
// only those, however large the rest of the cluster is. Argo CD's cluster cache
// lists every type cluster-wide the same way.
const wideAfter = 4

// wideMaxItems bounds a cluster-wide LIST: a type with more objects in the whole
// cluster is read per namespace instead, so a cluster with many objects in
// namespaces the job does not read never costs more memory than those reads.
// A variable for tests.
var wideMaxItems = 10000

// errWideTooLarge stops a cluster-wide LIST that passes wideMaxItems.
var errWideTooLarge = errors.New("too many objects for a cluster-wide LIST")

// listMemo holds the LIST results of one Reader, one per type and namespace;
// concurrent reads of the same LIST wait for the first.
type listMemo struct {
	mu sync.Mutex
	m  map[listKey]*listResult
	// wide holds the cluster-wide LIST of a type, once the job reads it in more
	// than wideAfter namespaces; namespaces counts them until then.
	wide       map[schema.GroupVersionResource]*wideResult
	namespaces map[schema.GroupVersionResource]map[string]bool
	issued     atomic.Int64 // LISTs sent, for tests
}

type listResult struct {
	done  chan struct{}
	items []listItem
	err   error
}

// wideResult is one cluster-wide LIST, its items by namespace. When it failed
// (forbidden: the identity may list only some namespaces; too large; any other
// error) err is set and the reads fall back to per-namespace LISTs, whose
// errors name the namespace.
type wideResult struct {
	done chan struct{}
	byNS map[string][]listItem
	err  error
}

// wideFor returns the cluster-wide LIST that answers type gvr in namespace ns,
// or nil when ns is read per namespace. It counts the namespaces of gvr the job
// reads, and starts the cluster-wide LIST (start is true: the caller sends it)
// at the first namespace past wideAfter. A namespace already listed on its own
// keeps that result, so one read of a target sees one LIST per namespace.
func (m *listMemo) wideFor(gvr schema.GroupVersionResource, ns string) (w *wideResult, start bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[listKey{gvr: gvr, ns: ns}]; ok {
		return nil, false
	}
	if w := m.wide[gvr]; w != nil {
		return w, false
	}
	seen := m.namespaces[gvr]
	if seen == nil {
		seen = map[string]bool{}
		m.namespaces[gvr] = seen
	}
	seen[ns] = true
	if len(seen) <= wideAfter {
		return nil, false
	}
	w = &wideResult{done: make(chan struct{})}
	m.wide[gvr] = w
	return w, true
}

// NewReader builds a Reader from a client configuration, typically the bot's
// ServiceAccount or a kubeconfig context. It talks to the cluster only when Read is
// called.
func NewReader(cfg *rest.Config) (*Reader, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	ownLimit := cfg.QPS != 0 || cfg.RateLimiter != nil
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	// The dynamic client as dynamic.NewForConfig builds it, keeping its REST
	// client, which LISTs use directly (listPage).
	dcfg := dynamic.ConfigFor(cfg)
	dcfg.GroupVersion = nil
	dcfg.APIPath = "/if-you-see-this-search-for-the-break"
	hc, err := rest.HTTPClientFor(dcfg)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client for %s: %w", cfg.Host, err)
	}
	rc, err := rest.UnversionedRESTClientForConfigAndClient(dcfg, hc)
	if err != nil {
		return nil, fmt.Errorf("creating dynamic client for %s: %w", cfg.Host, err)
	}
	dyn := dynamic.New(rc)
	dry := dyn
	if !ownLimit {
		// Dry-run requests rely on the apiserver's API Priority and Fairness
		// instead of a fixed client rate, as SIG API Machinery recommends and
		// controller-runtime does by default since v0.21 (kubernetes-sigs/
		// controller-runtime#3119: a QPS < 0 leaves rest.Config without a
		// rate limiter). Concurrency stays bounded by dryRunInflight, and a
		// 429 from APF (or a 5xx with Retry-After) is retried by client-go's
		// rest.Request after the server's Retry-After, up to 10 times
		// (rest/with_retry.go checkWait), as for every client-go caller.
		ucfg := rest.CopyConfig(dcfg)
		ucfg.QPS, ucfg.Burst, ucfg.RateLimiter = -1, 0, nil
		urc, err := rest.UnversionedRESTClientForConfigAndClient(ucfg, hc)
		if err != nil {
			return nil, fmt.Errorf("creating dynamic client for %s: %w", cfg.Host, err)
		}
		dry = dynamic.New(urc)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating metadata client for %s: %w", cfg.Host, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client for %s: %w", cfg.Host, err)
	}
	return &Reader{host: cfg.Host, dyn: dyn, rest: rc, meta: md, disc: disc, parallel: 8,
		dryDyn: dry, inflight: make(chan struct{}, dryRunInflight)}, nil
}

// dryRunInflight bounds the dry-run requests one Reader has in flight, over all
// its concurrent Reads. The apiserver's API Priority and Fairness decides how
// many it serves at once (a ServiceAccount's requests fall in the workload-low
// priority level, by default about a third of the server's 600 seats); 16 keeps
// well inside that while a request's latency, not a client rate, sets the pace.
const dryRunInflight = 16

// listKey is one LIST: a resource in a namespace ("" for cluster-scoped types).
type listKey struct {
	gvr schema.GroupVersionResource
	ns  string
}

// listing is one planned LIST with its resource.
type listing struct {
	res resource
	ns  string
}

// read is the state of one Read call.
type read struct {
	r       *Reader
	opts    Options
	cluster string
	cat     *catalog

	// want maps the live key of every base, head and inventory object to the key
	// the caller used (which may lack the default namespace).
	want      map[render.ObjectKey]render.ObjectKey
	inventory map[render.ObjectKey]bool
	lists     map[listKey]listing
	// listed holds the items of every planned LIST that ran.
	listed map[listKey][]*unstructured.Unstructured
	// versions is the version head (else base) uses for each kind.
	versions map[schema.GroupKind]string
}

// Read returns the live state of one target: the live objects of base, head and the
// inventory, the objects that tracking marks as the target's, children of pruned
// Namespaces and CRDs, volumes of PVCs and a prediction for every head object. Any
// failed read gives a LiveState with Err set and nothing else, never a partial one.
func (r *Reader) Read(ctx context.Context, base, head render.ObjectSet, opts Options) *diffing.LiveState {
	if opts.Mode == "" {
		opts.Mode = ModeSimulate
	}
	cluster := opts.Cluster
	if cluster == "" {
		cluster = r.host
	}
	fail := func(err error) *diffing.LiveState {
		return &diffing.LiveState{Mode: opts.Mode, Cluster: cluster, Err: err}
	}
	if opts.Mode != ModeSimulate && opts.Mode != ModeDryRun {
		return fail(fmt.Errorf("reading cluster %s: unknown live mode %q (want %s or %s)", cluster, opts.Mode, ModeSimulate, ModeDryRun))
	}
	if opts.Manager == "" {
		return fail(fmt.Errorf("reading cluster %s: no field manager set to predict the apply as", cluster))
	}
	st := &read{r: r, opts: opts, cluster: cluster}
	out, err := st.run(ctx, base, head)
	if err != nil {
		return fail(err)
	}
	return out
}

func (st *read) run(ctx context.Context, base, head render.ObjectSet) (*diffing.LiveState, error) {
	cat, err := st.r.getCatalog(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("reading cluster %s: %w", st.cluster, err)
	}
	if st.missingKinds(cat, base, head) {
		// A kind may come from a CRD installed since discovery was cached.
		if cat, err = st.r.getCatalog(ctx, true); err != nil {
			return nil, fmt.Errorf("reading cluster %s: %w", st.cluster, err)
		}
	}
	st.cat = cat
	if err := st.plan(base, head); err != nil {
		return nil, err
	}
	// The simulations' schemas are built while the objects are listed. A
	// Read that ends early stops the builds (a stopped build is not kept)
	// and waits for them: the cancel runs first.
	var preparing sync.WaitGroup
	defer preparing.Wait()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if gvs := st.likelyApplied(base, head); len(gvs) > 0 {
		preparing.Go(func() { st.r.PrepareSchemas(pctx, gvs...) })
	}
	items, err := st.listAll(ctx)
	if err != nil {
		return nil, err
	}

	out := &diffing.LiveState{
		Mode:        st.opts.Mode,
		Cluster:     st.cluster,
		Objects:     map[render.ObjectKey]*unstructured.Unstructured{},
		Tracked:     map[render.ObjectKey]bool{},
		Predictions: map[render.ObjectKey]diffing.Prediction{},
		Children:    map[render.ObjectKey]diffing.Children{},
		Volumes:     map[render.ObjectKey]*unstructured.Unstructured{},
	}
	for _, u := range items {
		lk := render.KeyOf(u)
		k, wanted := st.want[lk]
		tracked := st.inventory[lk] || st.opts.Tracking.tracked(u.GetLabels(), u.GetAnnotations())
		if !wanted {
			k = lk
		}
		if !wanted && !tracked {
			continue
		}
		out.Objects[k] = u
		if tracked {
			out.Tracked[k] = true
		}
	}

	for _, o := range head.Objects {
		if u := out.Objects[o.Key]; u != nil {
			if owner, ok := st.opts.Tracking.foreignOwner(u); ok {
				if out.Owners == nil {
					out.Owners = map[render.ObjectKey]render.ObjectKey{}
				}
				out.Owners[o.Key] = owner
			}
		}
	}
	if err := st.children(ctx, base, head, out); err != nil {
		return nil, err
	}
	if err := st.volumes(ctx, base, head, out); err != nil {
		return nil, err
	}
	st.predict(ctx, base, head, out)
	if err := st.permissionError(out); err != nil {
		return nil, err
	}
	return out, nil
}

// permissionError turns an apply the API refused because the identity is not
// authenticated into an error for the whole read. An RBAC refusal (forbidden) is
// per object instead: diffing reports that object's live side as unavailable and
// keeps the others (the identity may patch ConfigMaps but not Secrets).
func (st *read) permissionError(out *diffing.LiveState) error {
	for _, k := range slices.SortedFunc(maps.Keys(out.Predictions), render.ObjectKey.Compare) {
		if err := out.Predictions[k].Err; apierrors.IsUnauthorized(err) {
			return fmt.Errorf("%s mode on cluster %s: the apiserver does not accept this identity's credentials: %w", st.opts.Mode, st.cluster, err)
		}
	}
	return nil
}

// missingKinds reports whether a base or head kind is not in the catalog.
func (st *read) missingKinds(cat *catalog, sets ...render.ObjectSet) bool {
	for _, s := range sets {
		for _, o := range s.Objects {
			if _, ok := cat.byGK[o.Key.GroupKind()]; !ok {
				return true
			}
		}
	}
	return false
}

// liveKey is where the object of key k lives: namespaced objects without a
// namespace in the default one, cluster-scoped objects without one.
func (st *read) liveKey(k render.ObjectKey, res resource) render.ObjectKey {
	if !res.namespaced {
		k.Namespace = ""
	} else if k.Namespace == "" {
		k.Namespace = st.defaultNamespace()
	}
	return k
}

func (st *read) defaultNamespace() string {
	if st.opts.Namespace != "" {
		return st.opts.Namespace
	}
	return "default"
}

// plan decides the LISTs: every served kind of base, head and inventory, in every
// namespace any of their namespaced objects is in.
func (st *read) plan(base, head render.ObjectSet) error {
	st.want = map[render.ObjectKey]render.ObjectKey{}
	st.inventory = map[render.ObjectKey]bool{}
	st.lists = map[listKey]listing{}
	st.versions = map[schema.GroupKind]string{}
	// head's version wins: predictions apply head in its own version.
	for _, s := range []render.ObjectSet{base, head} {
		for _, o := range s.Objects {
			if o.Obj != nil {
				st.versions[o.Key.GroupKind()] = o.Obj.GroupVersionKind().Version
			}
		}
	}
	kinds := map[schema.GroupKind]resource{}
	namespaces := map[string]bool{}
	add := func(k render.ObjectKey) (render.ObjectKey, bool) {
		gk := k.GroupKind()
		if _, failed := st.cat.failed[gk.Group]; failed {
			return k, false
		}
		res, ok := st.cat.lookup(gk, st.versions[gk])
		if !ok {
			return k, false // not served (yet): no live object
		}
		kinds[gk] = res
		lk := st.liveKey(k, res)
		if res.namespaced {
			namespaces[lk.Namespace] = true
		}
		return lk, true
	}
	for _, s := range []render.ObjectSet{base, head} {
		for _, o := range s.Objects {
			if err := st.groupDiscovered(o.Key); err != nil {
				return err
			}
			if lk, ok := add(o.Key); ok {
				st.want[lk] = o.Key
			}
		}
	}
	for _, k := range st.opts.Inventory {
		if err := st.groupDiscovered(k); err != nil {
			return err
		}
		if lk, ok := add(k); ok {
			st.inventory[lk] = true
			if _, ok := st.want[lk]; !ok {
				st.want[lk] = lk
			}
		}
	}
	for _, res := range kinds {
		if !res.can("list") {
			return fmt.Errorf("listing %s on cluster %s: the API does not support list", res.name(), st.cluster)
		}
		if !res.namespaced {
			st.lists[listKey{gvr: res.gvr}] = listing{res: res}
			continue
		}
		for ns := range namespaces {
			st.lists[listKey{gvr: res.gvr, ns: ns}] = listing{res: res, ns: ns}
		}
	}
	return nil
}

// likelyApplied are the GroupVersions, as head declares them, of the served
// kinds of the head objects that base has too: most of them are live, and
// predict simulates their apply with the GroupVersion's schema. A head object
// new in the pull request is mostly not live, and is left to predict.
func (st *read) likelyApplied(base, head render.ObjectSet) []schema.GroupVersion {
	inBase := base.Index()
	seen := map[schema.GroupVersion]bool{}
	var gvs []schema.GroupVersion
	for _, o := range head.Objects {
		if o.Obj == nil || inBase[o.Key] == nil {
			continue
		}
		gvk := o.Obj.GroupVersionKind()
		if res, ok := st.cat.lookup(gvk.GroupKind(), gvk.Version); !ok || res.gvr.Version != gvk.Version {
			continue
		}
		if gv := gvk.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	return gvs
}

// groupDiscovered fails when k's API group could not be discovered: its objects may
// exist, and a read without them would be partial.
func (st *read) groupDiscovered(k render.ObjectKey) error {
	if err, failed := st.cat.failed[k.Group]; failed {
		return fmt.Errorf("discovering API group %s for %s on cluster %s: %w", k.Group, k, st.cluster, err)
	}
	return nil
}

// listAll runs the planned LISTs concurrently and returns every item.
func (st *read) listAll(ctx context.Context) ([]*unstructured.Unstructured, error) {
	keys := make([]listing, 0, len(st.lists))
	for _, l := range st.lists {
		keys = append(keys, l)
	}
	slices.SortFunc(keys, func(a, b listing) int {
		if c := compareStrings(a.res.name(), b.res.name()); c != 0 {
			return c
		}
		return compareStrings(a.ns, b.ns)
	})
	results := make([][]*unstructured.Unstructured, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(st.r.parallel)
	for i, k := range keys {
		g.Go(func() error {
			items, err := st.list(gctx, k)
			results[i] = items
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	st.listed = make(map[listKey][]*unstructured.Unstructured, len(keys))
	var out []*unstructured.Unstructured
	for i, r := range results {
		st.listed[listKey{gvr: keys[i].res.gvr, ns: keys[i].ns}] = r
		out = append(out, r...)
	}
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// list runs one logical LIST, or takes it from the Reader's shared LISTs (its
// items decoded for this read alone: callers change what they read).
func (st *read) list(ctx context.Context, k listing) ([]*unstructured.Unstructured, error) {
	memo := st.r.lists
	if memo == nil {
		items, err := st.listOnce(ctx, k, 0)
		if err != nil {
			return nil, err
		}
		return decodeItems(items)
	}
	if k.ns != "" {
		if w, start := memo.wideFor(k.res.gvr, k.ns); w != nil {
			if start {
				memo.issued.Add(1)
				st.listWide(ctx, k.res, w)
			}
			select {
			case <-w.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if w.err == nil {
				return decodeItems(w.byNS[k.ns])
			}
			// Not readable cluster-wide: this namespace on its own, below.
		}
	}
	key := listKey{gvr: k.res.gvr, ns: k.ns}
	memo.mu.Lock()
	res, ok := memo.m[key]
	if !ok {
		res = &listResult{done: make(chan struct{})}
		memo.m[key] = res
	}
	memo.mu.Unlock()
	if !ok {
		memo.issued.Add(1)
		res.items, res.err = st.listOnce(ctx, k, 0)
		if res.err != nil {
			memo.mu.Lock()
			delete(memo.m, key) // the next read tries again
			memo.mu.Unlock()
		}
		close(res.done)
	} else {
		select {
		case <-res.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if res.err != nil {
			// Failed for the read that sent it (perhaps its context ended):
			// this read sends its own.
			return st.list(ctx, k)
		}
	}
	if res.err != nil {
		return nil, res.err
	}
	return decodeItems(res.items)
}

// listWide sends the cluster-wide LIST of w and closes w.done. Any failure is
// kept in w.err, and every namespace is then read on its own.
func (st *read) listWide(ctx context.Context, res resource, w *wideResult) {
	defer close(w.done)
	items, err := st.listOnce(ctx, listing{res: res}, wideMaxItems)
	if err == nil {
		w.byNS = map[string][]listItem{}
		for _, it := range items {
			var ns string
			if ns, err = it.namespace(); err != nil {
				break
			}
			w.byNS[ns] = append(w.byNS[ns], it)
		}
	}
	if err != nil {
		w.byNS, w.err = nil, err
	}
}

// listItem is one item of a LIST as the server sent it: its JSON, which each
// read that takes it decodes for itself (decode). The Reader's shared LISTs
// (ShareLists) hold every item of a job's LISTs for the whole job, and an object
// decoded into maps takes several times the memory of its JSON (managedFields
// above all: a map per field), so they keep the JSON (issue 25).
type listItem struct {
	raw  []byte
	list *listKind
}

// listKind is the kind of the LIST an item came in, for items that name none.
type listKind struct {
	// kind and apiVersion are the list's own ("ConfigMapList", "v1"): the
	// dynamic client gives an item without kind and apiVersion these.
	kind, apiVersion string
	// gvk is the resource's, for an item still without a kind.
	gvk schema.GroupVersionKind
}

// decode returns the object of the item, with kind and apiVersion as
// client-go's dynamic client gives them (see listPage).
func (it listItem) decode() (*unstructured.Unstructured, error) {
	var m map[string]any
	if err := utiljson.Unmarshal(it.raw, &m); err != nil {
		return nil, fmt.Errorf("decoding the response: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" && u.GetAPIVersion() == "" {
		u.SetKind(strings.TrimSuffix(it.list.kind, "List"))
		u.SetAPIVersion(it.list.apiVersion)
	}
	if u.GetKind() == "" && it.list.gvk.Kind != "" {
		u.SetGroupVersionKind(it.list.gvk)
	}
	return u, nil
}

// namespace is the item's metadata.namespace.
func (it listItem) namespace() (string, error) {
	var o struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := utiljson.Unmarshal(it.raw, &o); err != nil {
		return "", fmt.Errorf("decoding the response: %w", err)
	}
	return o.Metadata.Namespace, nil
}

// decodeItems decodes items for one read.
func decodeItems(items []listItem) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(items))
	for i, it := range items {
		u, err := it.decode()
		if err != nil {
			return nil, err
		}
		out[i] = u
	}
	return out, nil
}

// listOnce runs one logical LIST (paged). A type that vanished since discovery (404)
// has no objects; any other failure names the resource, namespace and cluster.
// maxItems > 0 stops it with errWideTooLarge after that many items.
func (st *read) listOnce(ctx context.Context, k listing, maxItems int) ([]listItem, error) {
	var out []listItem
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		items, next, err := st.listPageRaw(ctx, k, opts)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, st.listError(k, err)
		}
		out = append(out, items...)
		if maxItems > 0 && len(out) > maxItems {
			return nil, errWideTooLarge
		}
		if next == "" {
			return out, nil
		}
		opts.Continue = next
	}
}

// listParams encodes ListOptions as the dynamic client does (its
// dynamicParameterCodec).
var listParams = func() runtime.ParameterCodec {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(s)
}()

// listPage sends one page of the LIST of k and decodes its items (listPageRaw).
func (st *read) listPage(ctx context.Context, k listing, opts metav1.ListOptions) ([]*unstructured.Unstructured, string, error) {
	items, next, err := st.listPageRaw(ctx, k, opts)
	if err != nil {
		return nil, "", err
	}
	out, err := decodeItems(items)
	return out, next, err
}

// listPageRaw sends one page of the LIST of k: the request of the dynamic
// client's List, whose response is split into its items' JSON in one pass
// instead of the four of unstructured.UnstructuredList (kind lookup, item
// boundaries, the whole list into a map, then each item again). Decoded
// (listItem.decode), items are the objects UnstructuredList gives, with the same
// kind and apiVersion from the list when they have none.
func (st *read) listPageRaw(ctx context.Context, k listing, opts metav1.ListOptions) ([]listItem, string, error) {
	gvr := k.res.gvr
	path := []string{"api"}
	if gvr.Group != "" {
		path = []string{"apis", gvr.Group}
	}
	path = append(path, gvr.Version)
	if k.ns != "" {
		if msgs := rest.IsValidPathSegmentName(k.ns); len(msgs) != 0 {
			return nil, "", fmt.Errorf("invalid namespace %q: %v", k.ns, msgs)
		}
		path = append(path, "namespaces", k.ns)
	}
	path = append(path, gvr.Resource)
	res := st.r.rest.Get().AbsPath(path...).SpecificallyVersionedParams(&opts, listParams, schema.GroupVersion{Version: "v1"}).
		SetHeader("Accept", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		return nil, "", err
	}
	body, _ := res.Raw()
	var l struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Continue string `json:"continue"`
		} `json:"metadata"`
		// Each item's JSON, copied out of body.
		Items []json.RawMessage `json:"items"`
	}
	if err := utiljson.Unmarshal(body, &l); err != nil {
		return nil, "", fmt.Errorf("decoding the response: %w", err)
	}
	if l.Kind == "Status" {
		var status metav1.Status
		if err := utiljson.Unmarshal(body, &status); err == nil && status.Status != metav1.StatusSuccess {
			return nil, "", apierrors.FromObject(&status)
		}
	}
	lk := &listKind{kind: l.Kind, apiVersion: l.APIVersion, gvk: gvr.GroupVersion().WithKind(k.res.kind)}
	items := make([]listItem, len(l.Items))
	for i, raw := range l.Items {
		if !isObjectOrNull(raw) {
			return nil, "", fmt.Errorf("decoding the response: item %d is not an object", i)
		}
		items[i] = listItem{raw: raw, list: lk}
	}
	return items, l.Metadata.Continue, nil
}

// isObjectOrNull says whether raw (valid JSON) is an object or null, the items
// a list of objects may hold.
func isObjectOrNull(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && (raw[0] == '{' || raw[0] == 'n')
}

// listError names the verb, resource, namespace and cluster of a failed LIST.
func (st *read) listError(k listing, err error) error {
	where := "cluster-wide"
	if k.ns != "" {
		where = "in namespace " + k.ns
	}
	reason := ""
	switch {
	case apierrors.IsForbidden(err):
		reason = "forbidden: "
	case apierrors.IsUnauthorized(err):
		reason = "unauthorized: "
	}
	return fmt.Errorf("listing %s %s on cluster %s: %s%w", k.res.name(), where, st.cluster, reason, err)
}

// workers is how many CPU-bound predictions run at once.
func workers() int { return max(1, goruntime.GOMAXPROCS(0)) }
