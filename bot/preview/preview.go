package preview

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

// Cluster is how to reach one named cluster. Credentials come only from the CLI flags
// or the server config, never from the repository.
type Cluster struct {
	Name     string
	Config   *rest.Config     // nil means no live comparison for this cluster
	LiveMode diffing.LiveMode // diffing.LiveSimulate when empty
}

// Request is one preview: a git repository and two commits.
type Request struct {
	// RepoDir is a git repository (bare or not) that holds both commits. The
	// working tree is never touched: base and head are checked out into temp dirs.
	RepoDir string
	// GitEnv is added to every git command (credentials, never written to disk).
	GitEnv []string
	Base   string // ref or SHA
	Head   string
	// Config, when nil, is read from ConfigFile, or else from .driftpreview.yaml at
	// Base (so a PR cannot change its own policy); when that is missing too,
	// targets are discovered.
	Config     *config.Config
	ConfigFile string
	// ConfigAtBase reads ConfigFile from the base commit (a path in the
	// repository, refused when it is a symlink) instead of from disk: CI mode
	// (`driftpreview comment`), where the working tree is the PR's head. The
	// local CLI reads the developer's own file.
	ConfigAtBase bool
	// Clusters maps the names the repo config uses to credentials. DefaultCluster
	// is used for targets that name no cluster, or a cluster not in Clusters when
	// there is exactly one way to reach a cluster (the CLI's --kubeconfig).
	Clusters       map[string]Cluster
	DefaultCluster *Cluster
	// ArgoCDCluster is the cluster Argo CD runs in, where Applications are read
	// (hub and spoke). When nil, an Application is read from its destination only
	// when that is the in-cluster one; otherwise a note says it was not read.
	ArgoCDCluster *Cluster
	// ArgoClusters, when not nil, are Argo CD's clusters for the ApplicationSet
	// clusters generator (the server config's argocd.clusters), used instead of
	// reading Argo CD's cluster Secrets from ArgoCDCluster (or DefaultCluster).
	ArgoClusters []gitops.ArgoCluster
	// Targets limits the run to these target names; empty means all. Named
	// targets are always rendered.
	Targets []string
	// AllTargets renders and compares every target; otherwise a target none of
	// whose input files the pull request changes is listed as not affected
	// (notAffected) and not rendered.
	AllTargets bool
	// RepoURLs name this repository, so GitOps objects pointing at it are found;
	// the origin remote is added automatically.
	RepoURLs []string
	// BaseBranch is the branch the pull request merges into. A GitOps source of
	// this repository at another branch is not what the PR changes. When empty it
	// is read from Base when Base is a remote-tracking branch (origin/main);
	// otherwise main or master is assumed.
	BaseBranch string
	Now        time.Time
	// Remote fetches charts from Helm repositories (remote charts of Flux and
	// Argo CD objects, unvendored chart dependencies) as its policy allows; nil
	// fetches nothing. It comes from the server config or the CLI, never from
	// the repository.
	Remote *remote.Fetcher
	// CheckoutDir is the directory base and head are checked out under (in a
	// temp dir of their own, removed before Run returns). Empty chooses:
	// /dev/shm when it is a tmpfs with room for both trees four times over,
	// else the temp dir ($TMPDIR).
	CheckoutDir string
	// RenderCache, when set, keeps renders on disk by content across runs
	// (DiskCache): the CLI's under the user cache dir, serve's under its work dir.
	RenderCache *DiskCache
	// Progress, when set, hears of the run's phases, its targets and its
	// live reads as they happen (a progress line on a terminal, log lines in
	// CI). It never changes the report.
	Progress Progress
	// Budget bounds the render processes' time of the whole preview; zero
	// fields are DefaultBudget's.
	Budget Budget
	// TemplateLimits bound each ApplicationSet's templates (zero fields:
	// render.DefaultTemplateLimits).
	TemplateLimits render.TemplateLimits
	// MaxTargets caps the targets one preview renders (DefaultMaxTargets when
	// zero): past it, the targets that follow in name order are left out, and
	// a not-rendered finding says how many.
	MaxTargets int

	// RecordLive records each target's live objects in TargetReport.Live
	// (diffing.Options.RecordLive), for serve's watch of open PRs.
	RecordLive bool

	// drift is set by Drift: every target's live objects are compared field
	// by field (diffing.Options.DriftFields), a suspended Flux object's too,
	// and each target's Controller carries the live object's sync policy.
	drift bool

	// afterTarget, when set (by tests), is called as each target's report
	// section is made and its renders released.
	afterTarget func(*renderCache)
}

// DefaultMaxTargets is Request.MaxTargets' default.
const DefaultMaxTargets = 5000

