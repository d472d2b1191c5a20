package live

import (
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// The prediction modes of Options.Mode (see diffing.LiveMode).
const (
	ModeSimulate = diffing.LiveSimulate
	ModeDryRun   = diffing.LiveDryRun
)

// Options says how to read one target's live state. The bot fills it from the repo
// config and the GitOps controller object that deploys the target.
type Options struct {
	// Mode is ModeSimulate (default when empty) or ModeDryRun.
	Mode diffing.LiveMode
	// Manager is the GitOps field manager that applies head (kustomize-controller,
	// argocd-controller…); predictions apply as it.
	Manager string
	// Cluster names the cluster in errors and in LiveState.Cluster; the API host is
	// used when empty.
	Cluster string
	// Namespace is the namespace of namespaced objects that have none, as the
	// controller's destination namespace gives them.
	Namespace string
	// Tracking says how live objects are marked as belonging to the target, so
	// objects removed from git before base are still in the prune scope.
	Tracking Tracking
	// Inventory is the exact prune scope a GitOps controller reports (Flux's
	// status.inventory, Argo CD's resource list); optional.
	Inventory []render.ObjectKey
	// MaskSecrets hides Secret values in Prediction.Object (as diffing.Mask does).
	// Errors never carry Secret values, whatever this says.
	MaskSecrets bool
	// Argo, for a target an Argo CD Application deploys, holds its sync options:
	// dry-run mode sends an object Argo CD replaces (Replace=true) as the PUT
	// kubectl replace sends. Nil for other controllers.
	Argo *diffing.ArgoSync
	// Reuse, when set, is an earlier Read of the same Reader with the same
	// options otherwise; its predictions are taken where the apply is the same.
	Reuse *Reuse
}

// Reuse is an earlier read: the base and head it was given and what it returned.
// A Read given it takes the prediction of a head object from it when that object,
// its base and its live object are the same as then, since the same apply gives
// the same prediction; the bot's second read that judges the base
// (markPreExisting) thereby simulates only the objects the PR changes.
type Reuse struct {
	Base, Head render.ObjectSet
	State      *diffing.LiveState
}

// Tracking holds the marks GitOps tools put on the objects they manage. Empty fields
// are not looked for. Read uses them twice: to find live objects that belong to the
// target, and to add to each apply request the marks the controller adds before it
// applies (stamp), so a prediction is what the server would store.
type Tracking struct {
	// ArgoApp is Argo CD's instance name of the Application: its name, or
	// "<namespace>_<name>" for an Application outside the controller's namespace
	// (Application.InstanceName in argo-cd pkg/apis/application/v1alpha1/types.go).
	// It matches the label ArgoLabelKey=<app> or an annotation
	// argocd.argoproj.io/tracking-id starting with "<app>:".
	ArgoApp string
	// ArgoLabelKey is argocd-cm's application.instanceLabelKey; empty means Argo
	// CD's default, app.kubernetes.io/instance.
	ArgoLabelKey string
	// ArgoMethod is argocd-cm's application.resourceTrackingMethod: "annotation",
	// "label" or "annotation+label"; empty means the default of Argo CD 3.x,
	// "annotation" (util/settings GetTrackingMethod; the default changed from label
	// in 3.0, docs/operator-manual/upgrading/2.14-3.0.md).
	ArgoMethod string
	// ArgoInstallationID is argocd-cm's installationID; when set Argo CD also writes
	// the annotation argocd.argoproj.io/installation-id.
	ArgoInstallationID string
	// ArgoDestNamespace is the Application's destination namespace: the namespace
	// part of the tracking id of objects that have none (cluster-scoped ones).
	ArgoDestNamespace string
	// FluxName and FluxNamespace match the labels kustomize.toolkit.fluxcd.io/name
	// and kustomize.toolkit.fluxcd.io/namespace of a Flux Kustomization.
	FluxName, FluxNamespace string
	// HelmRelease and HelmNamespace match the annotations meta.helm.sh/release-name
	// and meta.helm.sh/release-namespace.
	HelmRelease, HelmNamespace string
	// FluxHelmName and FluxHelmNamespace name the Flux HelmRelease object, whose
	// helm-controller adds the labels helm.toolkit.fluxcd.io/name and /namespace.
	FluxHelmName, FluxHelmNamespace string
}

// DefaultOptions is simulate mode as manager "driftpreview", with Secrets masked.
func DefaultOptions() Options {
	return Options{Mode: ModeSimulate, Manager: "driftpreview", MaskSecrets: true}
}

// argoLabelKey is the instance label key Argo CD uses.
func (t Tracking) argoLabelKey() string {
	if t.ArgoLabelKey != "" {
		return t.ArgoLabelKey
	}
	return diffing.ArgoCDApplication.TrackingLabel
}

// tracked reports whether labels and annotations mark an object as the target's.
// Both Argo CD marks count whatever the tracking method, so objects a controller
// marked before its method changed are still found.
func (t Tracking) tracked(labels, annotations map[string]string) bool {
	if t.ArgoApp != "" {
		if labels[t.argoLabelKey()] == t.ArgoApp {
			return true
		}
		if id := annotations[diffing.ArgoCDApplication.TrackingAnnotation]; len(id) > len(t.ArgoApp) &&
			id[:len(t.ArgoApp)+1] == t.ArgoApp+":" {
			return true
		}
	}
	if t.FluxName != "" && labels[diffing.FluxKustomization.OwnerLabelGroup+"/name"] == t.FluxName &&
		labels[diffing.FluxKustomization.OwnerLabelGroup+"/namespace"] == t.FluxNamespace {
		return true
	}
	if t.HelmRelease != "" && annotations[helmReleaseName] == t.HelmRelease &&
		annotations[helmReleaseNamespace] == t.HelmNamespace {
		return true
	}
	return false
}
