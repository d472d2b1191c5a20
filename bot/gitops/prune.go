package gitops

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	"github.com/driftpreview/driftpreview/bot/config"
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
}

// isUnchanged judges t (Prune).
func (p *pruner) isUnchanged(t config.Target) bool {
	c := t.Controller
	switch {
	case p == nil, c == nil, c.Generator != "", c.Source == "", slices.Contains(p.changed, c.Source):
		return false
	case t.DeclaredBy != "" && !p.unchanged[t.DeclaredBy]:
		return false
	}
	in := p.inputs(t)
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
	unchanged := make([]bool, len(todo))
	if p.prune {
		for i, t := range todo {
			unchanged[i] = p.isUnchanged(t)
			p.unchanged[TargetKey(t.Cluster, t.Name)] = unchanged[i]
		}
	}
	ins := make([]render.Inputs, len(todo))
	for i, t := range todo {
		ins[i] = p.inputs(t)
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
		case unchanged[i] && !supplies[i]:
			pruned = append(pruned, t)
			p.pruned[TargetKey(t.Cluster, t.Name)] = true
		default:
			now = append(now, t)
		}
	}
	return now, pruned, later
}

// fileDeclared says whether t's controller object is a file of the
// repository (not a render's copy of one).
func fileDeclared(t config.Target) bool {
	return t.Controller != nil && t.Controller.Source != "" && t.DeclaredBy == ""
}

// reads says whether a render with inputs in reads the file of t's
// controller object.
func reads(in render.Inputs, t config.Target) bool {
	_, ok := in.Touched([]string{t.Controller.Source})
	return ok
}

// unlisted returns, of targets, those whose object a file declares that a
// target left unsearched reads: that render would declare the object as the
// controller sees it (namespace, patches), and neither side rendered it, so
// the bare file is not listed as a target of its own. The pull request
// changes none of them: a target it changes makes the render that reads its
// file run (plan). pruned are the targets left unsearched.
func (p *pruner) unlisted(targets, pruned []config.Target) map[string]bool {
	ins := make([]render.Inputs, len(pruned))
	for i, r := range pruned {
		ins[i] = p.inputs(r)
	}
	out := map[string]bool{}
	for _, t := range targets {
		if !fileDeclared(t) {
			continue
		}
		for i, r := range pruned {
			if TargetKey(r.Cluster, r.Name) != TargetKey(t.Cluster, t.Name) && ins[i].Unknown == "" && reads(ins[i], t) {
				out[TargetKey(t.Cluster, t.Name)] = true
				break
			}
		}
	}
	return out
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
		b, err := json.Marshal(m.Obj)
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