// Run executes the whole pipeline for one request and returns the report. An error
// is returned only for problems outside the PR author's control (git, I/O, a target
// name that does not exist); render and config problems are findings in the report.
func Run(ctx context.Context, req Request) (*diffing.Report, error) {
	if req.Now.IsZero() {
		req.Now = time.Now()
	}
	prog := req.progress()
	endCheckout := phase(prog, PhaseCheckout)
	if req.Remote != nil {
		// One run of the fetcher per preview: a host that did not answer is
		// not asked again for each of the preview's charts.
		b := req.Budget.withDefaults()
		req.Remote = req.Remote.NewRun(remote.RunLimits{MaxRequests: b.FetchRequests, MaxBytes: b.FetchBytes, MaxTime: b.FetchTime})
	}
	r := repo{dir: req.RepoDir, env: req.GitEnv}
	// The git calls of the start are independent of each other: the two
	// commits (one git process, which also tells that RepoDir is a
	// repository), the base branch and the origin remote are asked at once.
	var (
		baseSHA, headSHA string
		baseErr, headErr error
		openErr          error
		branch, origin   string
		asks             sync.WaitGroup
	)
	asks.Go(func() { baseSHA, headSHA, baseErr, headErr, openErr = r.resolvePair(ctx, req.Base, req.Head) })
	asks.Go(func() { origin = r.originURL(ctx) })
	if req.BaseBranch == "" {
		asks.Go(func() { branch = r.branchOf(ctx, req.Base) })
	}
	asks.Wait()
	if openErr != nil {
		return nil, openErr
	}
	if baseErr != nil {
		return nil, fmt.Errorf("base: %w", baseErr)
	}
	if headErr != nil {
		return nil, fmt.Errorf("head: %w", headErr)
	}
	if req.BaseBranch == "" {
		req.BaseBranch = branch
	}
	// The clusters' discovery does not depend on the checkouts: it is read
	// while they are made (prefetchDiscovery).
	warm, stopWarm := prefetchDiscovery(ctx, req)
	defer stopWarm()
	r.listed = func(changed []string) {
		switch {
		case len(req.Targets) > 0 || req.AllTargets || (len(changed) > 0 && !discover.DocsOnly(changed)):
			// A render is likely: a render process starts and warms up
			// while the trees are written and the targets found, instead
			// of at the first render (render.Prestart). Previews in one
			// process share the pool: one already idle is not doubled.
			render.Prestart(render.Options{}, 1)
		case len(changed) > 0:
			// Documentation only: discovery may still render (a Flux
			// Kustomization that patches what it deploys is rendered to
			// find it, flux2-kustomize-helm-example's apps): the process
			// starts, and warms up only if a render comes.
			render.PrestartCold(render.Options{}, 1)
		}
	}
	co, err := r.checkoutBoth(ctx, baseSHA, headSHA, req.CheckoutDir)
	tmp := co.tmp
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return nil, err
	}
	baseDir, headDir, changed := co.baseDir, co.headDir, co.changed
	endCheckout()
	endTargets := phase(prog, PhaseTargets)

	rep := &diffing.Report{Base: baseSHA, Head: headSHA, GeneratedAt: req.Now.UTC(), Targets: []diffing.TargetReport{}}
	cfg, err := loadConfig(ctx, req, r, baseSHA, baseDir)
	if err != nil {
		var cerrs []*config.Error
		if cerrs = config.Errors(err); len(cerrs) == 0 {
			return nil, err
		}
		for _, ce := range cerrs {
			// The config comes from the base (or a file the user named), never
			// from the PR: its errors are not the PR's, and nothing is compared.
			rep.Findings = append(rep.Findings, diffing.Finding{
				Rule: diffing.RuleConfigError, Severity: diffing.DefaultSeverity[diffing.RuleConfigError],
				Path: ce.Field, Message: ce.Error(), PreExisting: true,
			})
		}
		diffing.Finish(rep, diffing.DefaultPolicy())
		endTargets()
		return rep, nil
	}
	urls := slices.Clone(req.RepoURLs)
	if origin != "" {
		// An empty URL would make discovery believe this repository's URL is
		// known, and skip the note that says it is guessed from paths.
		urls = append(urls, origin)
	}
	// One input finder per checkout serves every target (notAffectedBy and the
	// content keys of renders); closed before the checkouts are removed.
	// Content keys come from git's blob ids where the checkout is the blobs.
	baseInputs, headInputs := render.NewInputFinderTree(baseDir, co.baseTree.entries), render.NewInputFinderTree(headDir, co.headTree.entries)
	render.ShareParses(baseInputs, headInputs)
	defer baseInputs.Close()
	defer headInputs.Close()
	cache := newRenderCache()
	cache.inputs = map[string]*render.InputFinder{baseDir: baseInputs, headDir: headInputs}
	cache.checkouts = map[string]string{baseDir: render.NewCheckoutID(), headDir: render.NewCheckoutID()}
	cache.spent = newSpending(req.Budget)
	if req.RenderCache != nil {
		cache.disk = req.RenderCache
		defer req.RenderCache.Trim()
	}
	found, err := resolveTargets(ctx, cfg, baseDir, headDir, changed, urls, req, cache, map[string]render.GitTree{baseDir: co.baseTree.entries, headDir: co.headTree.entries})
	if err != nil {
		return nil, err
	}
	targets, notes, atBase := found.Targets, found.Notes, found.AtBase
	renamed := markRenamed(targets, atBase)
	if len(req.Targets) > 0 {
		var kept []config.Target
		for _, name := range req.Targets {
			// NAME selects every target of that name (one per cluster);
			// NAME@CLUSTER one of them.
			n, cluster, one := strings.Cut(name, "@")
			before := len(kept)
			for _, t := range targets {
				if t.Name == n && (!one || t.Cluster == cluster) && !slices.ContainsFunc(kept, func(k config.Target) bool { return k.Name == t.Name && k.Cluster == t.Cluster }) {
					kept = append(kept, t)
				}
			}
			if len(kept) == before {
				return nil, fmt.Errorf("no target named %q (have %s)", name, targetNames(targets))
			}
		}
		targets = kept
	}
	var skip []string
	if len(req.Targets) == 0 && !req.AllTargets {
		skip = notAffectedBy(targets, baseInputs, headInputs, changed)
	}
	targets, skip = capTargets(rep, targets, skip, req.MaxTargets)

	var expired []diffing.Finding
	cfg, targets, expired = judgeIgnores(cfg, targets, req.Now)
	rep.Findings = append(rep.Findings, expired...)
	toRender := 0
	for i := range targets {
		if skip == nil || skip[i] == "" {
			toRender++
		}
	}
	prog.TargetsFound(len(targets), toRender)
	endTargets()
	endCompare := phase(prog, PhaseCompare)

	p := pipeline{req: req, cfg: cfg, base: checkout{"base", baseDir}, head: checkout{"head", headDir}, readers: map[string]*live.Reader{}, warm: warm, renders: cache, atBase: atBase, created: found.New, renamed: renamed}
	// Targets are independent: render and read them in parallel, one per CPU, and
	// keep the report in target order.
	rep.Targets = make([]diffing.TargetReport, len(targets))
	sem := make(chan struct{}, targetsInFlight(req))
	// Only renders read the checkouts. Once every target is rendered they are
	// removed while the live reads and diffs go on (unlinking two trees is
	// mostly waiting for the file system); Run returns only once they are
	// gone. The deferred RemoveAll above covers the returns before this.
	var rendering sync.WaitGroup
	rendering.Add(len(targets))
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		rendering.Wait()
		_ = os.RemoveAll(tmp)
	}()
	defer func() { <-removed }()
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			affected := skip == nil || skip[i] == ""
			rendered := sync.OnceFunc(func() {
				rendering.Done()
				if affected {
					prog.TargetRendered(t.Name)
				}
			})
			defer rendered()
			if !affected {
				rep.Targets[i] = p.notAffected(t, skip[i])
				return
			}
			rep.Targets[i] = p.target(ctx, t, rendered)
			p.release(t)
			if req.afterTarget != nil {
				req.afterTarget(p.renders)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rep.Notes = append(rep.Notes, notes...)
	createdByMerge(rep)
	renamesAdopt(rep, targets)
	sharedResources(rep, targets)
	dedupeCascades(rep, targets)
	dedupeDeprecations(rep)
	diffing.Finish(rep, cfg.Policy)
	endCompare()
	return rep, nil
}

