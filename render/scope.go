package render

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// clusterScoped lists the built-in kinds that have no namespace, so a default
// namespace is never put on them and keys of live and rendered objects agree.
var clusterScoped = map[schema.GroupKind]bool{
	{Group: "", Kind: "Namespace"}:                                                    true,
	{Group: "", Kind: "Node"}:                                                         true,
	{Group: "", Kind: "PersistentVolume"}:                                             true,
	{Group: "", Kind: "ComponentStatus"}:                                              true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}:          true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicyBinding"}:   true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "policy", Kind: "PodSecurityPolicy"}:                                      true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "certificates.k8s.io", Kind: "ClusterTrustBundle"}:                        true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
	{Group: "resource.k8s.io", Kind: "DeviceClass"}:                                   true,
	{Group: "resource.k8s.io", Kind: "ResourceSlice"}:                                 true,
	{Group: "resource.k8s.io", Kind: "DeviceTaintRule"}:                               true,
	{Group: "authentication.k8s.io", Kind: "TokenReview"}:                             true,
	{Group: "authentication.k8s.io", Kind: "SelfSubjectReview"}:                       true,
	{Group: "authorization.k8s.io", Kind: "SubjectAccessReview"}:                      true,
	{Group: "authorization.k8s.io", Kind: "SelfSubjectAccessReview"}:                  true,
	{Group: "authorization.k8s.io", Kind: "SelfSubjectRulesReview"}:                   true,
	{Group: "storagemigration.k8s.io", Kind: "StorageVersionMigration"}:               true,
	{Group: "internal.apiserver.k8s.io", Kind: "StorageVersion"}:                      true,
}

// ClusterScoped reports whether a built-in kind has no namespace. Renderers use it to
// decide where the target's default namespace applies; diffing uses it to key live
// objects. Kinds defined by CRDs are not known here: a render also consults the CRDs
// it produced itself.
func ClusterScoped(gk schema.GroupKind) bool {
	return clusterScoped[gk]
}

// crdScopes collects the scope of every CRD in objs, so custom resources rendered
// next to their definition get the namespace default right.
func crdScopes(objs []Object) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.Key.Group != "apiextensions.k8s.io" || o.Key.Kind != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "scope")
		if kind != "" {
			out[schema.GroupKind{Group: group, Kind: kind}] = strings.EqualFold(scope, "Cluster")
		}
	}
	return out
}

// defaultNamespace sets ns on namespaced objects that lack one, updating their keys.
func defaultNamespace(objs []Object, ns string) {
	if ns == "" {
		return
	}
	crds := crdScopes(objs)
	for i := range objs {
		o := &objs[i]
		if o.Obj.GetNamespace() != "" {
			continue
		}
		gk := o.Key.GroupKind()
		if cluster, ok := crds[gk]; (ok && cluster) || (!ok && ClusterScoped(gk)) {
			continue
		}
		o.Obj.SetNamespace(ns)
		o.Key.Namespace = ns
	}
}
