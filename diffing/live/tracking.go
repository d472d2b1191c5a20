package live

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// The marks GitOps controllers write on what they apply, beside Argo CD's label and
// annotation and Flux's owner labels, which are in the controller-kind table
// (diffing.ControllerKinds).
const (
	// The values of argocd-cm application.resourceTrackingMethod.
	ArgoTrackingAnnotation         = "annotation"
	ArgoTrackingLabel              = "label"
	ArgoTrackingAnnotationAndLabel = "annotation+label"
	// argoLabelMaxLength is LabelMaxLength in argo-cd util/argo/resource_tracking.go.
	argoLabelMaxLength = 63

	// Helm's setMetadataVisitor (helm.sh/helm/v4 pkg/action/validate.go) marks
	// every resource of a release on install, upgrade and rollback.
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"
	helmManagedByLabel   = "app.kubernetes.io/managed-by"
	helmManagedByValue   = "Helm"
)

// argoOkEnd is OkEndPattern of argo-cd util/argo/resource_tracking.go.
var argoOkEnd = regexp.MustCompile("[a-zA-Z0-9]$")

// stamp adds to an apply request the tracking marks its controller adds before it
// applies, so the prediction holds them as the live object does and a no-op merge
// shows no change. namespaced says whether the kind is namespaced.
func (t Tracking) stamp(u *unstructured.Unstructured, namespaced bool) {
	labels, annotations := u.GetLabels(), u.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	if t.ArgoApp != "" && !isCRD(u) {
		t.stampArgo(u, namespaced, labels, annotations)
	}
	if t.FluxName != "" {
		labels[diffing.FluxKustomization.OwnerLabelGroup+"/name"] = t.FluxName
		labels[diffing.FluxKustomization.OwnerLabelGroup+"/namespace"] = t.FluxNamespace
	}
	if t.FluxHelmName != "" {
		labels[diffing.FluxHelmRelease.OwnerLabelGroup+"/name"] = t.FluxHelmName
		labels[diffing.FluxHelmRelease.OwnerLabelGroup+"/namespace"] = t.FluxHelmNamespace
	}
	if t.HelmRelease != "" {
		labels[helmManagedByLabel] = helmManagedByValue
		annotations[helmReleaseName] = t.HelmRelease
		annotations[helmReleaseNamespace] = t.HelmNamespace
	}
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	if len(annotations) > 0 {
		u.SetAnnotations(annotations)
	}
}

// stampArgo follows resourceTracking.SetAppInstance (argo-cd
// util/argo/resource_tracking.go): the repo server calls it on every rendered
// object but CustomResourceDefinitions (reposerver/repository/repository.go), and
// the controller again once it has settled the namespace (controller/state.go
// NormalizeTargetObjects). The tracking id is
// "<app>:<group>/<kind>:<namespace>/<name>", with the destination namespace for
// objects that have none, cluster-scoped ones included.
func (t Tracking) stampArgo(u *unstructured.Unstructured, namespaced bool, labels, annotations map[string]string) {
	annotate := func() {
		ns := ""
		if namespaced {
			ns = u.GetNamespace()
		}
		if ns == "" {
			ns = t.ArgoDestNamespace
		}
		gvk := u.GroupVersionKind()
		annotations[diffing.ArgoCDApplication.TrackingAnnotation] = fmt.Sprintf("%s:%s/%s:%s/%s", t.ArgoApp, gvk.Group, gvk.Kind, ns, u.GetName())
		if t.ArgoInstallationID != "" {
			annotations[diffing.ArgoCDInstallationID] = t.ArgoInstallationID
		} else {
			delete(annotations, diffing.ArgoCDInstallationID)
		}
	}
	switch t.ArgoMethod {
	case ArgoTrackingLabel:
		labels[t.argoLabelKey()] = t.ArgoApp // not truncated: the value is the app name
	case ArgoTrackingAnnotationAndLabel:
		annotate()
		labels[t.argoLabelKey()] = truncateArgoLabel(t.ArgoApp)
	default: // "annotation", the default since Argo CD 3.0
		annotate()
	}
}

// truncateArgoLabel is TruncateLabel of argo-cd util/argo/resource_tracking.go: at
// most 63 characters, ending in a letter or digit.
func truncateArgoLabel(v string) string {
	if len(v) <= argoLabelMaxLength {
		return v
	}
	v = v[:argoLabelMaxLength]
	for len(v) > 1 && !argoOkEnd.MatchString(v) {
		v = v[:len(v)-1]
	}
	return v
}

func isCRD(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// foreignOwner names the GitOps controller object whose tracking marks u carries
// when that is not this target's: an Argo CD Application by the tracking-id
// annotation "<app>:<group>/<kind>:<namespace>/<name>" (argo-cd
// util/argo/resource_tracking.go; <app> is "<namespace>_<name>" outside the
// namespace Argo CD runs in), or a Flux Kustomization by its owner labels
// (fluxcd/pkg ssa SetOwnerLabels). The instance label alone is not read: Helm
// charts set app.kubernetes.io/instance to their release name. Only a target
// deployed by a controller (t has marks of its own) has foreign owners.
func (t Tracking) foreignOwner(u *unstructured.Unstructured) (render.ObjectKey, bool) {
	if t.ArgoApp == "" && t.FluxName == "" && t.FluxHelmName == "" {
		return render.ObjectKey{}, false
	}
	labels, annotations := u.GetLabels(), u.GetAnnotations()
	if id := annotations[diffing.ArgoCDApplication.TrackingAnnotation]; id != "" {
		app, _, ok := strings.Cut(id, ":")
		if ok && app != "" && app != t.ArgoApp {
			ns, name := diffing.NamespaceArgoCD, app
			if n, a, ok := strings.Cut(app, "_"); ok {
				ns, name = n, a
			}
			return render.ObjectKey{Group: diffing.GroupArgoCD, Kind: diffing.ArgoCDApplication.Kind, Namespace: ns, Name: name}, true
		}
	}
	g := diffing.FluxKustomization.OwnerLabelGroup
	if name, ns := labels[g+"/name"], labels[g+"/namespace"]; name != "" && ns != "" && (name != t.FluxName || ns != t.FluxNamespace) {
		return render.ObjectKey{Group: diffing.GroupFluxKustomize, Kind: diffing.FluxKustomization.Kind, Namespace: ns, Name: name}, true
	}
	return render.ObjectKey{}, false
}
