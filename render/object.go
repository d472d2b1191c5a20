package render

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectKey identifies an object across base, head and live without its API version,
// so that a move from v1beta1 to v1 shows as a modification and not as a prune.
type ObjectKey struct {
	Group     string `json:"group"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// String gives Kind/namespace/name, or Kind/name for cluster-scoped objects; it is the
// form the comment and the logs use.
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + "/" + k.Name
	}
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// GroupKind returns the key's group and kind, which is what stateful-kind tables and
// RESTMappings are keyed by.
func (k ObjectKey) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: k.Group, Kind: k.Kind}
}

// Compare orders keys by group, kind, namespace and name, so every ObjectSet and
// every report lists objects in the same stable order.
func (k ObjectKey) Compare(o ObjectKey) int {
	return cmp.Or(
		strings.Compare(k.Group, o.Group),
		strings.Compare(k.Kind, o.Kind),
		strings.Compare(k.Namespace, o.Namespace),
		strings.Compare(k.Name, o.Name),
	)
}

// KeyOf derives the ObjectKey of an unstructured object.
func KeyOf(u *unstructured.Unstructured) ObjectKey {
	gvk := u.GroupVersionKind()
	return ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// Object is one rendered manifest together with where it came from, so a finding can
// point the PR author at the file or chart template to change.
type Object struct {
	Key ObjectKey
	Obj *unstructured.Unstructured
	// Source is the file (relative to the checkout root), or chart/template, that
	// produced the object.
	Source string
	// HashSuffix is the content hash that kustomize's configMapGenerator or
	// secretGenerator appended to the object's name ("<name>-<hash>"); empty for
	// every other object. kustomize rewrites every reference to a generated name,
	// so a new hash is not a rename whose references break.
	HashSuffix string `json:"hashSuffix,omitempty"`
}

// ObjectSet is everything one target renders to, sorted by key.
type ObjectSet struct {
	Objects []Object
	// Notes are non-fatal remarks, such as files skipped because they are not
	// Kubernetes objects, that the report may show.
	Notes []string
	// OutputBytes is how much the render process sent back for this set: what
	// a caller counts against a limit over many renders.
	OutputBytes int64 `json:"-"`
	// CPUTime is the CPU time the render process spent on this set (zero for
	// a set from a cache): what a caller counts against a budget over many
	// renders.
	CPUTime time.Duration `json:"-"`
	// Charts are the remote charts and dependencies the render fetched, with the
	// version each resolved to.
	Charts []ResolvedChart `json:"-"`
	// encoded is the set as EncodeSet writes it, when the render process's
	// answer gave it (encodedAnswer); RenderEncoded hands it out, and Render
	// and RenderEncoded never return a set that holds it.
	encoded []byte
}

// Sort puts the objects in key order; renderers call it before returning.
func (s *ObjectSet) Sort() {
	slices.SortStableFunc(s.Objects, func(a, b Object) int { return a.Key.Compare(b.Key) })
}

// Index maps each key to its object, for diffing by key.
func (s ObjectSet) Index() map[ObjectKey]*Object {
	m := make(map[ObjectKey]*Object, len(s.Objects))
	for i := range s.Objects {
		m[s.Objects[i].Key] = &s.Objects[i]
	}
	return m
}
