package diffing

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// DefaultNamespace is where a namespaced object that names no namespace lands when
// the target names none either: kubectl, Helm (`helm install` without -n) and the
// in-cluster Argo CD destination without a namespace all use it.
const DefaultNamespace = "default"

// ScopeFunc says whether objects of a kind are namespaced; known is false when it
// cannot tell. The live reader answers from the cluster's discovery (the REST
// mapping the controller itself uses).
type ScopeFunc func(gk schema.GroupKind) (namespaced, known bool)

// Identity is where the objects of one target really live, so that base, head and
// live name each object the same way before any of them is matched by key. It is
// the one place that decides an object's namespace:
//
//   - a namespaced object without metadata.namespace lands in Namespace, the
//     target's destination (Argo CD destination.namespace, Flux targetNamespace or
//     the HelmRelease's namespace, Helm's release namespace), else "default". Argo
//     CD sets the destination namespace only on namespaced kinds with no namespace
//     of their own ("The namespace will only be set for namespace-scoped resources
//     that have not set a value for .metadata.namespace", Argo CD's Application
//     spec); Helm and kubectl send such objects to the release/context namespace.
//   - a cluster-scoped object has no namespace: the apiserver drops one that a
//     manifest sets (proven in TestClusterScopedNamespaceIsDropped), so
//     `namespace: {{ .Release.Namespace }}` on a ClusterRole changes nothing.
//
// So adding `namespace: default` to the templates of a chart installed in default
// names the same objects, not a delete, a create and a rename.
type Identity struct {
	// Namespace is the target's destination namespace; "" means DefaultNamespace.
	Namespace string
	// Scope answers from the cluster's discovery when live comparison is on; nil or
	// an unknown kind falls back to the CRDs in the rendered sets and then to the
	// built-in scope table (render.ClusterScoped). A kind known to neither is taken
	// as namespaced, as most custom resources are and as the renderers assume.
	Scope ScopeFunc
}

// Apply returns copies of sets with every key, and the metadata.namespace of every
// object, normalised as Identity describes. The sets are never changed in place:
// renders are cached and shared with discovery.
func (id Identity) Apply(sets ...render.ObjectSet) []render.ObjectSet {
	ns := id.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	crds := map[schema.GroupKind]bool{} // kind → namespaced
	for _, s := range sets {
		for _, o := range s.Objects {
			if gk, namespaced, ok := crdScope(o); ok {
				crds[gk] = namespaced
			}
		}
	}
	namespaced := func(gk schema.GroupKind) bool {
		if id.Scope != nil {
			if n, ok := id.Scope(gk); ok {
				return n
			}
		}
		if n, ok := crds[gk]; ok {
			return n
		}
		return !render.ClusterScoped(gk)
	}
	out := make([]render.ObjectSet, len(sets))
	for i, s := range sets {
		c := render.ObjectSet{Notes: s.Notes, Objects: make([]render.Object, len(s.Objects))}
		for j, o := range s.Objects {
			want := o.Key.Namespace
			switch {
			case !namespaced(o.Key.GroupKind()):
				want = ""
			case want == "":
				want = ns
			}
			if want != o.Key.Namespace || (o.Obj != nil && o.Obj.GetNamespace() != want) {
				o.Key.Namespace = want
				if o.Obj != nil {
					o.Obj = o.Obj.DeepCopy()
					if want == "" {
						unstructured.RemoveNestedField(o.Obj.Object, "metadata", "namespace")
					} else {
						o.Obj.SetNamespace(want)
					}
				}
			}
			c.Objects[j] = o
		}
		c.Sort()
		out[i] = c
	}
	return out
}

// crdScope reads the kind and scope a CustomResourceDefinition defines.
func crdScope(o render.Object) (schema.GroupKind, bool, bool) {
	if o.Key.Group != "apiextensions.k8s.io" || o.Key.Kind != "CustomResourceDefinition" || o.Obj == nil {
		return schema.GroupKind{}, false, false
	}
	group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "scope")
	if kind == "" {
		return schema.GroupKind{}, false, false
	}
	return schema.GroupKind{Group: group, Kind: kind}, !strings.EqualFold(scope, "Cluster"), true
}
