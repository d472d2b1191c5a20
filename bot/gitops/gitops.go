package gitops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

// RenderFunc renders one target of the checkout at root. Discover uses it to find
// controller objects that other targets produce (app-of-apps, a Flux cluster
// directory); the pipeline passes a wrapper around render.Render.
type RenderFunc func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error)

// Options configures Discover.
type Options struct {
	// RepoURLs are the URLs that mean "this repository": the host's clone URLs and
	// the checkout's origin remote. They are compared loosely (scheme, user, .git
	// suffix, trailing slash and scp-like git@host:owner/repo are ignored). When
	// empty, Argo CD sources whose path exists in the checkout are taken to be
	// this repository, and a note says so.
	RepoURLs []string
	// ClusterNames maps an Argo CD destination.server or destination.name, or a
	// Flux clusters/<dir> directory name, to a cluster name of the server config.
	ClusterNames map[string]string
	// Renderer renders targets to find nested controller objects; nil disables
	// that (only files in the repository are read) and a note says so.
	Renderer RenderFunc
	// Branch is the branch pull requests merge into (main when empty); an Argo CD
	// targetRevision naming another branch, a tag or a commit gets a note, because
	// the controller deploys that revision and not the merge.
	Branch string
	// MaxDepth bounds the rounds of rendering (app-of-apps of app-of-apps …).
	MaxDepth int
	// Clusters lists Argo CD's cluster Secrets for the clusters generator of
	// ApplicationSets; nil lists every clusters generator as not rendered.
	Clusters ClusterLister
	// LiveData reads the data of a ConfigMap or Secret (kind) from the live
	// cluster named cluster ("" for the default one): a HelmRelease's
	// valuesFrom and a Kustomization's postBuild.substituteFrom that the
	// repository does not hold, which helm-controller and kustomize-controller
	// read there. Secret data comes decoded; discovery passes on only hidden
	// placeholders of it. found is false when the object does not exist; err
	// when it cannot be read. nil reads nothing live.
	LiveData func(ctx context.Context, cluster, kind, namespace, name string) (data map[string]string, found bool, err error)
	// Remote says whether the remote policy allows fetching a URL (nil: remote
	// fetching is off). A chart from a Helm HTTP repository becomes a target that
	// fetches it only when Remote allows its repository; otherwise it is listed
	// as not rendered with the reason.
	Remote func(url string) error
	// Templates executes an ApplicationSet's templates (every Go template or
	// fasttemplate of its generators, template and templatePatch) in a render
	// process: render.ExecuteTemplates when nil. The preview passes a wrapper
	// that counts them against its budget.
	Templates func(ctx context.Context, req render.TemplateRequest, lim render.TemplateLimits) (render.TemplateResult, error)
	// TemplateLimits bound each ApplicationSet's templates: the render
	// process's limits, each template output, and MaxTotalBytes for all the
	// set's templates together (and the git files and matrix parameters that
	// feed them). Zero fields are render.DefaultTemplateLimits'.
	TemplateLimits render.TemplateLimits
	// MaxAppsPerSet caps the Applications one ApplicationSet generates; past
	// it, the set is listed as not rendered with how many were left out, and
	// its first MaxAppsPerSet are previewed. Default DefaultMaxAppsPerSet.
	MaxAppsPerSet int
	// ArgoBuildOptions reads Argo CD's kustomize.buildOptions from argocd-cm
	// (in the Application's namespace, else argocd) and says where it read
	// them; ok is false when argocd-cm could not be read. Then, or when it is
	// nil, ArgoDefaultBuildOptions applies, else Argo CD's default (none).
	// With --enable-helm an Application's kustomizations inflate their
	// helmCharts; without it they fail, as in Argo CD.
	ArgoBuildOptions func(ctx context.Context, namespace string) (options, from string, ok bool)
	// ArgoDefaultBuildOptions is the repo config's
	// argocd.kustomizeBuildOptions; nil when unset.
	ArgoDefaultBuildOptions *string
	// Inputs, when set, tells what a target's render reads. A target a file
	// declares then waits while a target that reads that file is rendered
	// (see pruner.plan), and Prune may leave renders out.
	Inputs Inputs
	// Prune, with Inputs, leaves out of the search the renders the pull
	// request cannot change (Prune). Such a Result is not kept (Memo).
	Prune *Prune
	// Parsed, when set, is shared by the discoveries of a preview's two
	// checkouts: a file alike at both is parsed once.
	Parsed *Parsed
	// Memo, when set, keeps Results across runs: Discover returns what it
	// holds for root instead of discovering it again, and offers it every
	// complete Result it finds (none of whose renders failed, without
	// ApplicationSets, whose templates run under a budget). The preview's
	// keys a checkout by its git tree and these options.
	Memo Memo
}

