package preview

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// removal says what deleting the target's controller object does to what it
// deployed, following each controller's documented delete behaviour: Argo CD
// deletes an Application's resources only with its resources finalizer (a
// non-cascading delete otherwise); kustomize-controller garbage-collects a deleted
// Kustomization's inventory only when prune is on; helm-controller uninstalls a
// deleted HelmRelease's release. cascade is whether the objects are deleted.
func removal(c *diffing.Controller) (text string, cascade bool) {
	name := fmt.Sprintf("%s `%s/%s` is deleted by this PR", c.Kind, c.Namespace, c.Name)
	switch c.Kind {
	case "Application":
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

// controllerKinds are the controller objects a target's live state is read from.
var controllerKinds = map[schema.GroupKind]bool{
	{Group: "argoproj.io", Kind: "Application"}:                   true,
	{Group: "kustomize.toolkit.fluxcd.io", Kind: "Kustomization"}: true,
	{Group: "helm.toolkit.fluxcd.io", Kind: "HelmRelease"}:        true,
}

// createdByMerge turns a controller-missing finding into a note when another
// target of the same merge creates that controller object: an app-of-apps that
// adds (or renames) an Application, a Flux Kustomization that applies a new one.
// The object is missing live only until the merge, which then deploys the target.
func createdByMerge(rep *diffing.Report) {
	created := map[render.ObjectKey]string{}
	for _, tr := range rep.Targets {
		for _, c := range tr.Changes {
			if c.Action == diffing.ActionCreated && controllerKinds[c.Key.GroupKind()] {
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
			tr.Notes = append(tr.Notes, fmt.Sprintf("%s `%s` does not exist on the cluster yet: this merge creates it (target %s), and it then deploys this target.",
				f.Key.Kind, keyName(f.Key), by))
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
