package preview

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render"
)

// sharedResources adds a shared-resource finding to each target whose head
// deploys an object that another GitOps controller object deploys too: another
// target of this PR that renders the same object for the same cluster, or the
// live owner the object's tracking marks name (diffing/live foreignOwner) when
// that owner is not a target of this PR that still renders it. Two controllers
// then apply it in turn, each overwriting the other's version, and each deletes
// it when it leaves its git. Argo CD notices (controller/state.go: a
// SharedResourceWarning condition when the tracking id names another
// Application) and, with FailOnSharedResource=true, fails the sync
// (controller/sync.go), which makes the finding an error. An object that moves
// from one target to another in this PR, or whose old owner the PR deletes or
// renames, is no shared resource.
//
// targets are the targets of rep.Targets, in the same order: the cluster a
// target declares decides whether two render the same object (a preview may
// compare targets of several clusters with one).
func sharedResources(rep *diffing.Report, targets []config.Target) {
	type deployer struct {
		target int
		owner  render.ObjectKey
	}
	type where struct {
		cluster string
		key     render.ObjectKey
	}
	byObject := map[where][]deployer{}
	renders := map[render.ObjectKey]map[where]bool{} // controller object → what its head renders
	for i, tr := range rep.Targets {
		owner, ok := ownerOf(tr)
		if !ok {
			continue
		}
		for _, c := range tr.Changes {
			if c.Action == diffing.ActionDeleted {
				continue
			}
			w := where{targets[i].Cluster, c.Key}
			byObject[w] = append(byObject[w], deployer{i, owner})
			if renders[owner] == nil {
				renders[owner] = map[where]bool{}
			}
			renders[owner][w] = true
		}
	}
	created := func(tr diffing.TargetReport, k render.ObjectKey) bool {
		i := slices.IndexFunc(tr.Changes, func(c diffing.Change) bool { return c.Key == k })
		return i >= 0 && tr.Changes[i].Action == diffing.ActionCreated
	}
	for _, w := range slices.SortedFunc(maps.Keys(byObject), func(a, b where) int {
		if c := strings.Compare(a.cluster, b.cluster); c != 0 {
			return c
		}
		return a.key.Compare(b.key)
	}) {
		ds := byObject[w]
		for _, d := range ds {
			var others []string
			preExisting := !created(rep.Targets[d.target], w.key)
			for _, o := range ds {
				if o.owner == d.owner {
					continue
				}
				others = append(others, fmt.Sprintf("%s (target %s)", ownerName(o.owner), rep.Targets[o.target].Name))
				preExisting = preExisting && !created(rep.Targets[o.target], w.key)
			}
			if len(others) == 0 {
				continue
			}
			slices.Sort(others)
			others = slices.Compact(others)
			addShared(&rep.Targets[d.target], w.key, fmt.Sprintf("Also rendered by %s in this PR", strings.Join(others, " and ")), preExisting)
		}
	}
	for i := range rep.Targets {
		tr := &rep.Targets[i]
		own, ok := ownerOf(*tr)
		if !ok {
			continue
		}
		for _, k := range slices.SortedFunc(maps.Keys(tr.LiveOwners), render.ObjectKey.Compare) {
			other := tr.LiveOwners[k]
			if other == own || renders[other] != nil {
				// Its owner is a target of this PR: shared above if it still
				// renders the object, else the object moves to this target.
				continue
			}
			if slices.ContainsFunc(rep.Targets, func(o diffing.TargetReport) bool {
				c := o.Controller
				return c != nil && c.Deleted && controllerKey(c) == other
			}) {
				continue // the PR deletes or renames its owner
			}
			addShared(tr, k, fmt.Sprintf("Live, it is tracked by %s, which this PR does not change", ownerName(other)), !created(*tr, k))
		}
	}
}

// addShared adds one shared-resource finding to tr for key k; by says who else
// deploys it. An Argo CD Application with FailOnSharedResource=true fails its
// sync instead: an error.
func addShared(tr *diffing.TargetReport, k render.ObjectKey, by string, preExisting bool) {
	if slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool { return f.Rule == diffing.RuleSharedResource && f.Key == k }) {
		return
	}
	f := diffing.Finding{Rule: diffing.RuleSharedResource, Severity: diffing.DefaultSeverity[diffing.RuleSharedResource], Key: k, PreExisting: preExisting,
		Message: by + ": the two controllers apply it in turn, each overwriting the other's version, and either deletes it when it leaves its git."}
	if c := tr.Controller; c != nil && c.Argo != nil {
		if from, ok := c.Argo.Has("FailOnSharedResource=true"); ok {
			f.Severity = diffing.SeverityError
			f.Message = by + fmt.Sprintf(": with %s the sync of Application %s fails while another Application's tracking id is on it (Argo CD's SharedResourceWarning), so nothing of this target is applied.",
				from, mdtext.Code(c.Namespace+"/"+c.Name))
		}
	}
	tr.Findings = append(tr.Findings, f)
	diffing.SortFindings(tr.Findings)
}

// ownerOf is the controller object that deploys a rendered target; ok is false
// for a target without one, one the PR deletes, and one not rendered.
func ownerOf(tr diffing.TargetReport) (render.ObjectKey, bool) {
	c := tr.Controller
	if c == nil || c.Deleted || tr.Skipped != "" || tr.NotAffected != "" {
		return render.ObjectKey{}, false
	}
	k := controllerKey(c)
	return k, k != (render.ObjectKey{})
}

// controllerKey is the key of the controller object c, with its kind's default
// namespace when c names none; zero for kinds that deploy nothing themselves.
func controllerKey(c *diffing.Controller) render.ObjectKey {
	k, ok := c.LiveKey()
	if !ok {
		return render.ObjectKey{}
	}
	if k.Namespace == "" {
		kind, _ := diffing.ControllerKindOf(c.Kind)
		k.Namespace = kind.DefaultNamespace
	}
	return k
}

// ownerName is "Argo CD Application `argocd/web`".
func ownerName(k render.ObjectKey) string {
	name := k.Kind
	if kind, ok := diffing.ControllerKindOf(k.Kind); ok {
		name = kind.DisplayName
	}
	return name + " " + mdtext.Code(k.Namespace+"/"+k.Name)
}