// Memo keeps discovery Results (Options.Memo). Get returns a Result the
// caller may change; Put must not keep res past its return.
type Memo interface {
	Get(root string) (*Result, bool)
	Put(root string, res *Result)
}

// PairMemo is a Memo that also keeps the Results of base and head searched
// together with Prune, which hold for that pair of checkouts only.
type PairMemo interface {
	Memo
	GetPair(base, head string) (b, h *Result, ok bool)
	PutPair(base, head string, b, h *Result)
}

// DefaultArgoNamespace is where Argo CD runs by default (argocd).
const DefaultArgoNamespace = defaultArgoNS

// DefaultMaxAppsPerSet is Options.MaxAppsPerSet's default.
const DefaultMaxAppsPerSet = 2000

// DefaultOptions allows five levels of nesting and no renderer.
func DefaultOptions() Options { return Options{MaxDepth: 5} }

// Result is what Discover found.
type Result struct {
	// Targets are to be rendered and compared, sorted by name.
	Targets []config.Target
	// NotRendered are controller objects driftpreview cannot render (source outside
	// the repository, unsupported generator); each has Skip and a not-rendered
	// Finding.
	NotRendered []config.Target
	// Notes are remarks about discovery as a whole, for the report.
	Notes []string
	// Incomplete is true when a target could not be rendered to look for nested
	// controller objects, so an object missing from Targets may still exist.
	Incomplete bool
	// Unsearched holds the TargetKey of every target that could not be
	// rendered to look for nested controller objects (or that the depth limit
	// left unsearched): only objects it may render are unknown, so a deletion
	// found outside its subtree still holds (see config.Target.DeclaredBy).
	Unsearched map[string]bool
	// Sets are the ApplicationSets found, by SetKey, with what they generate.
	Sets map[string]SetInfo
	// Pruned holds the TargetKey of every target Options.Prune left
	// unsearched: what its render declares is the same at base and head, and
	// is not listed.
	Pruned map[string]bool `json:",omitempty"`
	// ArtifactGenerators says that the checkout declares a Flux
	// ArtifactGenerator, whose copy rules may name files of any kind.
	ArtifactGenerators bool `json:",omitempty"`
	// refs hashes what other targets take from (refDigests), when Pruned is
	// not empty.
	refs map[string]string
}

// The API groups discovery reads, the namespaces controllers default to, and the
// field managers each controller writes with come from the controller-kind table
// (diffing.ControllerKinds); these short names keep the parser readable.
const (
	groupArgo     = diffing.GroupArgoCD
	groupFluxKS   = diffing.GroupFluxKustomize
	groupFluxHelm = diffing.GroupFluxHelm
	groupFluxSrc  = diffing.GroupFluxSource
	groupFluxGen  = diffing.GroupFluxSourceExt
	defaultArgoNS = diffing.NamespaceArgoCD
	defaultFluxNS = diffing.NamespaceFlux
	inClusterURL  = "https://kubernetes.default.svc"
	inClusterName = "in-cluster"
	// fluxSystemName is the GitRepository flux bootstrap creates.
	fluxSystemName = "flux-system"
)