// capTargets keeps at most limit targets to render (DefaultMaxTargets when
// limit is zero), in name order, and says in a not-rendered finding how many
// were left out; targets listed as not affected (skip) do not count, since
// they are not rendered.
func capTargets(rep *diffing.Report, targets []config.Target, skip []string, limit int) ([]config.Target, []string) {
	if limit <= 0 {
		limit = DefaultMaxTargets
	}
	if len(targets) <= limit {
		return targets, skip
	}
	var kept []config.Target
	var keptSkip []string
	rendered, left := 0, 0
	for i, t := range targets {
		s := ""
		if skip != nil {
			s = skip[i]
		}
		if s == "" {
			if rendered >= limit {
				left++
				continue
			}
			rendered++
		}
		kept = append(kept, t)
		keptSkip = append(keptSkip, s)
	}
	if left > 0 {
		rep.Findings = append(rep.Findings, diffing.Finding{
			Rule: diffing.RuleNotRendered, Severity: diffing.DefaultSeverity[diffing.RuleNotRendered],
			Message: fmt.Sprintf("%d targets are not previewed: a preview renders at most %d targets (the first %d in name order are); preview fewer at a time (--target) or split the ApplicationSets that generate them", left, limit, limit),
		})
	}
	if skip == nil {
		keptSkip = nil
	}
	return kept, keptSkip
}

func targetNames(ts []config.Target) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
		if t.Cluster != "" && slices.ContainsFunc(ts, func(o config.Target) bool { return o.Name == t.Name && o.Cluster != t.Cluster }) {
			names[i] += "@" + t.Cluster
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return fmt.Sprint(names)
}

// loadConfig picks the repo config: given, from a file the user named (in CI
// mode that file as the base commit has it), or from the base commit.
func loadConfig(ctx context.Context, req Request, r repo, baseSHA, baseDir string) (*config.Config, error) {
	switch {
	case req.Config != nil:
		return req.Config, nil
	case req.ConfigFile != "" && req.ConfigAtBase:
		return configAtBase(ctx, r, baseSHA, req.ConfigFile)
	case req.ConfigFile != "":
		data, err := os.ReadFile(req.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("reading config: %w", err)
		}
		return config.Parse(data, req.ConfigFile)
	default:
		return config.Load(baseDir)
	}
}

// checkout is one side of the PR, checked out in dir.
type checkout struct {
	side string // "base" or "head", as notes name it
	dir  string
}

// pipeline carries what the targets of one run share: checkouts and live readers.
type pipeline struct {
	req Request
	cfg *config.Config
	// base and head are the two checkouts, each with the side it is: the
	// renderer is told which, never left to guess from the directory.
	base, head checkout
	renders    *renderCache
	// atBase names the targets the base commit declares (in its config, or found
	// by discovery at base): their discovery findings hold at base too.
	atBase map[string]bool
	// created names the targets whose controller object the merge creates
	// (discover.Result.New): their base side is empty.
	created map[string]bool
	// renamed maps the discover.Key of each Application the PR renames to the
	// target of its new name (markRenamed).
	renamed map[string]config.Target
	mu      sync.Mutex // guards readers
	readers map[string]*live.Reader
	// warm holds the readers prefetchDiscovery made, by their cluster's
	// configuration, until reader takes them (guarded by mu).
	warm map[*rest.Config]*warmReader
}

// target renders, reads live state for, and diffs one target. It never fails: every
// problem becomes a finding, so one broken target never hides the others. It calls
// rendered once it reads the checkouts no more (it may return without calling it).
func (p *pipeline) target(ctx context.Context, t config.Target, rendered func()) diffing.TargetReport {
	opts := p.cfg.DiffOptions(t)
	deleted := t.Controller != nil && t.Controller.Deleted
	if t.Skip != "" && deleted {
		// Not rendered, but deleting its controller object deletes what it
		// deployed all the same: judged from the controller object and its
		// live record, with nothing rendered at either side.
		rendered()
		return p.compare(ctx, t, diffing.Input{Name: t.Name, Path: t.Path, Cluster: t.Cluster}, opts, rendering{unrendered: t.Skip})
	}
	if t.Skip != "" {
		findings := slices.Clone(t.Findings)
		if p.atBase[discover.Key(t)] {
			// Listed as not rendered at base already: not this PR's doing.
			diffing.MarkAllPreExisting(findings)
		}
		return diffing.TargetReport{Name: t.Name, Path: t.Path, Cluster: t.Cluster, Controller: t.Controller,
			Skipped: t.Skip, Notes: slices.Clone(t.Notes), Findings: findings,
			Changes: []diffing.Change{}}
	}
	in := diffing.Input{Name: t.Name, Path: t.Path, Cluster: t.Cluster}
	var baseNote, headNote string
	// Base and head render at the same time (the render cache bounds how many
	// renders run at once by CPUs, and renders a target alike at both once).
	var headDone chan struct{}
	if !deleted {
		ht := headSide(t)
		headDone = make(chan struct{})
		go func() {
			defer close(headDone)
			in.Head, headNote, in.HeadErr = p.renderAt(ctx, p.head, ht)
		}()
	}
	in.Base, baseNote, in.BaseErr = p.renderAt(ctx, p.base, t)
	var adopted []render.ObjectKey
	if c := t.Controller; c != nil && !deleted && p.created[discover.Key(t)] && !p.renameTarget(t) {
		// A controller object only the head declares (a new HelmRelease, an
		// Application added to an app of apps, an Application its
		// ApplicationSet generates only at head): the merge creates it, so
		// nothing of it is deployed before, even when its source renders at
		// base (a directory or chart already in the repository).
		baseNote = fmt.Sprintf("%s %s is new in this PR: the merge creates it, and everything it deploys is new.", c.Kind, mdtext.Code(c.Namespace+"/"+c.Name))
		if c.Generator != "" {
			baseNote = fmt.Sprintf("ApplicationSet %s generates Application `%s/%s` only with this PR: the merge creates it, and everything it deploys is new.", c.Generator, c.Namespace, c.Name)
		}
		in.Base, in.BaseErr = render.ObjectSet{}, nil
	}
	if deleted {
		// Nothing deploys the target after the merge: head is empty.
		opts.Removal, opts.Prune = removal(t.Controller, nil)
		if next, ok := p.renamed[discover.Key(t)]; ok && !opts.Prune && in.BaseErr == nil {
			// Renamed without the resources finalizer: the objects the new
			// name deploys too stay and are adopted by it; its target shows
			// them. Only the rest is left behind.
			if nextSet, _, err := p.renderAt(ctx, p.head, headSide(next)); err == nil {
				in.Base, adopted = adoptedBy(in.Base, nextSet)
			}
		}
	} else {
		<-headDone
	}
	// Later steps rebuild the sets (identify, live), which drops Charts.
	baseCharts, headCharts := in.Base.Charts, in.Head.Charts
	if reason, ok := unavailable(in.BaseErr); ok && deleted {
		// A deleted controller object whose source could not be fetched:
		// judged as one whose source is not rendered.
		rendered()
		return p.compare(ctx, t, diffing.Input{Name: t.Name, Path: t.Path, Cluster: t.Cluster}, opts, rendering{unrendered: reason, baseCharts: baseCharts})
	}
	if reason, ok := unavailable(in.HeadErr, in.BaseErr); ok {
		// The controller can render it (it fetches what is missing), this
		// preview cannot: listed as not rendered, never a render error.
		var key render.ObjectKey
		if c := t.Controller; c != nil {
			key, _ = c.LiveKey()
		}
		discovered := slices.Clone(t.Findings)
		if p.atBase[discover.Key(t)] {
			diffing.MarkAllPreExisting(discovered)
		}
		_, atBase := unavailable(in.BaseErr) // the base cannot be rendered either
		return diffing.TargetReport{Name: t.Name, Path: t.Path, Cluster: t.Cluster, Controller: t.Controller,
			Skipped: reason, Notes: slices.Clone(t.Notes), Changes: []diffing.Change{},
			Findings: append(discovered, diffing.Finding{
				Rule: diffing.RuleNotRendered, Severity: diffing.DefaultSeverity[diffing.RuleNotRendered], Key: key,
				Message: fmt.Sprintf("%s is not rendered: %s", t.Name, reason), PreExisting: atBase})}
	}

	rendered() // the rest reads the cluster and the renders, not the checkouts
	return p.compare(ctx, t, in, opts, rendering{adopted: adopted, baseNote: baseNote, headNote: headNote, baseCharts: baseCharts, headCharts: headCharts})
}

