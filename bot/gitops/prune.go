package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// Inputs returns what a render of t reads in the checkouts (render.Inputs),
// at base and at head together, so that both sides' discoveries decide alike
// about a target both declare alike.
type Inputs func(t config.Target) render.Inputs

// Prune lets Discover leave out of its search the renders a pull request
// cannot change (issue 25): a target whose controller object both sides
// declare alike and none of whose inputs the pull request changes renders the
// same objects at base and at head, so rendering it on either side to look
// for nested controller objects finds the same ones on both, and nothing in
// them changes. flate (the Go successor of flux-local) works the same way: a
// changed file belongs to the Kustomizations whose sources read it, and the
// others are not built. Such a target stays a target (the preview lists it as
// not affected); only what its render would declare is not listed.
//
// A target counts as unchanged when its controller object's file is not
// among Changed, the target that rendered its object (config.Target.DeclaredBy)
// counts as unchanged too, its inputs could all be told (no Unknown) and none
// of them is among Changed, and no ApplicationSet generated it (a set's git
// generators read files its inputs do not name). What else shapes a target's
// object, the ConfigMaps, Secrets and sources that other renders declare
// (postBuild.substituteFrom, valuesFrom, sourceRef), is checked across the
// two sides afterwards (NeedsFullSearch).
type Prune struct {
	// Changed are the files the pull request changes, root-relative and
	// slash-separated as git diff prints them.
	Changed []string
}

// pruner is one discovery's state of Prune.
type pruner struct {
	prune   bool // Options.Prune is set
	changed []string
	inputs  Inputs
	// unchanged holds the TargetKey of every target judged so far, and
	// whether it counts as unchanged; the latest judgement wins (a file's
	// object is judged again once a render declares it).
	unchanged map[string]bool
	// pruned holds the TargetKey of the targets left unsearched.
	pruned map[string]bool
	// opaque says whether a render of t may declare controller objects
	// other than the files it reads as they are (discovery.opaque): such a
	// render is searched even when it is unchanged.
	opaque func(t config.Target, in render.Inputs) bool
}

// isUnchanged judges t (Prune), whose render reads in.
func (p *pruner) isUnchanged(t config.Target, in render.Inputs) bool {
	c := t.Controller
	switch {
	case p == nil, c == nil, c.Generator != "", c.Source == "", slices.Contains(p.changed, c.Source):
		return false
	case t.DeclaredBy != "" && !p.unchanged[t.DeclaredBy]:
		return false
	}
	if in.Unknown != "" {
		return false
	}
	_, touched := in.Touched(p.changed)
	return !touched
}

// plan splits a round's todo into the targets to render now, those left
// unsearched (pruned: Prune) and those postponed to a later round.
//
// A target declared by a file of the repository waits while another target
// of the same round that reads that file is rendered: that render declares
// the object as the controller sees it (a Flux Kustomization over a
// directory of ks.yaml files patches every Kustomization it applies, as
// kustomize-controller does, and its namespace is set there), and the target
// is then rendered once, from that object, not once from the bare file and
// once from the rendered copy. Without inputs nothing waits and nothing is
// pruned.
func (p *pruner) plan(todo []config.Target) (now, pruned, later []config.Target) {
	if p == nil || p.inputs == nil {
		return todo, nil, nil
	}
	ins := make([]render.Inputs, len(todo))
	for i, t := range todo {
		ins[i] = p.inputs(t)
	}
	unchanged := make([]bool, len(todo))
	if p.prune {
		for i, t := range todo {
			unchanged[i] = p.isUnchanged(t, ins[i])
			p.unchanged[TargetKey(t.Cluster, t.Name)] = unchanged[i]
		}
	}
	waits := make([]bool, len(todo))
	supplies := make([]bool, len(todo))
	for i, t := range todo {
		if !fileDeclared(t) || unchanged[i] {
			continue
		}
		for j, r := range todo {
			if j != i && r.Controller != nil && ins[j].Unknown == "" && reads(ins[j], t) {
				waits[i], supplies[j] = true, true
			}
		}
	}
	for i, t := range todo {
		switch {
		case waits[i] && !supplies[i]:
			later = append(later, t)
		case unchanged[i] && !supplies[i] && (p.opaque == nil || !p.opaque(t, ins[i])):
			pruned = append(pruned, t)
			p.pruned[TargetKey(t.Cluster, t.Name)] = true
		default:
			now = append(now, t)
		}
	}
	return now, pruned, later
}

