package discover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// Options configures Targets.
type Options struct {
	// Controllers configures discovery from GitOps controller objects
	// (gitops.Discover), run on the base and on the head checkout.
	Controllers gitops.Options
	// Changed are the paths the pull request changes, relative to the repository
	// root and slash-separated as git diff prints them; FromPaths uses them when
	// no controller object declares a target.
	Changed []string
	// Paths bounds FromPaths.
	Paths PathOptions
}

// Result is what Targets found.
type Result struct {
	// Targets are the targets to preview: the configured ones, or the discovered
	// ones (controller discovery's order: rendered targets, then the rest; path
	// discovery's sorted by name).
	Targets []config.Target
	// Notes are discovery's remarks about the repository as a whole, for the
	// report.
	Notes []string
	// AtBase holds the Key of every target the base declares.
	AtBase map[string]bool
	// New holds the Key of every discovered target whose controller object
	// only the head declares, where the base's discovery searched everything
	// that could have declared it: the merge creates it, so nothing it deploys
	// is deployed before (the base side of its diff is empty).
	New map[string]bool
}

// Targets returns the configured targets, or discovers them: first from GitOps
// controller objects (Argo CD, Flux) at base and head (FromControllers), else from
// the directories the PR touches (FromPaths at base and head, merged by name).
func Targets(ctx context.Context, cfg *config.Config, baseDir, headDir string, opts Options) (*Result, error) {
	atBase := map[string]bool{}
	if !cfg.Discovered {
		// The config is read from the base: every target it names is the base's.
		for _, t := range cfg.Targets {
			atBase[Key(t)] = true
		}
		return &Result{Targets: cfg.Targets, AtBase: atBase}, nil
	}
	res, err := FromControllers(ctx, baseDir, headDir, opts.Controllers)
	if err != nil {
		return nil, err
	}
	if len(res.Targets) > 0 {
		return res, nil
	}
	var targets []config.Target
	seen := map[string]bool{}
	for _, dir := range []string{baseDir, headDir} {
		found, err := FromPaths(dir, opts.Changed, opts.Paths)
		if err != nil {
			return nil, fmt.Errorf("discovering targets: %w", err)
		}
		for _, t := range found {
			k := Key(t)
			if dir == baseDir {
				atBase[k] = true
			}
			if !seen[k] {
				seen[k] = true
				targets = append(targets, t)
			}
		}
	}
	slices.SortFunc(targets, byName)
	return &Result{Targets: targets, AtBase: atBase}, nil
}

// FromControllers discovers the targets that GitOps controller objects (Argo CD
// Applications, Flux Kustomizations and HelmReleases) declare at base and at head,
// and weaves them into one list. Base goes first: when both sides declare a target,
// the base (trusted) wins, and the head side is still rendered as the head declares
// it (config.HeadSide). A controller object the base declares and the head does not
// is marked deleted. The notes are the head's.
func FromControllers(ctx context.Context, baseDir, headDir string, opts gitops.Options) (*Result, error) {
	baseKeys := map[string]bool{}
	var targets []config.Target
	var notes []string
	seen := map[string]bool{}
	at := map[string]int{}
	atBase, atHead, err := discoverSides(ctx, baseDir, headDir, opts)
	if err != nil {
		return nil, err
	}
	notes = append(notes, atHead.Notes...)
	if n := len(atBase.Pruned); n > 0 {
		notes = append(notes, fmt.Sprintf("%s the pull request does not change %s not rendered to look for nested Argo CD or Flux objects (they declare the same ones at base and head)", count(n, "target"), pick(n, "was", "were")))
	}
	for _, dir := range []string{baseDir, headDir} {
		res := atBase
		if dir == headDir {
			res = atHead
		}
		for _, t := range append(res.Targets, res.NotRendered...) {
			// Targets of different clusters may share a name (Kustomization
			// apps of clusters/staging and of clusters/production).
			k := Key(t)
			if dir == baseDir {
				baseKeys[k] = true
			}
			if !seen[k] {
				seen[k] = true
				at[k] = len(targets)
				targets = append(targets, t)
				continue
			}
			if b := &targets[at[k]]; dir == headDir && reflect.DeepEqual(*b, t) {
				b.SameAtHead = true
			}
			if b := &targets[at[k]]; dir == headDir && b.Controller != nil && t.Controller != nil && t.Controller.Argo != nil {
				// Argo CD syncs with the options the head declares once the
				// merge reaches the Application (a PR that turns on
				// ServerSideApply or Replace changes how this sync applies).
				c := *b.Controller
				c.Argo = t.Controller.Argo
				b.Controller = &c
			}
			if b := &targets[at[k]]; dir == headDir && b.Skip == "" && t.Skip == "" &&
				(b.Path != t.Path || !reflect.DeepEqual(b.Render, t.Render) || !maps.Equal(b.Substitute, t.Substitute)) {
				b.HeadSide = &config.HeadSide{Path: t.Path, Render: t.Render, Substitute: t.Substitute}
			}
		}
	}
	if len(targets) == 0 {
		return &Result{AtBase: baseKeys}, nil
	}
	markDeleted(targets, atBase, atHead)
	isNew := map[string]bool{}
	for _, t := range targets {
		if k := Key(t); t.Controller != nil && !baseKeys[k] && !hidden(t, atHead, atBase) {
			isNew[k] = true
		}
	}
	setNotes := setChanges(atBase, atHead)
	for _, k := range slices.Sorted(maps.Keys(setNotes)) {
		notes = append(notes, setNotes[k])
	}
	for i, t := range targets {
		// Each Application of a set the PR changes says so, so that the comment
		// shows how many Applications one change touches.
		if c := t.Controller; c != nil && c.Generator != "" {
			if n, ok := setNotes[gitops.SetKey(c.Namespace, c.Generator)]; ok {
				targets[i].Notes = append(slices.Clone(t.Notes), n)
			}
		}
	}
	return &Result{Targets: targets, Notes: notes, AtBase: baseKeys, New: isNew}, nil
}

