package diffing

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// ControllerKind is what driftpreview knows of one GitOps controller kind: the one
// table discovery (bot/gitops), the live reads (diffing/live, diffing/live/controller),
// the pipeline (bot/preview) and the report (bot/report) share. Controller.Kind
// names a row by its Kind.
type ControllerKind struct {
	// Kind is the object kind, as in Controller.Kind.
	Kind string
	// GVR is where the controller serves the kind today.
	GVR schema.GroupVersionResource
	// DefaultNamespace is where the controller keeps an object of this kind that
	// names no namespace in git.
	DefaultNamespace string
	// DisplayName is the kind as people call it, for the report.
	DisplayName string
	// Manager is the field manager the controller applies what it deploys with.
	// Argo CD uses "argocd-controller" both for its default client-side apply
	// (managedFields operation Update) and with ServerSideApply=true (operation
	// Apply), so one name serves both.
	Manager string
	// LiveState is true when a target's live state is read from the object of
	// this kind (diffing/live/controller.Read): not for an ApplicationSet, which
	// deploys nothing itself.
	LiveState bool
	// TrackingLabel and TrackingAnnotation are Argo CD's marks on what an
	// Application applies (argo-cd common/common.go LabelKeyAppInstance, the
	// default of argocd-cm application.instanceLabelKey, and
	// AnnotationKeyAppInstance); empty for Flux.
	TrackingLabel, TrackingAnnotation string
	// OwnerLabelGroup is the prefix of the <group>/name and <group>/namespace
	// labels a Flux controller writes on what it applies (fluxcd/pkg ssa
	// ResourceManager.SetOwnerLabels for kustomize-controller, postrender
	// OriginLabels for helm-controller); empty for Argo CD.
	OwnerLabelGroup string
}

// GroupKind is the kind's API group and kind.
func (k ControllerKind) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.GVR.Group, Kind: k.Kind}
}

// The API groups of the GitOps controllers and the namespaces they install into
// (argo-cd's install manifests, flux bootstrap).
const (
	GroupArgoCD        = "argoproj.io"
	GroupFluxKustomize = "kustomize.toolkit.fluxcd.io"
	GroupFluxHelm      = "helm.toolkit.fluxcd.io"
	GroupFluxSource    = "source.toolkit.fluxcd.io"
	// GroupFluxSourceExt is the group of Flux's ArtifactGenerator.
	GroupFluxSourceExt = "source.extensions.fluxcd.io"
	NamespaceArgoCD    = "argocd"
	NamespaceFlux      = "flux-system"
	// ArgoCDInstallationID is common.AnnotationInstallationID in argo-cd
	// common/common.go.
	ArgoCDInstallationID = "argocd.argoproj.io/installation-id"
	// ArgoCDResourcesFinalizer makes deleting an Application delete what it
	// deployed (argo-cd common.ResourcesFinalizerName); a background or
	// foreground variant adds a suffix.
	ArgoCDResourcesFinalizer = "resources-finalizer.argocd.argoproj.io"
)

// ArgoCDCascades says whether an Application with these finalizers deletes what
// it deployed when it is deleted: it carries one of Argo CD's propagation
// policy finalizers, the resources finalizer or its /foreground or /background
// form (argo-cd pkg/apis/application/v1alpha1/types.go CascadedDeletion,
// isPropagationPolicyFinalizer; application_defaults.go).
func ArgoCDCascades(finalizers []string) bool {
	for _, f := range finalizers {
		switch f {
		case ArgoCDResourcesFinalizer, ArgoCDResourcesFinalizer + "/foreground", ArgoCDResourcesFinalizer + "/background":
			return true
		}
	}
	return false
}