// fileDeclared says whether t's controller object is a file of the
// repository (not a render's copy of one, nor made by an ApplicationSet).
func fileDeclared(t config.Target) bool {
	return t.Controller != nil && t.Controller.Source != "" && t.DeclaredBy == "" && t.Controller.Generator == ""
}

// reads says whether a render with inputs in reads the file of t's
// controller object.
func reads(in render.Inputs, t config.Target) bool {
	_, ok := in.Touched([]string{t.Controller.Source})
	return ok
}

// placeUnder gives the objects of repository files that the unsearched
// render of p reads the place p's render would give them, so that they are
// listed as the targets they are: the cluster p's objects go to, and the
// namespace the kustomizations on the way set (the outermost namespace field
// from p's path down to the file's directory, as kustomize's namespace
// transformer of each level overrides the inner ones), or p's own: a Flux
// Kustomization's targetNamespace overrides every namespace
// (kustomize-controller), an Argo CD destination namespace fills in those
// left empty. Their objects are otherwise taken as the files hold them (not
// patched by p): the pull request changes none of them, and none is
// rendered.
func (d *discovery) placeUnder(p config.Target, in render.Inputs) {
	if in.Unknown != "" || p.Controller == nil {
		return
	}
	flux := p.Controller.Kind == diffing.FluxKustomization.Kind
	for _, m := range d.manifests {
		if m.Parent != "" || (m.superseded && !m.placed) || m.File == p.Controller.Source {
			continue
		}
		// A file of a directory read whole (a plain directory source)
		// is one of its resources too.
		whole := render.Inputs{Dirs: in.Dirs}
		if _, inDir := whole.Touched([]string{m.File}); !inDir && !slices.Contains(in.Resources, m.File) {
			if _, read := in.Touched([]string{m.File}); read && perCluster(m, p) && !m.superseded {
				// A patch of an object p's render emits (an overlay's
				// values patch of a HelmRelease): that cluster's copy
				// takes its place, as a rendered copy does (addRendered).
				delete(d.seen, m.identity())
				m.superseded, m.placed = true, true
			}
			continue // not read, or read as a patch or a generator's file
		}
		ns := m.Namespace
		if k := d.kustomizeNamespace(p.Path, path.Dir(m.File)); k != "" {
			ns = k
		}
		if p.Namespace != "" && (flux || ns == "") {
			ns = p.Namespace
		}
		if perCluster(m, p) {
			// A file outside clusters/<name>/ that the targets of several
			// clusters apply: each cluster gets its own copy, as a render
			// makes them (addRendered).
			c := *m
			c.Cluster, c.Namespace, c.superseded, c.placed = p.Cluster, ns, false, false
			if id := c.identity(); !d.seen[id] {
				d.seen[id] = true
				d.manifests = append(d.manifests, &c)
			}
			if !m.superseded {
				delete(d.seen, m.identity())
				m.superseded, m.placed = true, true
			}
			continue
		}
		if m.superseded || ns == m.Namespace {
			continue
		}
		delete(d.seen, m.identity())
		m.Namespace = ns
		d.seen[m.identity()] = true
	}
}

// perCluster says whether m, a file outside any clusters/<name>/ directory,
// gets a copy of its own for the cluster of p, a target that reads it: Flux
// objects do (addRendered); Argo CD's are told apart by name alone.
func perCluster(m *manifest, p config.Target) bool {
	return m.Cluster == "" && p.Cluster != "" && m.group() != groupArgo
}

// openCheckout opens the checkout once per discovery (closed when Discover
// returns); nil when it cannot be opened.
func (d *discovery) openCheckout() *os.Root {
	if d.checkout == nil && !d.checkoutFailed {
		r, err := os.OpenRoot(d.root)
		d.checkout, d.checkoutFailed = r, err != nil
	}
	return d.checkout
}