// rendering is what p.target's renders give p.compare besides the input.
type rendering struct {
	// unrendered says why the source of a target whose controller object the
	// PR deletes is not rendered: base and head are empty, and what it
	// deployed comes from the live controller's record.
	unrendered string
	// adopted are the base objects the new name of a renamed Application
	// adopts (adoptedBy).
	adopted                []render.ObjectKey
	baseNote, headNote     string
	baseCharts, headCharts []render.ResolvedChart
}

// compare reads the target's live state, diffs, and adds the findings and notes
// of discovery and of the live controller object.
func (p *pipeline) compare(ctx context.Context, t config.Target, in diffing.Input, opts diffing.Options, r rendering) diffing.TargetReport {
	cl, liveNote := p.cluster(t)
	if cl != nil && cl.Name != "" && cl.Name != t.Cluster {
		// The report names the cluster actually compared; say when that is not the
		// one the target declares (the CLI's kubeconfig context stands in for it).
		// Argo CD's "in-cluster" names no cluster of its own, so it needs no note.
		if t.Cluster != "" && t.Cluster != "in-cluster" {
			liveNote = fmt.Sprintf("The target deploys to cluster %q; it was compared with %q, the cluster configured for targets without credentials of their own.", t.Cluster, cl.Name)
		}
		in.Cluster = cl.Name
	}
	deleted := t.Controller != nil && t.Controller.Deleted
	opts.DriftFields = p.req.drift
	opts.RecordLive = p.req.RecordLive
	if p.req.drift && !opts.Argo.RespectsIgnores() {
		// An Application's ignoreDifferences always shape Argo CD's
		// comparison (argo-cd docs user-guide/diffing.md): an ignored
		// field leaves the Application Synced, so self-heal never reverts
		// it, whether or not a sync respects the rules.
		opts.Ignore = append(opts.Ignore, t.Ignore...)
	}
	var lr liveRead
	if cl != nil && in.HeadErr == nil {
		lr = p.live(ctx, cl, t, &in, opts)
		opts.Ignore = append(opts.Ignore, lr.ignore...)
		p.req.progress().LiveRead(t.Name)
		in.Live = lr.state
		if st := in.Live; st != nil && len(r.adopted) > 0 {
			// Tracked live as the old name's, but adopted by the new one.
			for k := range st.Tracked {
				if slices.ContainsFunc(r.adopted, func(a render.ObjectKey) bool { return sameObject(a, k) }) {
					delete(st.Tracked, k)
				}
			}
		}
	} else {
		identify(&in, t, nil)
	}
	cascade := opts.Prune
	if deleted {
		// The live controller object is the one deleted: its settings decide.
		opts.Removal, cascade = removal(t.Controller, lr.ctrl)
		opts.RemovedKind, opts.Prune = t.Controller.Kind, cascade
	}
	tr := diffing.Diff(in, opts)
	if in.Live != nil {
		tr.LiveOwners = in.Live.Owners
	}
	if !deleted {
		// Nothing a deletion does holds at base, where the object exists.
		p.markPreExisting(ctx, &tr, in, opts, lr)
	}
	tr.Controller = t.Controller
	if lr.suspended {
		if !t.Controller.Suspended {
			c := *t.Controller
			c.Suspended, c.AutoSync, c.SelfHeal = true, false, false
			tr.Controller = &c
		}
		// What git asks for (a prune, a refused update) happens when the
		// controller is resumed, not on merge.
		for i := range tr.Findings {
			tr.Findings[i].Message = fmt.Sprintf("Not on merge: %s %s is suspended; once it is resumed: %s",
				t.Controller.Kind, mdtext.Code(t.Controller.Namespace+"/"+t.Controller.Name), tr.Findings[i].Message)
		}
	}
	if p.req.drift {
		tr.Controller = driftController(tr.Controller, lr.ctrl, opts)
	}
	// Discovery's findings and the live controller's come from the target as the
	// base declares it (base wins in discovery), so they hold at base too.
	discovered := slices.Clone(t.Findings)
	ctrlFindings := lr.findings
	if p.atBase[discover.Key(t)] {
		diffing.MarkAllPreExisting(discovered)
		diffing.MarkAllPreExisting(ctrlFindings)
	}
	tr.Findings = append(tr.Findings, discovered...)
	tr.Findings = append(tr.Findings, ctrlFindings...)
	if f, ok := deletionCascade(t, tr, lr, cascade, r.unrendered); ok {
		tr.Findings = append(tr.Findings, f)
	}
	if r.unrendered != "" {
		what := "its live controller object was not read"
		if lr.record != "" {
			what = "what it deployed is listed from its " + lr.record
		}
		tr.Notes = append(tr.Notes, fmt.Sprintf("The source is not rendered (%s); this PR deletes the %s, so %s.", r.unrendered, t.Controller.Kind, what))
	}
	tr.Notes = append(tr.Notes, chartNotes(r.baseCharts, r.headCharts)...)
	if n := releaseNote(lr.release, r.baseCharts, r.headCharts); n != "" {
		tr.Notes = append(tr.Notes, n)
	}
	for _, n := range []string{r.baseNote, r.headNote, liveNote, lr.note} {
		if n != "" {
			tr.Notes = append(tr.Notes, n)
		}
	}
	tr.Notes = append(tr.Notes, t.Notes...)
	if c := t.Controller; c != nil && c.Argo != nil && !c.Argo.RespectsIgnores() && len(t.Ignore) > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("ignoreDifferences in %s hide fields from Argo CD's diff only: without the sync option RespectIgnoreDifferences=true a sync applies them as git has them, so the findings on them are shown.", c.Source))
	}
	tr.Notes = append(tr.Notes, lr.notes...)
	if len(r.adopted) > 0 {
		next := p.renamed[discover.Key(t)]
		tr.Notes = append(tr.Notes, fmt.Sprintf("Application %s is renamed to %s by this PR. Without Argo CD's resources finalizer, deleting it leaves what it deployed in place, and %s adopts the %d objects it deploys too: their changes are shown under target %s.",
			mdtext.Code(t.Controller.Namespace+"/"+t.Controller.Name), mdtext.Code(t.Controller.RenamedTo), mdtext.Code(t.Controller.RenamedTo), len(r.adopted), next.Name))
	}
	return tr
}