// RemovalKeeps names why a Flux controller leaves obj in place when the
// controller object of kind that deployed it is deleted with a cascade, or ""
// when it deletes it: kustomize-controller skips objects marked
// reconcile: disabled or ssa: ignore
// (internal/controller/kustomization_controller.go deleteObjects); prune:
// disabled and helm.sh/resource-policy: keep are protections of their own
// (protection), and Argo CD's are ArgoSync's.
func RemovalKeeps(kind string, obj *unstructured.Unstructured) string {
	if kind != FluxKustomization.Kind || obj == nil {
		return ""
	}
	for _, mark := range [][2]string{{"kustomize.toolkit.fluxcd.io/reconcile", "disabled"}, {"kustomize.toolkit.fluxcd.io/ssa", "ignore"}} {
		if obj.GetAnnotations()[mark[0]] == mark[1] || obj.GetLabels()[mark[0]] == mark[1] {
			return code(mark[0] + ": " + mark[1])
		}
	}
	return ""
}

// The controller kinds.
var (
	ArgoCDApplication = ControllerKind{
		Kind:               "Application",
		GVR:                schema.GroupVersionResource{Group: GroupArgoCD, Version: "v1alpha1", Resource: "applications"},
		DefaultNamespace:   NamespaceArgoCD,
		DisplayName:        "Argo CD Application",
		Manager:            "argocd-controller",
		LiveState:          true,
		TrackingLabel:      "app.kubernetes.io/instance",
		TrackingAnnotation: "argocd.argoproj.io/tracking-id",
	}
	ArgoCDApplicationSet = ControllerKind{
		Kind:             "ApplicationSet",
		GVR:              schema.GroupVersionResource{Group: GroupArgoCD, Version: "v1alpha1", Resource: "applicationsets"},
		DefaultNamespace: NamespaceArgoCD,
		DisplayName:      "Argo CD ApplicationSet",
	}
	FluxKustomization = ControllerKind{
		Kind:             "Kustomization",
		GVR:              schema.GroupVersionResource{Group: GroupFluxKustomize, Version: "v1", Resource: "kustomizations"},
		DefaultNamespace: NamespaceFlux,
		DisplayName:      "Flux Kustomization",
		Manager:          "kustomize-controller",
		LiveState:        true,
		OwnerLabelGroup:  GroupFluxKustomize,
	}
	FluxHelmRelease = ControllerKind{
		Kind:             "HelmRelease",
		GVR:              schema.GroupVersionResource{Group: GroupFluxHelm, Version: "v2", Resource: "helmreleases"},
		DefaultNamespace: NamespaceFlux,
		DisplayName:      "Flux HelmRelease",
		Manager:          "helm-controller",
		LiveState:        true,
		OwnerLabelGroup:  GroupFluxHelm,
	}
)

// ControllerKinds lists every controller kind.
var ControllerKinds = []ControllerKind{ArgoCDApplication, ArgoCDApplicationSet, FluxKustomization, FluxHelmRelease}

// ControllerKindOf is the row of a Controller.Kind; ok is false for any other kind.
func ControllerKindOf(kind string) (ControllerKind, bool) {
	for _, k := range ControllerKinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return ControllerKind{}, false
}

// IsLiveController says whether gk is a controller kind whose live object a
// target's live state is read from (an Application, a Kustomization, a
// HelmRelease).
func IsLiveController(gk schema.GroupKind) bool {
	for _, k := range ControllerKinds {
		if k.LiveState && k.GroupKind() == gk {
			return true
		}
	}
	return false
}

// LiveKey is the key of the controller object c, as c names it, when its kind is
// one whose live state is read (IsLiveController); ok is false otherwise.
func (c *Controller) LiveKey() (key render.ObjectKey, ok bool) {
	k, ok := ControllerKindOf(c.Kind)
	if !ok || !k.LiveState {
		return render.ObjectKey{}, false
	}
	return render.ObjectKey{Group: k.GVR.Group, Kind: c.Kind, Namespace: c.Namespace, Name: c.Name}, true
}

// ControllerNamespace is where the controller owning an API group keeps objects
// that name no namespace: argocd for Argo CD, flux-system for every Flux group;
// "" for other groups.
func ControllerNamespace(group string) string {
	switch {
	case group == GroupArgoCD:
		return NamespaceArgoCD
	case strings.HasSuffix(group, ".toolkit.fluxcd.io"), group == GroupFluxSourceExt:
		return NamespaceFlux
	}
	return ""
}