// maxKustomizationBytes bounds a kustomization file kustomizeNamespace reads.
const maxKustomizationBytes = 1 << 20

// kustomizeNamespace is the namespace the kustomizations from top (a
// target's path) down to dir (a file's directory) set: the outermost
// namespace field among them, as each level's namespace transformer
// overrides the inner ones'. When dir is not below top (a resources: entry
// that leaves the target's directory) the way there is not followed: the
// kustomizations of dir and of its parents that have one count, then top's.
// "" when none sets one.
func (d *discovery) kustomizeNamespace(top, dir string) string {
	if d.namespaces == nil {
		d.namespaces = map[string]kustomizeNS{}
	}
	r := d.openCheckout()
	if r == nil {
		return ""
	}
	kustomizationNamespace := func(_ *os.Root, dir string) (string, bool) {
		k, ok := d.namespaces[dir]
		if !ok {
			k.ns, k.ok = kustomizationNamespace(r, dir)
			d.namespaces[dir] = k
		}
		return k.ns, k.ok
	}
	top = path.Clean(top)
	below := func(p string) bool { return top == "." || p == top || strings.HasPrefix(p, top+"/") }
	var chain []string // inner first
	for p := dir; p != top; p = path.Dir(p) {
		ns, ok := kustomizationNamespace(r, p)
		if !ok && !below(p) {
			break
		}
		chain = append(chain, ns)
		if p == "." {
			break
		}
	}
	ns, _ := kustomizationNamespace(r, top)
	chain = append(chain, ns)
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i] != "" {
			return chain[i]
		}
	}
	return ""
}

// kustomizeNS is one directory's kustomizationNamespace.
type kustomizeNS struct {
	ns string
	ok bool
}

// kustomizationNamespace reads the namespace field of dir's kustomization
// within the checkout (os.Root), reading no more of it than
// maxKustomizationBytes; ok is false when dir has none.
func kustomizationNamespace(r *os.Root, dir string) (ns string, ok bool) {
	for _, name := range render.KustomizationNames {
		f, err := r.Open(path.Join(dir, name))
		if err != nil {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, maxKustomizationBytes+1))
		f.Close()
		if err != nil || len(b) > maxKustomizationBytes {
			return "", true
		}
		var k struct {
			Namespace string `json:"namespace"`
		}
		_ = yaml.Unmarshal(b, &k)
		return k.Namespace, true
	}
	return "", false
}

// opaque says whether the render of t, reading in, may declare controller
// objects that the files it reads do not hold as they are, so that leaving
// it unsearched could hide a target (one that reads a file the pull request
// changes) or list one with other inputs than it has:
//   - a chart whose templates name Argo CD or Flux objects (an app-of-apps
//     chart), or an Argo CD Application of a remote chart (argocd-apps
//     makes Applications from values), or kustomize inflating a remote
//     chart;
//   - a file it reads whose controller object has a postBuild variable
//     (${...}): its name, path or source is the substitution's;
//   - when the files it reads declare controller objects: name prefixes or
//     suffixes, replacements, and patches of controller or source objects
//     that set what a target reads (path, sourceRef, components, chart,
//     chartRef, valuesFiles, Argo CD sources, or any JSON 6902 patch), in
//     t's options (a Flux Kustomization's spec) or in the kustomizations it
//     reads.
//
// A HelmRelease of a chart from a Helm repository or OCI registry is taken
// to declare no controller objects of its own.
func (d *discovery) opaque(t config.Target, in render.Inputs) bool {
	for _, c := range d.charts {
		if _, ok := in.Touched([]string{path.Join(c, "Chart.yaml")}); ok {
			return true
		}
	}
	if in.Remote && (t.Render.Renderer == render.RendererKustomize || (t.Controller != nil && t.Controller.Kind == diffing.ArgoCDApplication.Kind)) {
		return true
	}
	declares := false
	for file, opaque := range d.controllerFiles() {
		if _, ok := in.Touched([]string{file}); ok {
			if opaque {
				return true
			}
			declares = true
		}
	}
	if !declares {
		// What renames or patches its objects touches no controller.
		return false
	}
	k := t.Render.Kustomize
	if k.NamePrefix != "" || k.NameSuffix != "" {
		return true
	}
	for _, pt := range k.Patches {
		if patchSetsInputs(pt, "") {
			return true
		}
	}
	for _, f := range in.Files {
		if slices.Contains(render.KustomizationNames, path.Base(f)) && d.kustomizationRewrites(f) {
			return true
		}
	}
	return false
}

