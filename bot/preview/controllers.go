package preview

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
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
// deployed, following each controller's delete code: Argo CD deletes an
// Application's resources only with a propagation policy finalizer
// (controller/appcontroller.go finalizeApplicationDeletion, CascadedDeletion; a
// non-cascading delete otherwise); kustomize-controller garbage-collects a
// deleted Kustomization's inventory unless it is suspended, as its
// deletionPolicy says (MirrorPrune, the default, follows prune; Delete and
// WaitForTermination always; Orphan never: kustomization_controller.go
// finalizerShouldDeleteResources); helm-controller uninstalls a deleted
// HelmRelease's release unless it is suspended (helmrelease_controller.go
// reconcileDelete). live, when read, is the live object, whose settings are
// the ones the controller acts on. cascade is whether the objects are deleted.
func removal(c *diffing.Controller, live *controller.State) (text string, cascade bool) {
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
		prune, policy, suspended := c.Prune, c.DeletionPolicy, c.Suspended
		if live != nil && live.Exists {
			prune, policy, suspended = live.Prune, live.DeletionPolicy, live.Suspended
		}
		switch {
		case suspended:
			return name + " while it is suspended, so kustomize-controller deletes nothing it applied", false
		case policy == "Delete" || policy == "WaitForTermination":
			return name + ", and kustomize-controller garbage-collects what it applied (deletionPolicy " + policy + ")", true
		case policy == "Orphan":
			return name + " with deletionPolicy Orphan, which leaves what it applied in place", false
		case prune:
			return name + ", and kustomize-controller garbage-collects what it applied (prune is on)", true
		}
		return name + " with prune off, which leaves what it applied in place", false
	}
	if c.Suspended || (live != nil && live.Exists && live.Suspended) {
		return name + " while it is suspended, so helm-controller does not uninstall the release", false
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

// deletionCascade is the prune-cascade finding of a target whose controller
// object the PR deletes, when the deletion cascades (removal): everything it
// deploys goes with it. For an Application its ApplicationSet stops generating,
// the ApplicationSet controller deletes it (applicationset_controller.go
// deleteInCluster), and the resources finalizer the set adds unless
// syncPolicy.preserveResourcesOnDeletion is set (utils.RenderTemplateParams)
// cascades. What is deleted comes from the controller's own record when live
// comparison read it (lr.inventory: status.resources, status.inventory, the Helm
// release), else from the base render; when neither is known (the source is not
// rendered, unrendered names why, and there is no live comparison), the finding
// says the objects are unknown, and fails the check as any cascade does.
func deletionCascade(t config.Target, tr diffing.TargetReport, lr liveRead, cascade bool, unrendered string) (diffing.Finding, bool) {
	c := t.Controller
	if c == nil || !c.Deleted || !cascade {
		return diffing.Finding{}, false
	}
	key, ok := c.LiveKey()
	if !ok {
		return diffing.Finding{}, false
	}
	msg := fmt.Sprintf("Deleting %s %s deletes everything it deploys", c.Kind, mdtext.Code(c.Namespace+"/"+c.Name))
	if c.Generator != "" {
		msg = fmt.Sprintf("ApplicationSet %s no longer generates this Application, so the ApplicationSet controller deletes it, and Argo CD's resources finalizer deletes everything it deploys", c.Generator)
	}
	switch {
	case lr.record != "" && len(lr.inventory) > 0:
		msg += fmt.Sprintf(": %d %s in its %s", len(lr.inventory), plural("object", len(lr.inventory)), lr.record)
		if byKind := countKinds(lr.inventory); byKind != "" {
			msg += " (" + byKind + ")"
		}
		for _, k := range lr.inventory {
			if k.Group != "apiextensions.k8s.io" || k.Kind != "CustomResourceDefinition" {
				continue
			}
			stays := slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool { return f.Key == k && f.Rule == diffing.RuleOrphan })
			what := crdChildren(lr, k)
			switch {
			case stays && what != "":
				msg += fmt.Sprintf("; CustomResourceDefinition %s stays, and so do the custom resources of its kind (%s)", mdtext.Code(k.Name), what)
			case stays:
				msg += fmt.Sprintf("; CustomResourceDefinition %s stays", mdtext.Code(k.Name))
			case what != "":
				msg += fmt.Sprintf("; deleting CustomResourceDefinition %s deletes every custom resource of its kind (%s)", mdtext.Code(k.Name), what)
			default:
				msg += fmt.Sprintf("; deleting CustomResourceDefinition %s deletes every custom resource of its kind", mdtext.Code(k.Name))
			}
		}
	case unrendered != "" && (tr.Summary.Deleted == 0 || !tr.LiveChecked):
		if tr.LiveChecked || (lr.state != nil && lr.state.Err == nil) {
			msg += fmt.Sprintf(": which objects is unknown: its source is not rendered (%s) and the live %s lists none", unrendered, c.Kind)
		} else {
			msg += fmt.Sprintf(": which objects is unknown: its source is not rendered (%s) and no live comparison was made", unrendered)
		}
	default:
		n := 0
		for _, ch := range tr.Changes {
			if ch.Action == diffing.ActionDeleted && (ch.LiveAction == "" || ch.LiveAction == diffing.ActionDeleted) {
				n++
			}
		}
		if n > 0 {
			msg += fmt.Sprintf(": %d %s", n, plural("object", n))
		}
	}
	return diffing.Finding{
		Rule: diffing.RulePruneCascade, Severity: diffing.DefaultSeverity[diffing.RulePruneCascade],
		Key: key, Message: msg + ".",
	}, true
}

// countKinds counts keys by kind, the most first ("1 Deployment, 1 ServiceAccount
// and 1 CustomResourceDefinition"), at most four kinds named.
func countKinds(keys []render.ObjectKey) string {
	by := map[string]int{}
	for _, k := range keys {
		by[k.Kind]++
	}
	kinds := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(kinds, func(a, b string) int { return by[b] - by[a] })
	var parts []string
	for i, kind := range kinds {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more kinds", len(kinds)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", by[kind], kind))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// crdChildren says what lives under a CRD the live read counted ("2 Gizmos"),
// or "" when it counted none.
func crdChildren(lr liveRead, k render.ObjectKey) string {
	if lr.state == nil || lr.state.Err != nil {
		return ""
	}
	ch, ok := lr.state.Children[k]
	if !ok || ch.Total <= 0 {
		return ""
	}
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(ch.ByKind)) {
		if n := ch.ByKind[kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, plural(kind, n)))
		}
	}
	return strings.Join(parts, ", ")
}

// dedupeCascades drops the prune-cascade a deleted controller's own target
// reports on its controller object when another target reports one on the same
// object: the app of apps or Kustomization whose render drops it says so
// already (diffing's controllerCascade).
func dedupeCascades(rep *diffing.Report, targets []config.Target) {
	by := map[render.ObjectKey]int{}
	for _, tr := range rep.Targets {
		for _, f := range tr.Findings {
			if f.Rule == diffing.RulePruneCascade {
				by[f.Key]++
			}
		}
	}
	for i := range rep.Targets {
		tr := &rep.Targets[i]
		c := tr.Controller
		if c == nil || !c.Deleted {
			continue
		}
		key, ok := c.LiveKey()
		if !ok || by[key] < 2 {
			continue
		}
		tr.Findings = slices.DeleteFunc(tr.Findings, func(f diffing.Finding) bool {
			if f.Rule == diffing.RulePruneCascade && f.Key == key && by[key] > 1 {
				by[key]--
				return true
			}
			return false
		})
	}
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
