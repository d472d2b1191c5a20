package preview

import (
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