// controllerFiles maps every file of the repository that declares a
// controller object to whether one of them holds a postBuild variable and
// may read the checkout (readsCheckout); made again when discovery has found
// more objects.
func (d *discovery) controllerFiles() map[string]bool {
	if d.ctlFiles != nil && d.ctlFilesOf == len(d.manifests) {
		return d.ctlFiles
	}
	d.ctlFiles, d.ctlFilesOf = map[string]bool{}, len(d.manifests)
	for _, m := range d.manifests {
		if m.Parent != "" || !m.isController() {
			continue
		}
		d.ctlFiles[m.File] = d.ctlFiles[m.File] || (m.templated() || hasVariable(m.Obj)) && readsCheckout(m)
	}
	return d.ctlFiles
}

// readsCheckout says whether the object of a controller may read files of
// the checkout, whatever its postBuild variables stand for: a Kustomization
// or an Application does; a HelmRelease does unless its chart comes from an
// OCIRepository (chartRef) or a HelmRepository or OCIRepository
// (spec.chart.spec.sourceRef), of a kind no variable names. Such a
// HelmRelease with a name of variables (a component's ${APP}-anubis) is a
// target only its Kustomization's render makes, but it reads nothing a pull
// request changes but its own object and the objects it takes from.
func readsCheckout(m *manifest) bool {
	if !m.is(diffing.FluxHelmRelease) {
		return true
	}
	spec, _ := m.Obj["spec"].(map[string]any)
	kind := func(v any) string {
		o, _ := v.(map[string]any)
		k, _ := o["kind"].(string)
		return k
	}
	if ref, ok := spec["chartRef"]; ok {
		return kind(ref) != "OCIRepository"
	}
	chart, _ := spec["chart"].(map[string]any)
	cs, _ := chart["spec"].(map[string]any)
	k := kind(cs["sourceRef"])
	return k != "HelmRepository" && k != "OCIRepository"
}

// hasVariable says whether a controller object holds a Flux postBuild
// variable anywhere.
func hasVariable(obj map[string]any) bool {
	b, err := json.Marshal(obj)
	return err != nil || strings.Contains(string(b), "${")
}

// controllerKinds are the kinds whose patches may change what a target
// reads.
var controllerKinds = []string{"Kustomization", "HelmRelease", "Application", "ApplicationSet", "GitRepository", "OCIRepository", "HelmRepository", "HelmChart", "Bucket", "ExternalArtifact", "ArtifactGenerator"}

// inputKeys match the fields of controller and source objects that say what
// a target reads.
var inputKeys = regexp.MustCompile(`(?m)(^|[\s{,"'])(path|sourceRef|components|chart|chartRef|valuesFiles|valueFiles|repoURL|targetRevision|source|sources|url|ref|layerSelector)["']?\s*:`)

// patchSetsInputs says whether a patch (a Flux or kustomize patch entry as
// YAML, or a patch file's content with fileKind "file") may set what a
// controller target reads: it targets a controller or source kind, or names
// none and its text does, and it sets an input field (inputKeys); a JSON
// 6902 patch of such a kind always counts.
func patchSetsInputs(entry, fileKind string) bool {
	var pt struct {
		Patch  string `json:"patch"`
		Path   string `json:"path"`
		Target *struct {
			Kind string `json:"kind"`
		} `json:"target"`
	}
	text := entry
	kind := ""
	if fileKind == "" {
		if err := yaml.Unmarshal([]byte(entry), &pt); err != nil {
			return true
		}
		text = pt.Patch
		if pt.Target != nil {
			kind = pt.Target.Kind
		}
	}
	if kind != "" && !slices.Contains(controllerKinds, kind) {
		return false
	}
	if kind == "" && !slices.ContainsFunc(controllerKinds, func(k string) bool { return strings.Contains(text, "kind: "+k) || strings.Contains(text, `"kind":"`+k) }) {
		return false
	}
	if strings.Contains(text, "op:") || strings.Contains(text, `"op"`) {
		return true // JSON 6902
	}
	return inputKeys.MatchString(text)
}

