package preview

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render"
)

// markRenamed finds the Applications the PR renames: for each Application it
// deletes (markDeleted), an Application that only the head declares, with the
// same source path and rendering (apart from the Helm release name, which
// defaults to the Application's name) and the same destination cluster and
// namespace. It sets Controller.RenamedTo and returns the new target of each
// renamed one, by discover.Key. A deleted Application that several new ones could
// replace is not taken for a rename.
func markRenamed(targets []config.Target, atBase map[string]bool) map[string]config.Target {
	out := map[string]config.Target{}
	for i, t := range targets {
		c := t.Controller
		if c == nil || !c.Deleted || c.Kind != "Application" || t.Skip != "" {
			continue
		}
		var to []config.Target
		for _, n := range targets {
			if n.Controller == nil || n.Controller.Kind != "Application" || n.Controller.Deleted || n.Skip != "" ||
				atBase[discover.Key(n)] || !sameSource(t, n) {
				continue
			}
			to = append(to, n)
		}
		if len(to) != 1 {
			continue
		}
		cc := *c
		cc.RenamedTo = to[0].Controller.Namespace + "/" + to[0].Controller.Name
		targets[i].Controller = &cc
		out[discover.Key(t)] = to[0]
	}
	return out
}

// sameSource says whether two Application targets deploy the same thing to the
// same place.
func sameSource(a, b config.Target) bool {
	if a.Path != b.Path || a.Cluster != b.Cluster || a.Namespace != b.Namespace || !maps.Equal(a.Substitute, b.Substitute) {
		return false
	}
	ra, rb := a.Render, b.Render
	ra.Helm.ReleaseName, rb.Helm.ReleaseName = "", ""
	return reflect.DeepEqual(ra, rb)
}

// adoptedBy splits the base objects of a renamed Application without the
// resources finalizer: those the new Application deploys too (same kind and
// name; namespace equal or defaulted) stay on the cluster and are adopted by it,
// the rest are left behind by the non-cascading delete.
func adoptedBy(base, next render.ObjectSet) (kept render.ObjectSet, adopted []render.ObjectKey) {
	kept = base
	kept.Objects = nil
	for _, o := range base.Objects {
		if slices.ContainsFunc(next.Objects, func(n render.Object) bool { return sameObject(o.Key, n.Key) }) {
			adopted = append(adopted, o.Key)
			continue
		}
		kept.Objects = append(kept.Objects, o)
	}
	return kept, adopted
}

// sameObject compares keys of two renders of one destination: a namespace left
// empty by one render is the destination's in both.
func sameObject(a, b render.ObjectKey) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Name == b.Name &&
		(a.Namespace == b.Namespace || a.Namespace == "" || b.Namespace == "")
}

// removal says what deleting the target's controller object does to what it
// deployed, following each controller's documented delete behaviour: Argo CD
// deletes an Application's resources only with its resources finalizer (a
// non-cascading delete otherwise); kustomize-controller garbage-collects a deleted
// Kustomization's inventory only when prune is on; helm-controller uninstalls a
// deleted HelmRelease's release. cascade is whether the objects are deleted.
func removal(c *diffing.Controller) (text string, cascade bool) {
	name := fmt.Sprintf("%s %s is deleted by this PR", c.Kind, mdtext.Code(c.Namespace+"/"+c.Name))
	if c.Generator != "" {
		name = fmt.Sprintf("ApplicationSet %s no longer generates Application %s, so its controller deletes it", c.Generator, mdtext.Code(c.Namespace+"/"+c.Name))
	}
	switch c.Kind {
	case "Application":
		if c.RenamedTo != "" {
			name = fmt.Sprintf("%s %s is renamed to %s by this PR (same source and destination)", c.Kind, mdtext.Code(c.Namespace+"/"+c.Name), mdtext.Code(c.RenamedTo))
			if c.Finalizer {
				// argoproj/applicationset#254: with the finalizer, a rename
				// deletes everything and the new Application creates it again.
				return name + ", and the old name's resources finalizer deletes what it deployed before `" + c.RenamedTo +
					"` creates it again: a delete and a create, not a move (remove the finalizer from the old Application first to let the new one adopt its objects)", true
			}
			return name + " without Argo CD's resources finalizer, which leaves what it deployed in place", false
		}
		if c.Finalizer {
			return name + ", and Argo CD's resources finalizer deletes what it deployed", true
		}
		return name + " without Argo CD's resources finalizer, which leaves what it deployed in place", false
	case "Kustomization":
		if c.Prune {
			return name + ", and kustomize-controller garbage-collects what it applied (prune is on)", true
		}
		return name + " with prune off, which leaves what it applied in place", false
	}
	return name + ", and helm-controller uninstalls the release", true
}