// Discover finds the targets the GitOps controller objects in the checkout at root
// describe. Problems with single objects become notes or not-rendered entries; an
// error is returned only when the checkout cannot be read or ctx ends.
func Discover(ctx context.Context, root string, opts Options) (*Result, error) {
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultOptions().MaxDepth
	}
	if opts.MaxAppsPerSet <= 0 {
		opts.MaxAppsPerSet = DefaultMaxAppsPerSet
	}
	if opts.Templates == nil {
		opts.Templates = render.ExecuteTemplates
	}
	if opts.Memo != nil {
		if res, ok := opts.Memo.Get(root); ok {
			return res, nil
		}
	}
	found, charts, notes, err := scanRepo(root, opts.Parsed)
	if err != nil {
		return nil, err
	}
	d := &discovery{ctx: ctx, root: root, opts: opts, repo: newRepoMatcher(opts.RepoURLs), seen: map[string]bool{}, charts: charts}
	defer func() {
		if d.checkout != nil {
			d.checkout.Close()
		}
	}()
	var pr *pruner
	if opts.Inputs != nil {
		pr = &pruner{inputs: opts.Inputs, unchanged: map[string]bool{}, pruned: map[string]bool{}, opaque: d.opaque}
		if opts.Prune != nil {
			pr.prune, pr.changed = true, opts.Prune.Changed
		}
	}
	for _, m := range found {
		if m.group() != groupArgo {
			m.Cluster = d.pathCluster(m.File)
		}
		d.add(m)
	}
	res := &Result{Notes: notes}
	if len(opts.RepoURLs) == 0 {
		res.Notes = append(res.Notes, "no repository URL is known (no origin remote): Argo CD sources whose path exists in this checkout are taken to be this repository")
	}
	rendered := map[string]bool{}
	// Render failures are noted only for targets that are still targets at the
	// end: a file outside clusters/ superseded by its rendered copies is not.
	failed := map[string]string{}
	// roots are the charts that render controller objects although nothing in the
	// repository deploys them: the root of an app-of-apps whose own Application
	// was created by hand or lives elsewhere.
	var roots []config.Target
	seeded := false
	maxDepth := opts.MaxDepth
	for depth := 0; ; depth++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("discovering GitOps targets: %w", err)
		}
		b := d.build()
		if opts.Renderer == nil {
			if len(b.targets) > 0 || len(charts) > 0 {
				res.Notes = append(res.Notes, "no renderer given: Applications and Kustomizations produced by rendering other targets were not looked for")
			}
			break
		}
		var todo []config.Target
		for _, t := range b.targets {
			if k := renderKey(t); !rendered[k] {
				rendered[k] = true
				todo = append(todo, t)
			}
		}
		if len(todo) == 0 && !seeded {
			// Once the targets found so far are all rendered, a chart whose
			// templates name Argo CD or Flux objects and that no target renders
			// is rendered on its own to find them (an app-of-apps chart without
			// a committed root Application).
			seeded = true
			for _, c := range charts {
				if !coversPath(b, c) {
					t := rootChartTarget(c)
					rendered[renderKey(t)] = true
					todo = append(todo, t)
				}
			}
		}
		if len(todo) == 0 {
			break
		}
		todo, pruned, later := pr.plan(todo)
		for _, t := range pruned {
			d.placeUnder(t, pr.inputs(t))
		}
		for _, t := range later {
			// Back in a later round's todo, unless a render's copy of its
			// object takes its place.
			delete(rendered, renderKey(t))
		}
		if len(later) > 0 {
			// A round that only renders what declares them does not count
			// towards the depth limit: at least one of them is rendered.
			maxDepth++
		}
		if depth >= maxDepth {
			res.Notes = append(res.Notes, fmt.Sprintf("stopped looking for nested GitOps objects after %d levels of rendering; targets %s were not searched", opts.MaxDepth, targetNames(append(todo, later...))))
			res.Incomplete = true
			for _, t := range append(todo, later...) {
				res.unsearched(t)
			}
			break
		}
		added := 0
		for _, t := range todo {
			set, err := opts.Renderer(ctx, root, t)
			if err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("discovering GitOps targets: rendering %s: %w", t.Name, ctx.Err())
				}
				if _, ok := render.IsUnavailable(err); ok && t.Controller != nil {
					continue // the target itself is listed as not rendered, with the reason
				}
				if t.Controller == nil {
					res.Notes = append(res.Notes, fmt.Sprintf("%s names Argo CD or Flux objects in its templates but could not be rendered to look for them: %v", t.Path, err))
					continue
				}
				failed[renderKey(t)] = fmt.Sprintf("target %s could not be rendered to look for nested GitOps objects: %v", targetLabel(t), err)
				continue
			}
			own := 0
			for _, m := range manifestsFromSet(set, t.Name, t.Cluster) {
				if m.Cluster == "" && m.group() != groupArgo {
					m.Cluster = d.pathCluster(m.File)
				}
				if d.add(m) {
					added++
					if m.group() != "" { // an Argo CD or Flux object, not a ConfigMap
						own++
					}
				}
			}
			if t.Controller == nil && own > 0 {
				roots = append(roots, t)
			}
		}
		if added == 0 && seeded && len(later) == 0 {
			break
		}
	}
	b := d.build()
	res.Targets, res.NotRendered, res.Sets = b.targets, b.notRendered, b.sets
	res.ArtifactGenerators = slices.ContainsFunc(d.manifests, func(m *manifest) bool {
		return m.group() == groupFluxGen && m.Kind == "ArtifactGenerator"
	})
	for _, t := range b.targets {
		if n, ok := failed[renderKey(t)]; ok {
			res.Notes = append(res.Notes, n)
			res.Incomplete = true
			res.unsearched(t)
		}
	}
	for _, t := range roots {
		if coversPath(b, t.Path) {
			continue // a discovered object deploys the chart after all
		}
		t.Name = b.unique(t)
		res.Targets = append(res.Targets, t)
	}
	slices.SortStableFunc(res.Targets, func(a, c config.Target) int { return strings.Compare(a.Name, c.Name) })
	res.Notes = append(res.Notes, b.notes...)
	for _, m := range d.manifests {
		if !m.superseded && m.templated() && m.isController() {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s %s is named by a Flux postBuild variable and no Kustomization that substitutes it was rendered: it is previewed only through such a Kustomization", m.where(), m.Kind, m.Name))
		}
	}
	if err := ctx.Err(); err != nil {
		// An ApplicationSet's templates stopped by the end of ctx are not the
		// PR's doing: no result rather than a not-rendered set.
		return nil, fmt.Errorf("discovering GitOps targets: %w", err)
	}
	if pr != nil && len(pr.pruned) > 0 {
		for _, t := range res.Targets {
			if k := TargetKey(t.Cluster, t.Name); pr.pruned[k] {
				if res.Pruned == nil {
					res.Pruned = map[string]bool{}
				}
				res.Pruned[k] = true
			}
		}
		if len(pr.pruned) > 0 {
			res.refs = d.refDigests()
			// What this Result lists depends on the pull request's changes,
			// not on the checkout alone.
			return res, nil
		}
	}
	if opts.Memo != nil && !res.Incomplete && len(res.Sets) == 0 {
		opts.Memo.Put(root, res)
	}
	return res, nil
}