// kustomizationRewrites says whether the kustomization file f renames what
// it builds (namePrefix, nameSuffix), rewrites it (replacements), or patches
// a controller or source object's inputs (patchSetsInputs, with patch files
// read within the checkout).
func (d *discovery) kustomizationRewrites(f string) bool {
	if v, ok := d.rewrites[f]; ok {
		return v
	}
	if d.rewrites == nil {
		d.rewrites = map[string]bool{}
	}
	v := d.readRewrites(f)
	d.rewrites[f] = v
	return v
}

// readRewrites is kustomizationRewrites without the memo.
func (d *discovery) readRewrites(f string) bool {
	r := d.openCheckout()
	if r == nil {
		return true
	}
	read := func(p string) ([]byte, bool) {
		fh, err := r.Open(p)
		if err != nil {
			return nil, false
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, maxKustomizationBytes+1))
		return b, err == nil && len(b) <= maxKustomizationBytes
	}
	b, ok := read(f)
	if !ok {
		return b != nil
	}
	var k map[string]any
	if yaml.Unmarshal(b, &k) != nil {
		return false // kustomize fails on it, at base and head alike
	}
	for _, key := range []string{"namePrefix", "nameSuffix", "replacements"} {
		if v, ok := k[key]; ok && v != nil && v != "" {
			return true
		}
	}
	dir := path.Dir(f)
	for _, key := range []string{"patches", "patchesStrategicMerge", "patchesJson6902"} {
		list, _ := k[key].([]any)
		for _, e := range list {
			switch e := e.(type) {
			case string: // a patchesStrategicMerge file or inline patch
				if c, ok := read(path.Join(dir, e)); ok {
					e = string(c)
				}
				if patchSetsInputs(e, "file") {
					return true
				}
			case map[string]any:
				if key == "patchesJson6902" {
					if t, _ := e["target"].(map[string]any); t == nil || slices.Contains(controllerKinds, fmt.Sprint(t["kind"])) {
						return true
					}
					continue
				}
				if p, _ := e["path"].(string); p != "" {
					if c, ok := read(path.Join(dir, p)); ok {
						e = maps.Clone(e)
						e["patch"] = string(c)
					}
				}
				y, err := yaml.Marshal(e)
				if err != nil || patchSetsInputs(string(y), "") {
					return true
				}
			}
		}
	}
	return false
}

// refKinds are the objects one render declares and another target's object
// takes from: the ConfigMaps and Secrets of postBuild.substituteFrom and
// valuesFrom, and Flux's sources.
func isRef(m *manifest) bool {
	switch m.group() {
	case groupFluxSrc, groupFluxGen:
		return true
	case "":
		return m.Kind == "ConfigMap" || m.Kind == "Secret"
	}
	return false
}

// refDigests hashes every object another target's object may take from
// (isRef), by identity.
func (d *discovery) refDigests() map[string]string {
	out := map[string]string{}
	for _, m := range d.manifests {
		if m.superseded || !isRef(m) {
			continue
		}
		b, err := m.json()
		if err != nil {
			out[m.identity()] = "unencodable"
			continue
		}
		s := sha256.Sum256(b)
		out[m.identity()] = hex.EncodeToString(s[:])
	}
	return out
}

// NeedsFullSearch says whether the two sides' pruned discoveries (Prune) may
// have left out something the pull request changes, so that both must be
// searched again in full: an object other targets take from (a ConfigMap, a
// Secret, a Flux source) differs between base and head, or the two sides
// left different targets unsearched.
func NeedsFullSearch(base, head *Result) bool {
	if len(base.Pruned) == 0 && len(head.Pruned) == 0 {
		return false
	}
	return !maps.Equal(base.Pruned, head.Pruned) || !maps.Equal(base.refs, head.refs)
}

// Kept is the Result as a Memo keeps it: without what only NeedsFullSearch
// reads.
func (r *Result) Kept() *Result {
	c := *r
	c.refs = nil
	return &c
}