// createdByMerge turns a controller-missing finding into a note when another
// target of the same merge creates that controller object: an app-of-apps that
// adds (or renames) an Application, a Flux Kustomization that applies a new one.
// The object is missing live only until the merge, which then deploys the target.
func createdByMerge(rep *diffing.Report) {
	created := map[render.ObjectKey]string{}
	for _, tr := range rep.Targets {
		for _, c := range tr.Changes {
			if c.Action == diffing.ActionCreated && diffing.IsLiveController(c.Key.GroupKind()) {
				if _, ok := created[c.Key]; !ok {
					created[c.Key] = tr.Name
				}
			}
		}
	}
	if len(created) == 0 {
		return
	}
	for i := range rep.Targets {
		tr := &rep.Targets[i]
		tr.Findings = slices.DeleteFunc(tr.Findings, func(f diffing.Finding) bool {
			by, ok := created[f.Key]
			if f.Rule != diffing.RuleControllerMissing || !ok {
				return false
			}
			tr.Notes = append(tr.Notes, fmt.Sprintf("%s %s does not exist on the cluster yet: this merge creates it (target %s), and it then deploys this target.",
				f.Key.Kind, mdtext.Code(keyName(f.Key)), by))
			return true
		})
	}
}

// renamesAdopt replaces the prune and rename findings on an Application that the
// PR renames without Argo CD's resources finalizer with a note: the app of apps
// deletes the old Application object and creates the new one, but deleting an
// Application without the finalizer deletes nothing it deployed (Argo CD's
// non-cascading delete), and the new one adopts those objects, so nothing that
// runs is deleted and nothing refers to an Application by name.
func renamesAdopt(rep *diffing.Report, targets []config.Target) {
	adopt := map[render.ObjectKey]string{}
	for _, t := range targets {
		if c := t.Controller; c != nil && c.Deleted && c.RenamedTo != "" && !c.Finalizer {
			if key, ok := c.LiveKey(); ok {
				adopt[key] = c.RenamedTo
			}
		}
	}
	if len(adopt) == 0 {
		return
	}
	for i := range rep.Targets {
		tr := &rep.Targets[i]
		noted := map[render.ObjectKey]bool{}
		tr.Findings = slices.DeleteFunc(tr.Findings, func(f diffing.Finding) bool {
			to, ok := adopt[f.Key]
			if !ok || (f.Rule != diffing.RulePrune && f.Rule != diffing.RuleRename) {
				return false
			}
			if !noted[f.Key] {
				noted[f.Key] = true
				tr.Notes = append(tr.Notes, fmt.Sprintf("Application %s is renamed to %s (same source and destination): it has no resources finalizer, so deleting it leaves what it deployed running, and %s adopts it. Nothing it deployed is deleted.",
					mdtext.Code(keyName(f.Key)), mdtext.Code(to), mdtext.Code(to)))
			}
			return true
		})
	}
}

func keyName(k render.ObjectKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// generatedCascade is the prune-cascade finding of an Application that its
// ApplicationSet stops generating: the ApplicationSet controller deletes it
// (applicationset_controller.go deleteInCluster), and with Argo CD's resources
// finalizer, which the set adds unless syncPolicy.preserveResourcesOnDeletion is
// set (utils.RenderTemplateParams), the deletion cascades to what it deployed.
func generatedCascade(t config.Target, tr diffing.TargetReport) (diffing.Finding, bool) {
	c := t.Controller
	if c == nil || !c.Deleted || c.Generator == "" || !c.Finalizer {
		return diffing.Finding{}, false
	}
	n := 0
	for _, ch := range tr.Changes {
		if ch.Action == diffing.ActionDeleted && (ch.LiveAction == "" || ch.LiveAction == diffing.ActionDeleted) {
			n++
		}
	}
	msg := fmt.Sprintf("ApplicationSet %s no longer generates this Application, so the ApplicationSet controller deletes it, and Argo CD's resources finalizer deletes everything it deploys", c.Generator)
	if n > 0 {
		msg += fmt.Sprintf(": %d %s", n, plural("object", n))
	}
	return diffing.Finding{
		Rule: diffing.RulePruneCascade, Severity: diffing.DefaultSeverity[diffing.RulePruneCascade],
		Key:     render.ObjectKey{Group: diffing.GroupArgoCD, Kind: diffing.ArgoCDApplication.Kind, Namespace: c.Namespace, Name: c.Name},
		Message: msg + ".",
	}, true
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
