package preview

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
)

// tracking tells the live reader how the target's controller marks the objects it
// manages: to find objects removed from git but still live (the prune scope), and
// to add the same marks to what it predicts the controller applies. argo is the
// argocd-cm of the Argo CD that owns an Application (zero: not read, defaults).
func tracking(t config.Target, argo controller.ArgoSettings) live.Tracking {
	var tr live.Tracking
	if t.Controller == nil {
		return tr
	}
	switch t.Controller.Kind {
	case diffing.ArgoCDApplication.Kind:
		// Application.InstanceName (argo-cd pkg/apis/application/v1alpha1): the
		// name, or namespace_name outside the namespace Argo CD runs in.
		home := argo.Namespace
		if home == "" {
			home = diffing.ArgoCDApplication.DefaultNamespace
		}
		tr.ArgoApp = t.Controller.Name
		if ns := t.Controller.Namespace; ns != "" && ns != home {
			tr.ArgoApp = ns + "_" + t.Controller.Name
		}
		tr.ArgoLabelKey, tr.ArgoMethod, tr.ArgoInstallationID = argo.InstanceLabelKey, argo.TrackingMethod, argo.InstallationID
		tr.ArgoDestNamespace = t.Namespace
	case diffing.FluxKustomization.Kind:
		tr.FluxName, tr.FluxNamespace = t.Controller.Name, t.Controller.Namespace
	case diffing.FluxHelmRelease.Kind:
		tr.HelmRelease, tr.HelmNamespace = t.Render.Helm.ReleaseName, t.Namespace
		tr.FluxHelmName, tr.FluxHelmNamespace = t.Controller.Name, t.Controller.Namespace
	}
	return tr
}

// argoCMIgnores turns the live argocd-cm's system-wide ignoreDifferences into
// ignore rules for a target whose Application syncs with
// RespectIgnoreDifferences=true: Argo CD then keeps the live values of those
// fields (controller/sync.go normalizeTargetResources, which normalizes with the
// Application's and argocd-cm's ignoreDifferences alike). Without it they hide
// fields from Argo CD's diff only, and a sync applies them as git has them: a
// note says so. jq paths are evaluated as Argo CD does (diffing/jqpath.go).
func argoCMIgnores(cm controller.ArgoSettings, a *diffing.ArgoSync) ([]diffing.IgnoreRule, []string) {
	var rules []diffing.IgnoreRule
	var notes []string
	for _, p := range cm.Problems {
		notes = append(notes, fmt.Sprintf("argocd-cm in %s: %s; its ignoreDifferences there are not applied", cm.Namespace, p))
	}
	if len(cm.IgnoreDifferences) == 0 {
		return nil, notes
	}
	if !a.RespectsIgnores() {
		var keys []string
		for _, ig := range cm.IgnoreDifferences {
			keys = append(keys, ig.Key)
		}
		return nil, append(notes, fmt.Sprintf("argocd-cm in %s ignores differences (%s) in Argo CD's diff only: without the sync option RespectIgnoreDifferences=true a sync applies those fields as git has them, so the findings on them are shown", cm.Namespace, strings.Join(keys, ", ")))
	}
	star := func(s string) string {
		if s == "*" {
			return ""
		}
		return s
	}
	for _, ig := range cm.IgnoreDifferences {
		r := diffing.IgnoreRule{Group: star(ig.Group), Kind: star(ig.Kind), Reason: "Argo CD ignoreDifferences in argocd-cm " + ig.Key + ", respected by the sync (RespectIgnoreDifferences=true)", Origin: "argocd-cm " + ig.Key}
		if len(ig.JSONPointers) > 0 {
			pr := r
			pr.Paths = slices.Clone(ig.JSONPointers)
			rules = append(rules, pr)
		}
		if len(ig.ManagedFieldsManagers) > 0 {
			mr := r
			mr.Managers = slices.Clone(ig.ManagedFieldsManagers)
			rules = append(rules, mr)
		}
		if len(ig.JQPathExpressions) > 0 {
			jr := r
			jr.JQ = slices.Clone(ig.JQPathExpressions)
			rules = append(rules, jr)
		}
	}
	return rules, notes
}
