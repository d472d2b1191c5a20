package render

import (
	"fmt"
	"slices"
	"strings"
)

// Hook annotations. Objects that carry them are run around a sync (or by
// `helm test`), not kept in sync, so they are left out of the compared set.
const (
	helmHookAnnotation = "helm.sh/hook"
	argoHookAnnotation = "argocd.argoproj.io/hook"
)

// isHelmHook says whether a rendered object is a Helm hook. helm-controller (Flux)
// installs a release through Helm's action package, whose manifest sorter puts every
// object with a helm.sh/hook annotation into the hooks, never into the release
// manifest that is applied and pruned (helm.sh/helm/v4 pkg/release/v1/util
// manifest_sorter.go). Argo CD maps Helm hooks to its own sync hooks and never
// prunes them, except the Helm 2 value "crd-install", which it treats as a normal
// resource (gitops-engine pkg/sync/hook/helm IsHook); that one is kept.
func isHelmHook(o Object) bool {
	v, ok := o.Obj.GetAnnotations()[helmHookAnnotation]
	return ok && strings.TrimSpace(v) != "crd-install"
}

// isArgoHook says whether Argo CD treats a rendered object, from any source type,
// as a sync hook: an argocd.argoproj.io/hook annotation other than Skip alone, or a
// Helm hook annotation (gitops-engine pkg/sync/hook IsHook). Argo CD creates hooks
// during a sync and deletes them by their hook-delete-policy; they are not part of
// the application's synced resources and are never pruned.
func isArgoHook(o Object) bool {
	v, ok := o.Obj.GetAnnotations()[argoHookAnnotation]
	if !ok {
		return isHelmHook(o)
	}
	var types []string
	for t := range strings.SplitSeq(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			types = append(types, t)
		}
	}
	return !(len(types) == 1 && types[0] == "Skip")
}

// dropHooks removes the objects is says are hooks and adds one note naming how
// many were left out and of which kinds.
func dropHooks(set *ObjectSet, is func(Object) bool, what string) {
	var kinds []string
	n := 0
	set.Objects = slices.DeleteFunc(set.Objects, func(o Object) bool {
		if o.Obj == nil || !is(o) {
			return false
		}
		n++
		if !slices.Contains(kinds, o.Key.Kind) {
			kinds = append(kinds, o.Key.Kind)
		}
		return true
	})
	if n == 0 {
		return
	}
	slices.Sort(kinds)
	noun := "objects"
	if n == 1 {
		noun = "object"
	}
	set.Notes = append(set.Notes, fmt.Sprintf("%d %s hook %s (%s) left out of the comparison: hooks run around a sync and are never applied or pruned as part of it", n, what, noun, strings.Join(kinds, ", ")))
}