// unsearched records that t's render was not searched for nested objects.
func (r *Result) unsearched(t config.Target) {
	if r.Unsearched == nil {
		r.Unsearched = map[string]bool{}
	}
	r.Unsearched[TargetKey(t.Cluster, t.Name)] = true
}

// TargetKey is a target's cluster and name as one key, the form of
// discover.Key, Result.Unsearched and config.Target.DeclaredBy.
func TargetKey(cluster, name string) string { return cluster + "\x00" + name }

// targetLabel names a target for notes: its name, and its cluster when it has one.
func targetLabel(t config.Target) string {
	if t.Cluster != "" {
		return t.Name + " (cluster " + t.Cluster + ")"
	}
	return t.Name
}

// coversPath says whether a discovered target renders the directory p.
func coversPath(b *built, p string) bool {
	return slices.ContainsFunc(slices.Concat(b.targets, b.notRendered), func(t config.Target) bool { return t.Path == p })
}

// rootChartTarget is the target of a chart that renders Argo CD or Flux objects but
// that no object in the repository deploys: it is previewed like a directory the
// PR touches (release name the directory's, prune on), and its objects become
// targets in turn.
func rootChartTarget(p string) config.Target {
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererHelm
	return config.Target{
		Name: p, Path: p, Render: opts,
		Sync:  config.Sync{Prune: true, Manager: config.DefaultManager},
		Notes: []string{fmt.Sprintf("no Argo CD or Flux object in this repository deploys %s; it renders the ones below, so it is previewed as the root of an app-of-apps, with default settings (release name %s, prune on)", p, path.Base(p))},
	}
}