// renameTarget says whether t is the new name of an Application the PR renames
// (markRenamed): it adopts what the old name deployed, so its base side is that.
func (p *pipeline) renameTarget(t config.Target) bool {
	for _, n := range p.renamed {
		if discover.Key(n) == discover.Key(t) {
			return true
		}
	}
	return false
}

// liveRead is what p.live read for one target: the live state, the live GitOps
// controller's findings, and how to read the same state again for the base.
type liveRead struct {
	state    *diffing.LiveState
	findings []diffing.Finding
	note     string
	// release is the live HelmRelease's release in storage: chart name and
	// version (controller.State.ReleaseChart, ReleaseVersion).
	release [2]string
	reader  *live.Reader // nil when the read failed before it started
	opts    live.Options
	// suspended is true when the Flux object is suspended in git or live:
	// no live objects were read.
	suspended bool
	// ignore are the ignore rules of the live argocd-cm's ignoreDifferences the
	// target's Application respects (argoCMIgnores); notes say what else of it
	// the report should know.
	ignore []diffing.IgnoreRule
	notes  []string
	// ctrl is the live controller object, when it was read.
	ctrl *controller.State
	// inventory and record are the controller's own record of what it
	// manages, read for a target whose controller object the PR deletes
	// (status.resources, status.inventory, the Helm release) and what that
	// record is ("status.inventory"); empty when not read.
	inventory []render.ObjectKey
	record    string
}

// isFlux says whether a Flux controller deploys the target.
func isFlux(c *diffing.Controller) bool {
	return c.Kind == diffing.FluxKustomization.Kind || c.Kind == diffing.FluxHelmRelease.Kind
}

// live reads the target's live state: its GitOps controller object first (the exact
// prune scope and the live sync policy), then the objects. Any read that fails makes
// the whole live side unavailable rather than partial.
func (p *pipeline) live(ctx context.Context, cl *Cluster, t config.Target, in *diffing.Input, opts diffing.Options) liveRead {
	unavailable := func(err error) liveRead {
		return liveRead{state: &diffing.LiveState{Mode: cl.LiveMode, Cluster: cl.Name, Err: err}}
	}
	reader, prefetched, err := p.reader(cl)
	if err != nil {
		identify(in, t, nil)
		return unavailable(err)
	}
	scope, err := prefetched.scope(ctx, reader)
	if err != nil {
		identify(in, t, nil)
		return unavailable(fmt.Errorf("reading cluster %s: %w", cl.Name, err))
	}
	identify(in, t, scope)
	lo := live.DefaultOptions()
	lo.Mode = cl.LiveMode
	lo.Manager = opts.Manager
	lo.Cluster = cl.Name
	lo.Namespace = t.Namespace
	lo.Argo = opts.Argo
	var findings []diffing.Finding
	var note string
	var argo controller.ArgoSettings
	var ignore []diffing.IgnoreRule
	var notes []string
	var release [2]string
	var ctrl *controller.State
	var inventory []render.ObjectKey
	var record string
	if t.Controller != nil {
		ctrlCluster, why := p.controllerCluster(t, cl)
		if ctrlCluster == nil {
			note = why
		} else {
			st, err := controller.Read(ctx, ctrlCluster.Config, *t.Controller)
			if err != nil {
				return unavailable(fmt.Errorf("reading %s %s on cluster %s: %w", t.Controller.Kind, t.Controller.Name, ctrlCluster.Name, err))
			}
			st.Cluster = ctrlCluster.Name
			ctrl = st
			if !t.Controller.Deleted {
				findings = controller.Findings(*t.Controller, st)
			} else if st.Exists {
				inventory, record, note = deletedRecord(ctx, ctrlCluster, t.Controller, st)
			}
			lo.Inventory = st.Inventory
			if t.Controller.Deleted && t.Controller.Kind == diffing.FluxHelmRelease.Kind {
				lo.Inventory = inventory
			}
			argo = st.Argo
			ignore, notes = argoCMIgnores(st.Argo, opts.Argo)
			release = [2]string{st.ReleaseChart, st.ReleaseVersion}
			if isFlux(t.Controller) && (t.Controller.Suspended || st.Suspended) && !p.req.drift {
				// A suspended Kustomization or HelmRelease applies no new
				// revision and corrects no drift until it is resumed
				// (kustomize-controller and helm-controller return before
				// reconciling when spec.suspend is set): the merge changes
				// nothing live, so nothing is predicted.
				return liveRead{findings: findings, note: note, suspended: true, ctrl: ctrl}
			}
		}
	}
	lo.Tracking = tracking(t, argo)
	return liveRead{state: reader.Read(ctx, in.Base, in.Head, lo), findings: findings, note: note, reader: reader, opts: lo, release: release,
		ignore: ignore, notes: notes, ctrl: ctrl, inventory: inventory, record: record}
}

