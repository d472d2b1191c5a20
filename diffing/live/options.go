package live

import "github.com/driftpreview/driftpreview/render"

// The prediction modes of Options.Mode.
const (
	// ModeSimulate merges head onto live locally with the apiserver's own
	// server-side-apply code; it needs get/list and the OpenAPI document only.
	ModeSimulate = "simulate"
	// ModeDryRun asks the apiserver for a server-side apply with dryRun=All; it needs
	// patch RBAC and also runs admission webhooks and validation.
	ModeDryRun = "dry-run"
)

// Options says how to read one target's live state. The bot fills it from the repo
// config and the GitOps controller object that deploys the target.
type Options struct {
	// Mode is ModeSimulate (default when empty) or ModeDryRun.
	Mode string
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
}

// Tracking holds the marks GitOps tools put on the objects they manage. Empty fields
// are not looked for.
type Tracking struct {
	// ArgoApp matches the label app.kubernetes.io/instance=<app> or an annotation
	// argocd.argoproj.io/tracking-id starting with "<app>:".
	ArgoApp string
	// FluxName and FluxNamespace match the labels kustomize.toolkit.fluxcd.io/name
	// and kustomize.toolkit.fluxcd.io/namespace of a Flux Kustomization.
	FluxName, FluxNamespace string
	// HelmRelease and HelmNamespace match the annotations meta.helm.sh/release-name
	// and meta.helm.sh/release-namespace.
	HelmRelease, HelmNamespace string
}

// DefaultOptions is simulate mode as manager "driftpreview", with Secrets masked.
func DefaultOptions() Options {
	return Options{Mode: ModeSimulate, Manager: "driftpreview", MaskSecrets: true}
}

// tracked reports whether labels and annotations mark an object as the target's.
func (t Tracking) tracked(labels, annotations map[string]string) bool {
	if t.ArgoApp != "" {
		if labels["app.kubernetes.io/instance"] == t.ArgoApp {
			return true
		}
		if id := annotations["argocd.argoproj.io/tracking-id"]; len(id) > len(t.ArgoApp) &&
			id[:len(t.ArgoApp)+1] == t.ArgoApp+":" {
			return true
		}
	}
	if t.FluxName != "" && labels["kustomize.toolkit.fluxcd.io/name"] == t.FluxName &&
		labels["kustomize.toolkit.fluxcd.io/namespace"] == t.FluxNamespace {
		return true
	}
	if t.HelmRelease != "" && annotations["meta.helm.sh/release-name"] == t.HelmRelease &&
		annotations["meta.helm.sh/release-namespace"] == t.HelmNamespace {
		return true
	}
	return false
}