// discovery holds every manifest found so far.
type discovery struct {
	ctx       context.Context
	root      string
	opts      Options
	repo      repoMatcher
	seen      map[string]bool
	manifests []*manifest
	// dirs and files list the checkout for git generators, once.
	dirs, files []string
	// clusterCache holds Argo CD's cluster Secrets per namespace, read once.
	clusterCache map[string]clusterList
	// sets are what each ApplicationSet generated, once per discovery.
	sets map[*manifest]*setGen
	// live holds what Options.LiveData read, once per object.
	live map[string]liveRead
	// checkout is the checkout opened once, and namespaces the namespace
	// fields of its kustomizations read so far (kustomizeNamespace).
	checkout       *os.Root
	checkoutFailed bool
	namespaces     map[string]kustomizeNS
	// charts are the charts of the checkout whose templates name Argo CD or
	// Flux objects (scanRepo).
	charts []string
	// ctlFiles is controllerFiles as of ctlFilesOf manifests, and rewrites
	// kustomizationRewrites by file.
	ctlFiles   map[string]bool
	ctlFilesOf int
	rewrites   map[string]bool
}

// liveRead is one Options.LiveData answer.
type liveRead struct {
	data  map[string]string
	found bool
	err   error
}

// liveData reads a ConfigMap or Secret the repository does not hold from the
// cluster, once per discovery; ok is false when nothing is read live
// (Options.LiveData nil).
func (d *discovery) liveData(kind, cluster, ns, name string) (r liveRead, ok bool) {
	if d.opts.LiveData == nil {
		return liveRead{}, false
	}
	k := kind + "|" + clusterKey(cluster, ns, name)
	if r, ok := d.live[k]; ok {
		return r, true
	}
	r.data, r.found, r.err = d.opts.LiveData(d.ctx, cluster, kind, ns, name)
	if d.live == nil {
		d.live = map[string]liveRead{}
	}
	d.live[k] = r
	return r, true
}

// templates executes an ApplicationSet's templates (Options.Templates).
func (d *discovery) templates(ctx context.Context, req render.TemplateRequest, lim render.TemplateLimits) (render.TemplateResult, error) {
	return d.opts.Templates(ctx, req, lim)
}

// add records m unless an object of the same identity is known; files in the
// repository are added first and so win over rendered copies of themselves.
func (d *discovery) add(m *manifest) bool {
	if m.Parent != "" {
		if changed, done := d.addRendered(m); done {
			return changed
		}
	}
	id := m.identity()
	if d.seen[id] {
		return false
	}
	d.seen[id] = true
	d.manifests = append(d.manifests, m)
	return true
}