// deletedRecord is what the live controller object that the PR deletes says it
// manages, and where it says so: an Application's status.resources, a
// Kustomization's status.inventory, a HelmRelease's release in Helm's storage
// (its newest release Secret, decoded for the objects' names only). A release
// that cannot be read gives a note instead; the objects Helm's annotations
// track are still found by the live read.
func deletedRecord(ctx context.Context, cl *Cluster, c *diffing.Controller, st *controller.State) (keys []render.ObjectKey, record, note string) {
	switch c.Kind {
	case diffing.ArgoCDApplication.Kind:
		return st.Inventory, "status.resources", ""
	case diffing.FluxKustomization.Kind:
		return st.Inventory, "status.inventory", ""
	case diffing.FluxHelmRelease.Kind:
		keys, err := controller.ReleaseObjects(ctx, cl.Config, st.Release)
		if err != nil {
			return nil, "", fmt.Sprintf("The release of HelmRelease %s was not read (%v): what it deployed is found by Helm's release annotations only.", c.Name, err)
		}
		return keys, fmt.Sprintf("Helm release (Secret %s/%s)", st.Release.StorageNamespace, st.Release.SecretName()), ""
	}
	return nil, "", ""
}

// markPreExisting marks the findings of tr that already hold at the PR's base, so
// that only what the PR introduces fails the check. A finding holds at base when
// diffing the base as if it were the head (against the same live cluster) reports
// the same rule on the same object and path. Render errors were judged by Diff
// itself (the same error at both sides).
func (p *pipeline) markPreExisting(ctx context.Context, tr *diffing.TargetReport, in diffing.Input, opts diffing.Options, lr liveRead) {
	if len(tr.Findings) == 0 {
		return
	}
	if in.BaseErr != nil || in.HeadErr != nil {
		// Only render errors are left, judged by Diff.
		return
	}
	if sameObjects(in.Base, in.Head) {
		// Diffing the base as head would see exactly this input again.
		diffing.MarkAllPreExisting(tr.Findings)
		return
	}
	baseLive := in.Live
	if in.Live != nil && in.Live.Err == nil && lr.reader != nil {
		// What applying the base would do: a second read, since the predictions
		// (conflicts, apply errors) depend on the objects applied. An object the
		// PR does not change is the same apply as in the first read, whose
		// prediction it takes.
		o := lr.opts
		o.Reuse = &live.Reuse{Base: in.Base, Head: in.Head, State: in.Live}
		baseLive = lr.reader.Read(ctx, in.Base, in.Base, o)
	}
	atBase := diffing.Diff(diffing.Input{Name: in.Name, Path: in.Path, Cluster: in.Cluster,
		Base: in.Base, Head: in.Base, Live: baseLive}, opts)
	diffing.MarkPreExisting(tr.Findings, atBase.Findings)
}

// sameObjects reports whether two renders hold the same objects with the same
// content.
func sameObjects(a, b render.ObjectSet) bool {
	if len(a.Objects) != len(b.Objects) {
		return false
	}
	bi := b.Index()
	for _, ao := range a.Objects {
		bo, ok := bi[ao.Key]
		if !ok || (ao.Obj == nil) != (bo.Obj == nil) || (ao.Obj != nil && !equality.Semantic.DeepEqual(ao.Obj.Object, bo.Obj.Object)) {
			return false
		}
	}
	return true
}

// identify names base and head objects where they live (diffing.Identity): the one
// step before base, head and live are matched by key. scope is the cluster's
// discovery when live comparison is on.
func identify(in *diffing.Input, t config.Target, scope diffing.ScopeFunc) {
	sets := diffing.Identity{Namespace: t.Namespace, Scope: scope}.Apply(in.Base, in.Head)
	in.Base, in.Head = sets[0], sets[1]
}

// controllerCluster is where the target's GitOps controller object lives. Flux
// objects live in the cluster they apply to. Argo CD Applications live where Argo
// CD runs: the configured ArgoCDCluster, or the destination when that is Argo CD's
// own (in-cluster) one. Otherwise nil and a note, rather than a false
// controller-missing finding.
func (p *pipeline) controllerCluster(t config.Target, cl *Cluster) (*Cluster, string) {
	switch t.Controller.Kind {
	case diffing.ArgoCDApplication.Kind, diffing.ArgoCDApplicationSet.Kind:
	default:
		return cl, ""
	}
	if a := p.req.ArgoCDCluster; a != nil && a.Config != nil {
		c := *a
		return &c, ""
	}
	if t.Cluster == "" || t.Cluster == "in-cluster" {
		return cl, ""
	}
	return nil, fmt.Sprintf("The live %s %s was not read: it deploys to cluster %q, and the cluster Argo CD runs in is not configured (argocdCluster in the server config, --argocd-context on the CLI).",
		t.Controller.Kind, t.Controller.Name, t.Cluster)
}

// cluster finds how to reach the target's cluster; nil with a note when there is no
// live comparison for it.
func (p *pipeline) cluster(t config.Target) (*Cluster, string) {
	var cl *Cluster
	if c, ok := p.req.Clusters[t.Cluster]; ok && t.Cluster != "" {
		cl = &c
	} else if p.req.DefaultCluster != nil {
		cl = p.req.DefaultCluster
	}
	switch {
	case cl == nil && t.Cluster != "":
		return nil, fmt.Sprintf("No live comparison: no credentials for cluster %q are configured.", t.Cluster)
	case cl == nil:
		return nil, "No live comparison: no cluster configured."
	case cl.LiveMode == diffing.LiveOff:
		return nil, "No live comparison: live mode is off."
	case cl.Config == nil:
		return nil, fmt.Sprintf("No live comparison: no credentials for cluster %q.", cl.Name)
	}
	c := *cl
	if c.LiveMode == "" {
		c.LiveMode = diffing.LiveSimulate
	}
	if c.Name == "" {
		c.Name = t.Cluster
	}
	return &c, ""
}

