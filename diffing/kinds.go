package diffing

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// statefulKinds hold data that a delete or a recreate destroys or disrupts.
var statefulKinds = []schema.GroupKind{
	{Kind: "PersistentVolumeClaim"},
	{Kind: "PersistentVolume"},
	{Group: "apps", Kind: "StatefulSet"},
	{Kind: "Namespace"},
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
}

// Stateful reports whether objects of gk hold data (built-in PVC, PV, StatefulSet,
// Namespace and CRD, plus the configured extra kinds such as database custom
// resources), which turns prunes, renames and changes of them into stronger findings.
func Stateful(gk schema.GroupKind, extra []schema.GroupKind) bool {
	return slices.Contains(statefulKinds, gk) || slices.Contains(extra, gk)
}

// humanManagers are the field managers kubectl uses: fields they own were set by a
// person by hand, so a difference there is drift and not an operator's work.
var humanManagers = []string{
	"kubectl", "kubectl-edit", "kubectl-scale", "kubectl-patch", "kubectl-client-side-apply",
	"kubectl-label", "kubectl-annotate", "kubectl-set", "kubectl-rollout", "kubectl-replace",
	"kubectl-create", "kubectl-run", "kubectl-autoscale", "kubectl-expose", "kubectl-taint",
}

// HumanManager reports whether field manager name is a person at a terminal (the
// kubectl managers plus extra), whose edits are live-drift rather than a
// field-conflict with a controller.
func HumanManager(name string, extra []string) bool {
	return slices.Contains(humanManagers, name) || slices.Contains(extra, name)
}

// describeManager names well-known field managers the way a reviewer knows them,
// for messages such as "owned by `kube-controller-manager` (an HPA)". It returns ""
// when there is nothing to add to the manager's own name.
func describeManager(name, path string) string {
	n := strings.ToLower(name)
	switch {
	case n == "kube-controller-manager":
		if strings.HasSuffix(path, "/replicas") {
			return "an HPA"
		}
		return "a Kubernetes controller"
	case strings.Contains(n, "cert-manager"):
		return "cert-manager"
	case strings.Contains(n, "istio"):
		return "the Istio sidecar injector"
	case strings.Contains(n, "linkerd"):
		return "the Linkerd proxy injector"
	case strings.HasPrefix(n, "vpa-") || strings.Contains(n, "vertical-pod-autoscaler"):
		return "the Vertical Pod Autoscaler"
	case strings.Contains(n, "keda"):
		return "a KEDA autoscaler"
	case n == "before-first-apply":
		return "whoever created the object before its first server-side apply"
	case strings.HasSuffix(n, "-webhook") || strings.Contains(n, "webhook"):
		return "a mutating webhook"
	case strings.Contains(n, "argocd"):
		return "Argo CD"
	case strings.Contains(n, "kustomize-controller") || strings.Contains(n, "helm-controller"):
		return "Flux"
	}
	return ""
}