// addRendered handles a rendered copy m of an object also declared in a file of
// the repository. done is false when m is to be added as an object of its own.
func (d *discovery) addRendered(m *manifest) (changed, done bool) {
	argo := m.group() == groupArgo
	if !m.templated() {
		for _, e := range d.manifests {
			if e.superseded || e.File != m.File || e.Kind != m.Kind || e.group() != m.group() {
				continue
			}
			// A file named by Flux postBuild variables (a shared component's
			// HelmRelease ${APP}-anubis) is a template: its substituted copy,
			// rendered from the same file by a Kustomization, takes its place,
			// and gives it up to a cluster's copy as a file outside clusters/
			// would (below).
			template := e.Parent == "" && e.templated()
			standIn := e.substituted && e.Name == m.Name && e.Cluster == "" && m.Cluster != ""
			if template || standIn {
				e.superseded = true
				delete(d.seen, e.identity())
				m.substituted, changed = true, true
			}
		}
	}
	for _, e := range d.manifests {
		if e.Parent != "" || e.superseded || e.Kind != m.Kind || e.Name != m.Name || e.group() != m.group() {
			continue
		}
		sameFile := e.File == m.File && (e.Namespace == "" || e.Namespace == m.Namespace)
		if !argo && e.Cluster == "" && m.Cluster != "" && (e.File == m.File || e.Namespace == m.Namespace || e.Namespace == "") {
			// A file outside clusters/<name>/ (apps/base/…, tenants/…) that the
			// target of a cluster applies: each cluster gets its own copy, as
			// rendered (namespace, patches and all). The rendered copy's origin
			// is the file even when the file names another namespace: a
			// kustomization's namespace field overrides metadata.namespace
			// (kustomize's namespace transformer). A partial copy of the same
			// object in an overlay's patch file goes too, whether or not the
			// patch repeats the namespace (kustomize matches patches by name).
			e.superseded = true
			delete(d.seen, e.identity())
			changed = true
			continue
		}
		if !sameFile || (!argo && e.Cluster != m.Cluster) {
			continue
		}
		// A rendered copy of a file already read tells where it really goes: the
		// cluster of the target that applies it, and the namespace that target
		// sets.
		if e.Cluster == "" && m.Cluster != "" {
			e.Cluster, changed = m.Cluster, true
		}
		if e.Namespace == "" && m.Namespace != "" {
			delete(d.seen, e.identity())
			e.Namespace, e.Obj, e.raw, changed = m.Namespace, m.Obj, m.raw, true
			d.seen[e.identity()] = true
		}
		d.seen[m.identity()] = true
		return changed, true
	}
	if changed {
		// Superseded files: m takes their place.
		id := m.identity()
		if !d.seen[id] {
			d.seen[id] = true
			d.manifests = append(d.manifests, m)
		}
		return true, true
	}
	return false, false
}

// pathCluster is the cluster of a file in a clusters/<name>/ directory (the layout
// flux bootstrap creates), mapped through Options.ClusterNames; empty elsewhere.
func (d *discovery) pathCluster(file string) string {
	segs := strings.Split(file, "/")
	for i := 0; i+1 < len(segs)-1; i++ {
		if segs[i] == "clusters" {
			if c, ok := d.clusterFor(segs[i+1]); ok {
				return c
			}
			return segs[i+1]
		}
	}
	return ""
}

// built is one pass of turning manifests into targets.
type built struct {
	targets     []config.Target
	notRendered []config.Target
	notes       []string
	names       map[string]bool
	sets        map[string]SetInfo
}

// build turns the manifests found so far into targets. It is a pure function of
// the manifests, so it can run again after each round of rendering.
func (d *discovery) build() *built {
	b := &built{names: map[string]bool{}, sets: map[string]SetInfo{}}
	fx := d.fluxIndex()
	var apps []*manifest
	for _, m := range d.manifests {
		switch {
		case m.superseded || m.templated():
		case m.is(diffing.ArgoCDApplicationSet):
			gen, nr, notes, info := d.expandAppSet(m)
			b.sets[SetKey(info.Namespace, info.Name)] = info
			apps = append(apps, gen...)
			b.notRendered = append(b.notRendered, nr...)
			b.notes = append(b.notes, notes...)
		case m.is(diffing.ArgoCDApplication):
			apps = append(apps, m)
		}
	}
	declared := func(ts []config.Target, m *manifest) []config.Target {
		for i := range ts {
			ts[i].DeclaredBy = m.parentKey
		}
		return ts
	}
	for _, m := range apps {
		ts, nr := d.argoTargets(m)
		b.targets = append(b.targets, declared(withNotes(ts, m.dupNotes), m)...)
		b.notRendered = append(b.notRendered, declared(withNotes(nr, m.dupNotes), m)...)
	}
	for _, m := range d.manifests {
		var t config.Target
		var skipped bool
		switch {
		case m.superseded || m.templated():
			continue
		case m.is(diffing.FluxKustomization):
			t, skipped = d.fluxKustomization(m, fx)
		case m.is(diffing.FluxHelmRelease):
			t, skipped = d.fluxHelmRelease(m, fx)
		default:
			continue
		}
		t.DeclaredBy = m.parentKey
		t.Notes = append(t.Notes, m.dupNotes...)
		if skipped {
			b.notRendered = append(b.notRendered, t)
		} else {
			b.targets = append(b.targets, t)
		}
	}
	// Names are made unique in a stable order: targets first, by declaring file.
	for i := range b.targets {
		b.targets[i].Name = b.unique(b.targets[i])
	}
	for i := range b.notRendered {
		b.notRendered[i].Name = b.unique(b.notRendered[i])
	}
	byName := func(a, c config.Target) int {
		return cmp.Or(strings.Compare(a.Name, c.Name), strings.Compare(a.Cluster, c.Cluster))
	}
	slices.SortStableFunc(b.targets, byName)
	slices.SortStableFunc(b.notRendered, byName)
	return b
}