// setChanges says, per ApplicationSet, what the PR changes about the Applications
// it generates: which it creates and deletes (a new cluster, a removed values
// file, a selector change) and how many of them a template change touches.
func setChanges(base, head *gitops.Result) map[string]string {
	if base == nil || head == nil {
		return nil
	}
	notes := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(base.Sets)) {
		b := base.Sets[k]
		h, ok := head.Sets[k]
		if !ok {
			if len(b.Apps) > 0 {
				notes[k] = fmt.Sprintf("ApplicationSet %s is deleted by this PR: its %s go with it (their ownerReferences), unless its applicationsSync policy keeps them.", k, count(len(b.Apps), "generated Application"))
			}
			continue
		}
		if !b.Complete || !h.Complete {
			continue
		}
		created, deleted, changed, total := gitops.GeneratedTouches(b, h)
		var parts []string
		if created > 0 {
			parts = append(parts, fmt.Sprintf("generates %s it did not (%s)", count(created, "new Application"), strings.Join(appNames(h, b), ", ")))
		}
		if deleted > 0 {
			verb := "no longer generates %s (%s), which its controller deletes"
			if !b.AllowsDelete() {
				verb = "no longer generates %s (%s), which its applicationsSync policy " + b.Policy + " keeps"
			}
			parts = append(parts, fmt.Sprintf(verb, count(deleted, "Application"), strings.Join(appNames(b, h), ", ")))
		}
		switch {
		case changed > 0 && changed == total-created:
			parts = append(parts, fmt.Sprintf("changes every one of its %s", count(total-created, "existing Application")))
		case changed > 0:
			parts = append(parts, fmt.Sprintf("changes %d of its %s", changed, count(total-created, "existing Application")))
		}
		if len(parts) > 0 {
			notes[k] = fmt.Sprintf("ApplicationSet %s: this PR %s.", k, strings.Join(parts, "; "))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(head.Sets)) {
		if _, ok := base.Sets[k]; !ok && len(head.Sets[k].Apps) > 0 {
			notes[k] = fmt.Sprintf("ApplicationSet %s is new in this PR: it generates %s.", k, count(len(head.Sets[k].Apps), "Application"))
		}
	}
	return notes
}