// reader returns the cluster's reader, and the prefetch that warmed it when
// this is the reader's first use (nil else).
func (p *pipeline) reader(cl *Cluster) (*live.Reader, *warmReader, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := cl.Name + "\x00" + cl.Config.Host
	if r, ok := p.readers[key]; ok {
		return r, nil, nil
	}
	if w, ok := p.warm[cl.Config]; ok {
		delete(p.warm, cl.Config)
		p.readers[key] = w.r
		return w.r, w, nil
	}
	r, err := newReader(cl.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to cluster %s: %w", cl.Name, err)
	}
	p.readers[key] = r
	return r, nil, nil
}

// warmReader is a reader whose discovery prefetchDiscovery started reading.
type warmReader struct {
	r    *live.Reader
	done chan struct{}
	err  error // the prefetch's Scope error, once done is closed
}

// scope is r.Scope(ctx) for the reader's first use: it waits for the prefetch
// and returns its error rather than asking again (an unreachable cluster costs
// one timeout, as without the prefetch); on success r's cached discovery
// answers. w may be nil (no prefetch).
func (w *warmReader) scope(ctx context.Context, r *live.Reader) (diffing.ScopeFunc, error) {
	if w != nil {
		select {
		case <-w.done:
			if w.err != nil && ctx.Err() == nil {
				return nil, w.err
			}
		case <-ctx.Done():
		}
	}
	return r.Scope(ctx)
}

func newReader(cfg *rest.Config) (*live.Reader, error) {
	r, err := live.NewReader(cfg)
	if err != nil {
		return nil, err
	}
	// The targets of one job share their LISTs (one per type and namespace, or
	// one cluster-wide per type once the job spans many namespaces),
	// and the second read that judges the base (markPreExisting) sends none.
	r.ShareLists()
	return r, nil
}

// preparedGroups are the GroupVersions whose schemas prefetchDiscovery builds
// ahead: nearly every target has ConfigMaps, Services or Deployments.
var preparedGroups = []schema.GroupVersion{{Version: "v1"}, {Group: "apps", Version: "v1"}}

// prefetchDiscovery starts reading the discovery of every cluster the run may
// compare with (live mode on, credentials given), while the checkouts are
// made, into a reader per cluster configuration that the pipeline's first
// reader for that configuration takes. A failed read is reported by the first
// target that uses the reader, where and as its own Scope would have reported
// it (warmReader.scope); live.Reader keeps only a successful discovery, so
// later targets ask again, as before. stop cancels what is still running and
// waits for it. Once discovery is read, the type converters of preparedGroups
// are built too (live.Reader.PrepareSchemas, which keeps nothing on an error).
func prefetchDiscovery(ctx context.Context, req Request) (warm map[*rest.Config]*warmReader, stop func()) {
	var cls []Cluster
	if req.DefaultCluster != nil {
		cls = append(cls, *req.DefaultCluster)
	}
	for _, c := range req.Clusters {
		cls = append(cls, c)
	}
	warm = map[*rest.Config]*warmReader{}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range cls {
		if c.LiveMode == diffing.LiveOff || c.Config == nil || warm[c.Config] != nil {
			continue
		}
		r, err := newReader(c.Config)
		if err != nil {
			continue // the pipeline's reader reports it
		}
		w := &warmReader{r: r, done: make(chan struct{})}
		warm[c.Config] = w
		wg.Go(func() {
			_, w.err = r.Scope(ctx)
			close(w.done)
			if w.err == nil {
				// Then the schemas of the core and apps groups, which nearly
				// every target's simulation needs first; the first target
				// would otherwise build them with the render slots waiting.
				r.PrepareSchemas(ctx, preparedGroups...)
			}
		})
	}
	return warm, func() {
		cancel()
		wg.Wait()
	}
}

// renderAt renders the target in the checkout c. A target directory missing at one
// side is an empty set (a new or removed target), with a note naming c's side,
// not an error.
func (p *pipeline) renderAt(ctx context.Context, c checkout, t config.Target) (set render.ObjectSet, note string, err error) {
	root := c.dir
	if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(t.Path))); errors.Is(err, fs.ErrNotExist) && t.Render.OCI == nil {
		return render.ObjectSet{}, fmt.Sprintf("%s does not exist at %s.", t.Path, c.side), nil
	}
	set, err = p.renders.render(ctx, root, t.Path, p.renderOptions(t))
	return set, "", rootless(err, root)
}

// renderOptions are the options renderAt renders t with.
func (p *pipeline) renderOptions(t config.Target) render.Options {
	ropts := t.Render
	ropts.Remote = p.req.Remote
	// Flux's postBuild variables are applied in the render process, under its
	// limits (a large variable used many times).
	ropts.Substitute = t.Substitute
	return ropts
}

// release lets the render cache drop t's renders at base and head once its
// report section is made: the report keeps what its output needs (diffs,
// findings, notes), never the objects, so a run holds the objects of the
// targets in flight only.
func (p *pipeline) release(t config.Target) {
	p.renders.release(p.base.dir, t.Path, p.renderOptions(t))
	ht := headSide(t)
	p.renders.release(p.head.dir, ht.Path, p.renderOptions(ht))
}

// headSide is t as the head renders it (Target.HeadSide).
func headSide(t config.Target) config.Target {
	if h := t.HeadSide; h != nil {
		t.Path, t.Render, t.Substitute = h.Path, h.Render, h.Substitute
	}
	return t
}