// withNotes adds notes to each target of ts.
func withNotes(ts []config.Target, notes []string) []config.Target {
	if len(notes) == 0 {
		return ts
	}
	for i := range ts {
		ts[i].Notes = append(slices.Clone(ts[i].Notes), notes...)
	}
	return ts
}

// unique gives t a name no other target of its cluster has: its own, else
// name-namespace, else numbered. Targets of different clusters may share a name
// (clusters/staging and clusters/production both apply Kustomization apps): the
// report tells them apart by their cluster.
func (b *built) unique(t config.Target) string {
	cands := []string{t.Name}
	if t.Controller != nil && t.Controller.Namespace != "" {
		cands = append(cands, t.Name+"-"+t.Controller.Namespace)
	}
	taken := func(c string) bool {
		k := t.Cluster + "\x00" + c
		if b.names[k] {
			return true
		}
		b.names[k] = true
		return false
	}
	for _, c := range cands {
		if !taken(c) {
			return c
		}
	}
	for i := 2; ; i++ {
		c := fmt.Sprintf("%s-%d", t.Name, i)
		if !taken(c) {
			return c
		}
	}
}

// renderKey identifies a render request, so each distinct target is rendered once.
// The options are compared as JSON: they hold pointers (jsonnet options) whose
// addresses differ between rounds.
func renderKey(t config.Target) string {
	o, err := json.Marshal(t.Render)
	if err != nil {
		o = fmt.Appendf(nil, "%#v", t.Render)
	}
	return fmt.Sprintf("%s|%s|%s|%s", t.Name, t.Path, t.Cluster, o)
}

func targetNames(ts []config.Target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// cleanRel turns a path from a controller object into a clean root-relative path;
// ok is false when it leaves the checkout.
func cleanRel(p string) (string, bool) {
	p = strings.TrimSpace(p)
	p = strings.TrimPrefix(p, "/")
	p = path.Clean("./" + p)
	if p == ".." || strings.HasPrefix(p, "../") {
		return p, false
	}
	return p, true
}

// detectRenderer picks the renderer the controllers pick for a directory: a
// kustomization means kustomize, a Chart.yaml helm, anything else plain YAML.
func detectRenderer(root, rel string) (render.Renderer, bool) {
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return render.RendererAuto, false
	}
	return render.Detect(os.Stat, dir), true
}

// clusterFor maps a destination or cluster directory to a server-config cluster name.
func (d *discovery) clusterFor(keys ...string) (string, bool) {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if c, ok := d.opts.ClusterNames[k]; ok {
			return c, true
		}
	}
	return "", false
}

// remoteRefusal is why a chart of the Helm repository url is not fetched, or ""
// when the remote policy allows it.
func (d *discovery) remoteRefusal(url string) string {
	if d.opts.Remote == nil {
		return "source outside this repo: " + url + ": " + remote.OffReason
	}
	if err := d.opts.Remote(url); err != nil {
		return "source outside this repo: " + err.Error()
	}
	return ""
}

// notRenderedFinding is the finding a NotRendered target carries.
func notRenderedFinding(key render.ObjectKey, msg string) diffing.Finding {
	return diffing.Finding{
		Rule:     diffing.RuleNotRendered,
		Severity: diffing.DefaultSeverity[diffing.RuleNotRendered],
		Key:      key,
		Message:  msg,
	}
}

// deepMerge merges src over dst the way Helm merges values: maps merge, anything
// else is replaced. dst is modified and returned.
func deepMerge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = deepMerge(dm, sm)
				continue
			}
			dst[k] = deepMerge(map[string]any{}, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}