// appNames lists the Applications a generates and b does not.
func appNames(a, b gitops.SetInfo) []string {
	var out []string
	for n := range a.Apps {
		if _, ok := b.Apps[n]; !ok {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Key tells targets apart: targets of different clusters may share a name.
func Key(t config.Target) string { return gitops.TargetKey(t.Cluster, t.Name) }

func byName(a, b config.Target) int { return strings.Compare(a.Name, b.Name) }

// markDeleted marks the discovered targets whose controller object (Application,
// Kustomization, HelmRelease) base declares and head does not: the PR deletes it,
// and with it, when the deletion cascades, everything it deployed, whether or not
// its source can be rendered (the cascade is the controller object's). Where
// head's discovery could not search everywhere (a target that does not render),
// only the objects that target may declare are not marked: those base found
// through it (hidden).
func markDeleted(targets []config.Target, base, head *gitops.Result) {
	if head == nil {
		return
	}
	// An Application generated by an ApplicationSet is deleted when the set no
	// longer generates it, and only when the set's applicationsSync policy lets
	// the ApplicationSet controller delete (ApplicationsSyncPolicy.AllowDelete,
	// applicationset_controller.go deleteInCluster). Nothing is known when a
	// generator of the set could not be expanded at head.
	incompleteSet := func(c *diffing.Controller) bool {
		s, ok := head.Sets[gitops.SetKey(c.Namespace, c.Generator)]
		return ok && !s.Complete
	}
	declared := map[string]bool{}
	for _, t := range append(slices.Clone(head.Targets), head.NotRendered...) {
		if t.Controller != nil {
			declared[controllerID(t)] = true
		}
	}
	for i, t := range targets {
		c := t.Controller
		if c == nil || declared[controllerID(t)] || hidden(t, base, head) {
			continue
		}
		if c.Generator != "" && incompleteSet(c) {
			continue
		}
		if c.Generator != "" && c.GeneratorKeeps {
			targets[i].Notes = append(slices.Clone(t.Notes), fmt.Sprintf("ApplicationSet %s no longer generates this Application, but its applicationsSync policy does not let the ApplicationSet controller delete it: it stays and keeps deploying this target.", c.Generator))
			continue
		}
		switch c.Kind {
		case "Application", "Kustomization", "HelmRelease":
			cc := *c
			cc.Deleted = true
			targets[i].Controller = &cc
		}
	}
}

// hidden says whether other's discovery may have missed t's controller object:
// other could not render a target (Result.Unsearched) that declares t at t's own
// side (side), directly or through the targets that declare that one. An
// object declared by a file of the repository, or by targets other could
// search, is known to other either way.
func hidden(t config.Target, side, other *gitops.Result) bool {
	if other == nil || !other.Incomplete {
		return false
	}
	if side == nil {
		return true
	}
	parent := map[string]string{}
	for _, s := range slices.Concat(side.Targets, side.NotRendered) {
		parent[Key(s)] = s.DeclaredBy
	}
	seen := map[string]bool{}
	for k := t.DeclaredBy; k != "" && !seen[k]; k = parent[k] {
		if other.Unsearched[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// controllerID names a controller object across base and head: an Application by
// its own name (a new destination is not a deletion), a Flux object also by the
// cluster whose directory applies it.
func controllerID(t config.Target) string {
	c := t.Controller
	id := c.Kind + "/" + c.Namespace + "/" + c.Name
	if c.Kind != "Application" {
		id += "@" + t.Cluster
	}
	return id
}

// discoverSides runs gitops.Discover on both checkouts. With opts.Prune, a
// side whose Result a previous run kept (opts.Memo) is taken whole only when
// the other's is too: a pruned side beside a whole one would read as targets
// the merge deletes. When the pruned search may have missed what the pull
// request changes (gitops.NeedsFullSearch, or a changed file no target reads
// that a render could read: mayBeRead), both sides are searched again in
// full.
func discoverSides(ctx context.Context, baseDir, headDir string, opts gitops.Options) (base, head *gitops.Result, err error) {
	if opts.Parsed == nil {
		opts.Parsed = &gitops.Parsed{}
	}
	both := func(opts gitops.Options) (base, head *gitops.Result, err error) {
		// The two checkouts are searched at the same time; their renders
		// are shared by content (a target alike at both renders once).
		var herr error
		var wg sync.WaitGroup
		wg.Go(func() { head, herr = gitops.Discover(ctx, headDir, opts) })
		base, err = gitops.Discover(ctx, baseDir, opts)
		wg.Wait()
		if err = cmp.Or(err, herr); err != nil {
			return nil, nil, fmt.Errorf("discovering GitOps targets: %w", err)
		}
		return base, head, nil
	}
	if opts.Prune == nil || opts.Inputs == nil {
		return both(opts)
	}
	pairs, _ := opts.Memo.(gitops.PairMemo)
	if m := opts.Memo; m != nil {
		b, okb := m.Get(baseDir)
		h, okh := m.Get(headDir)
		if okb && okh {
			return b, h, nil
		}
		if pairs != nil {
			// The same pull request searched before (a re-run, a warm
			// cache): its pruned Results hold for this pair of trees.
			if b, h, ok := pairs.GetPair(baseDir, headDir); ok {
				return b, h, nil
			}
		}
		opts.Memo = putOnly{m}
	}
	shared := false
	if inert(opts.Prune.Changed, baseDir, headDir) {
		// Only files no search reads changed (a README, a picture): when
		// the base's search renders nothing, the head's would find what
		// it finds, so the head is not searched (sharedSearch).
		if base, shared, err = sharedSearch(ctx, baseDir, headDir, opts); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case shared:
		head = base
	case base != nil: // the base was searched alone: the head is searched now
		if head, err = gitops.Discover(ctx, headDir, opts); err != nil {
			return nil, nil, fmt.Errorf("discovering GitOps targets: %w", err)
		}
	default:
		if base, head, err = both(opts); err != nil {
			return nil, nil, err
		}
	}
	if !shared {
		if len(base.Pruned)+len(head.Pruned) == 0 {
			return base, head, nil
		}
		if gitops.NeedsFullSearch(base, head) || unread(opts.Prune.Changed, opts.Inputs, baseDir, headDir, base, head) != "" {
			opts.Prune = nil
			return both(opts)
		}
	}
	if pairs != nil && !base.Incomplete && !head.Incomplete && len(base.Sets)+len(head.Sets) == 0 {
		// One Result for both sides (shared) is given as one, which
		// PutPair encodes once.
		bk := base.Kept()
		hk := bk
		if head != base {
			hk = head.Kept()
		}
		pairs.PutPair(baseDir, headDir, bk, hk)
	}
	return base, head, nil
}

// sharedSearch searches the base alone, for a pull request whose changed
// files are all inert (no search reads them). ok says that its Result is
// the head's too: the base's pruned search asked for no render, listed no
// ApplicationSet (a git generator lists files and directories of any name)
// and no Flux ArtifactGenerator (its copy rules name files of any name), is
// complete, and no changed file is one a render left out could read
// (unread). The head's search would then read the same YAML files, decide
// each prune alike (the inputs and changes are those of both sides), and
// probe the same directories (inert keeps every directory as it is), so
// it would list the same. Otherwise the head is still to be searched.
func sharedSearch(ctx context.Context, baseDir, headDir string, opts gitops.Options) (base *gitops.Result, ok bool, err error) {
	var renders atomic.Int64
	renderer := opts.Renderer
	if renderer == nil {
		return nil, false, nil
	}
	opts.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		renders.Add(1)
		return renderer(ctx, root, t)
	}
	base, err = gitops.Discover(ctx, baseDir, opts)
	if err != nil {
		return nil, false, fmt.Errorf("discovering GitOps targets: %w", err)
	}
	ok = renders.Load() == 0 && !base.Incomplete && len(base.Sets) == 0 && !base.ArtifactGenerators &&
		unread(opts.Prune.Changed, opts.Inputs, baseDir, headDir, base) == ""
	return base, ok, nil
}

// inertExts are the extensions of files no discovery reads by content: no
// YAML or JSON scan, no render without a file naming them (mayBeRead).
var inertExts = []string{".md", ".markdown", ".rst", ".adoc", ".txt", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico"}

// DocsOnly says whether every changed file is documentation or a picture
// by its name (inertExts), and one at least is: a pull request of those
// renders nothing unless a manifest names one of them (inert says more, from
// the checkouts). A preview reads it before the checkouts are made, to start
// a render process ahead only when one is likely needed.
func DocsOnly(changed []string) bool {
	if len(changed) == 0 {
		return false
	}
	for _, c := range changed {
		if !slices.Contains(inertExts, strings.ToLower(path.Ext(c))) {
			return false
		}
	}
	return true
}

// inert says whether every changed file is one discovery does not read
// unless a manifest names it, and whose change leaves the checkouts'
// directories as they are: a documentation file or a picture (inertExts)
// outside any Helm chart (mayBeRead), a regular file or absent on each
// side, in a directory both sides have. A file that creates or removes a
// directory could make a controller's path exist, and a symlink could
// point anywhere.
func inert(changed []string, baseDir, headDir string) bool {
	if !DocsOnly(changed) {
		return false
	}
	for _, c := range changed {
		if mayBeRead(c, baseDir, headDir) {
			return false
		}
		for _, root := range []string{baseDir, headDir} {
			if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(path.Dir(c)))); err != nil || !st.IsDir() {
				return false
			}
			st, err := os.Lstat(filepath.Join(root, filepath.FromSlash(c)))
			if (err == nil && !st.Mode().IsRegular()) || (err != nil && !errors.Is(err, fs.ErrNotExist)) {
				return false
			}
		}
	}
	return true
}

// putOnly is a memo that keeps Results but gives none back.
type putOnly struct{ gitops.Memo }

func (putOnly) Get(string) (*gitops.Result, bool) { return nil, false }

// pick is one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