// chartNotes names the version each remote chart (and fetched dependency)
// resolved to at base and at head, and says when a version range resolves to
// another release at head although it reads the same: the repository published
// one, and the merge deploys it.
func chartNotes(base, head []render.ResolvedChart) []string {
	id := func(c render.ResolvedChart) string { return c.RepoURL + "\x00" + c.Name }
	what := func(c render.ResolvedChart) string {
		switch {
		case c.Artifact:
			return "OCI artifact " + c.RepoURL
		case c.GitBase:
			return fmt.Sprintf("remote base %s from %s", c.Name, c.RepoURL)
		case c.Dependency:
			return fmt.Sprintf("chart dependency %s from %s", c.Name, c.RepoURL)
		}
		return fmt.Sprintf("chart %s from %s", c.Name, c.RepoURL)
	}
	asked := func(c render.ResolvedChart) string {
		if c.Requested == "" {
			return "the latest version"
		}
		return c.Requested
	}
	var notes []string
	seen := map[string]bool{}
	for _, h := range head {
		seen[id(h)] = true
		i := slices.IndexFunc(base, func(b render.ResolvedChart) bool { return id(b) == id(h) })
		switch {
		case i < 0:
			notes = append(notes, fmt.Sprintf("%s: %s resolves to %s at head.", what(h), asked(h), h.Version))
		case base[i].Version == h.Version:
			notes = append(notes, fmt.Sprintf("%s: %s resolves to %s at base and at head.", what(h), asked(h), h.Version))
		case base[i].Requested == h.Requested:
			notes = append(notes, fmt.Sprintf("%s: %s resolves to %s at base and to %s at head: the repository has a newer release that matches, although the requested version did not change.", what(h), asked(h), base[i].Version, h.Version))
		default:
			notes = append(notes, fmt.Sprintf("%s: %s resolves to %s at base; %s resolves to %s at head.", what(h), asked(base[i]), base[i].Version, asked(h), h.Version))
		}
	}
	for _, b := range base {
		if !seen[id(b)] {
			notes = append(notes, fmt.Sprintf("%s: %s resolves to %s at base.", what(b), asked(b), b.Version))
		}
	}
	return notes
}

// releaseNote says when a HelmRelease's chart resolves, now, to another version
// than the release the cluster runs (live status.history), although the PR
// leaves what it asks for as it was: a version range (">=1.0.0", "1.x") that
// the repository has since published a newer release for. source-controller
// resolves the range again at every HelmChart interval and helm-controller
// upgrades to the new artifact at its next reconcile, merged or not; the bot
// cannot know what the range resolved to when base was merged, only what the
// cluster runs. So this is a note, and the findings of that upgrade hold at
// base as well (pre-existing): a PR that did not change the release never
// fails because of it.
func releaseNote(release [2]string, base, head []render.ResolvedChart) string {
	if release[1] == "" {
		return ""
	}
	for _, h := range head {
		if h.Dependency || h.Artifact || h.GitBase || h.Name != release[0] || h.Version == release[1] {
			continue
		}
		i := slices.IndexFunc(base, func(b render.ResolvedChart) bool {
			return b.RepoURL == h.RepoURL && b.Name == h.Name && !b.Dependency
		})
		if i < 0 || base[i].Requested != h.Requested || base[i].Version != h.Version {
			// The PR changes the version asked for: the chart notes say so.
			continue
		}
		asked := h.Requested
		if asked == "" {
			asked = "the latest version"
		}
		return fmt.Sprintf("chart %s from %s: %s resolves to %s now; the cluster runs %s (the HelmRelease's release history). Flux upgrades it to %s at its next reconcile whether or not this PR merges; this PR does not change it.",
			h.Name, h.RepoURL, asked, h.Version, release[1], h.Version)
	}
	return ""
}

// unavailable returns the reason of the first render.Unavailable among errs.
func unavailable(errs ...error) (string, bool) {
	for _, err := range errs {
		if reason, ok := render.IsUnavailable(err); ok {
			return reason, true
		}
	}
	return "", false
}

// rootless takes the checkout's temp dir out of an error's text: the comment
// should name files as the repository does, and the same error at base and head
// must read the same to be recognised as pre-existing.
func rootless(err error, root string) error {
	if err == nil || !strings.Contains(err.Error(), root) {
		return err
	}
	return &rootlessError{msg: strings.ReplaceAll(strings.ReplaceAll(err.Error(), root+string(filepath.Separator), ""), root, "."), err: err}
}

type rootlessError struct {
	msg string
	err error
}

func (e *rootlessError) Error() string { return e.msg }
func (e *rootlessError) Unwrap() error { return e.err }

// dedupeDeprecations keeps each kustomize deprecation warning once per run, in the
// first target that reports it: render notes it once per kustomization file, but a
// base that many overlays share would repeat it in every one of their targets.
// (kustomize itself prints it on stderr on every load; that happens in the render
// process, whose stderr is not passed on.)
func dedupeDeprecations(rep *diffing.Report) {
	seen := map[string]bool{}
	for i := range rep.Targets {
		t := &rep.Targets[i]
		t.Notes = slices.DeleteFunc(t.Notes, func(n string) bool {
			if !strings.Contains(n, "' is deprecated. Please use '") {
				return false
			}
			if seen[n] {
				return true
			}
			seen[n] = true
			return false
		})
	}
}

// judgeIgnores judges the expiry of every ignore rule of the report once, with one
// now: the config's and each target's. The expired ones become report-level
// ignore-expired findings, once each and pre-existing (the config comes from the
// base, not from the PR); the config and targets returned keep only the rules in
// force, which is all Diff sees.
func judgeIgnores(cfg *config.Config, targets []config.Target, now time.Time) (*config.Config, []config.Target, []diffing.Finding) {
	var all []diffing.Finding
	seen := map[string]bool{}
	judge := func(rules []diffing.IgnoreRule) []diffing.IgnoreRule {
		active, expired := diffing.JudgeIgnores(rules, now)
		for _, f := range expired {
			if !seen[f.Message] {
				seen[f.Message] = true
				f.PreExisting = true
				all = append(all, f)
			}
		}
		return active
	}
	if cfg != nil {
		c := *cfg
		c.Ignore = judge(cfg.Ignore)
		cfg = &c
	}
	out := slices.Clone(targets)
	for i := range out {
		out[i].Ignore = judge(out[i].Ignore)
	}
	return cfg, out, all
}

// dryRunTargets is how many targets a preview with a cluster in dry-run mode
// works on at once, at least: such a target mostly waits for the apiserver's
// answers, and one per CPU left the Reader's dry-run requests
// (live.dryRunInflight, 16) half used. On the bench's PR-wide (2 CPUs, 1,650
// dry-run applies) wall time fell 9% at 8, for 25 MiB more at the peak, and
// the apiserver's CPU stayed the same (about 4 s a run); 16 took 16% off for
// 40 MiB more.
const dryRunTargets = 8

// targetsInFlight is how many targets a preview works on at once: one per
// CPU, or dryRunTargets when a cluster is read in dry-run mode.
func targetsInFlight(req Request) int {
	n := max(1, runtime.GOMAXPROCS(0))
	for _, c := range append([]*Cluster{req.DefaultCluster}, mapPointers(req.Clusters)...) {
		if c != nil && c.Config != nil && c.LiveMode == diffing.LiveDryRun {
			return max(n, dryRunTargets)
		}
	}
	return n
}
