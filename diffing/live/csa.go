package live

import (
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// appliesClientSide reports whether manager keeps obj with client-side apply: its
// managedFields entry on the main resource is an Update that owns the
// last-applied annotation, and it has no Apply entry. That is how Argo CD's
// default sync (kubectl's apply code run as argocd-controller, gitops-engine
// pkg/utils/kube/resource_ops.go) and kubectl apply leave an object.
func appliesClientSide(obj *unstructured.Unstructured, manager string) (bool, error) {
	if _, ok := obj.GetAnnotations()[lastAppliedAnnotation]; !ok {
		return false, nil
	}
	csa := false
	for _, e := range obj.GetManagedFields() {
		if e.Manager != manager || e.Subresource != "" {
			continue
		}
		if e.Operation == metav1.ManagedFieldsOperationApply {
			return false, nil
		}
		if e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(e.FieldsV1.GetRawReader()); err != nil {
			return false, fmt.Errorf("decoding managed fields of %s: %w", e.Manager, err)
		}
		if set.Has(lastAppliedPath) {
			csa = true
		}
	}
	return csa, nil
}

// clientSideApply predicts a client-side apply of head onto live the way kubectl
// apply computes it (k8s.io/kubectl/pkg/cmd/apply/patcher.go): the modified
// configuration is head with the last-applied annotation set to head itself
// (GetModifiedConfiguration), the original is live's last-applied annotation, and
// the patch is the three-way strategic merge patch of the three with overwrite on
// for built-in kinds, a three-way JSON merge patch for others (custom resources).
// The patch is then applied to live as the apiserver applies it. A three-way patch
// removes only what original had and head no longer has, so fields that are in
// neither, such as server defaults, stay.
func clientSideApply(live, head *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	p, err := threeWayPatch(live, head)
	if err != nil {
		return nil, err
	}
	var patched []byte
	if p.versioned == nil {
		if patched, err = jsonpatch.MergePatch(p.current, p.patch); err != nil {
			return nil, fmt.Errorf("applying the three-way JSON merge patch: %w", err)
		}
	} else if patched, err = strategicpatch.StrategicMergePatch(p.current, p.patch, p.versioned); err != nil {
		return nil, fmt.Errorf("applying the three-way strategic merge patch: %w", err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(patched); err != nil {
		return nil, fmt.Errorf("decoding the patched object: %w", err)
	}
	return out, nil
}

// csaPatch is the patch kubectl apply sends for a client-side apply.
type csaPatch struct {
	patch, current []byte
	typ            types.PatchType
	// versioned is the Go type a strategic merge patch is computed with; nil
	// for a JSON merge patch (kinds without one, such as custom resources).
	versioned runtime.Object
}

// threeWayPatch computes kubectl apply's patch of head onto live
// (k8s.io/kubectl/pkg/cmd/apply/patcher.go patchSimple): clientSideApply applies
// it locally, dry-run mode sends it to the apiserver.
func threeWayPatch(live, head *unstructured.Unstructured) (csaPatch, error) {
	modified, err := modifiedConfiguration(head)
	if err != nil {
		return csaPatch{}, err
	}
	var original []byte
	if la := live.GetAnnotations()[lastAppliedAnnotation]; la != "" {
		original = []byte(la)
	}
	current, err := json.Marshal(live.Object)
	if err != nil {
		return csaPatch{}, fmt.Errorf("encoding the live object: %w", err)
	}
	versioned, err := scheme.Scheme.New(head.GroupVersionKind())
	switch {
	case runtime.IsNotRegisteredError(err):
		patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, current)
		if err != nil {
			return csaPatch{}, fmt.Errorf("computing the three-way JSON merge patch: %w", err)
		}
		return csaPatch{patch: patch, current: current, typ: types.MergePatchType}, nil
	case err != nil:
		return csaPatch{}, err
	}
	meta, err := strategicpatch.NewPatchMetaFromStruct(versioned)
	if err != nil {
		return csaPatch{}, fmt.Errorf("reading patch strategies of %s: %w", head.GroupVersionKind(), err)
	}
	patch, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, meta, true)
	if err != nil {
		return csaPatch{}, fmt.Errorf("computing the three-way strategic merge patch: %w", err)
	}
	return csaPatch{patch: patch, current: current, typ: types.StrategicMergePatchType, versioned: versioned}, nil
}

// modifiedConfiguration is kubectl's GetModifiedConfiguration with annotate on:
// head serialised without the annotation, set as the annotation, serialised again.
func modifiedConfiguration(head *unstructured.Unstructured) ([]byte, error) {
	u := head.DeepCopy()
	ann := u.GetAnnotations()
	delete(ann, lastAppliedAnnotation)
	u.SetAnnotations(ann)
	plain, err := runtime.Encode(unstructured.UnstructuredJSONScheme, u)
	if err != nil {
		return nil, fmt.Errorf("encoding the applied configuration: %w", err)
	}
	if ann == nil {
		ann = map[string]string{}
	}
	ann[lastAppliedAnnotation] = string(plain)
	u.SetAnnotations(ann)
	out, err := runtime.Encode(unstructured.UnstructuredJSONScheme, u)
	if err != nil {
		return nil, fmt.Errorf("encoding the applied configuration: %w", err)
	}
	return out, nil
}

// canonical replaces in obj, which no one else may hold (simulate's fresh
// answer), every scalar the apiserver would store in another form by that form,
// and returns obj: a built-in object is decoded into its Go type and
// encoded again, as the server does on every write, and each leaf of obj takes the
// re-encoded value at the same place (resource.Quantity "2000m" becomes "2",
// "1024Mi" "1Gi"). Nothing is added or removed, so empty structs of the Go types
// never appear. Kinds without a Go type (custom resources) are stored as sent, and
// so is an object the Go type cannot decode (the server refuses it anyway).
func canonical(obj *unstructured.Unstructured) *unstructured.Unstructured {
	typed, err := scheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		return obj
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return obj
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return obj
	}
	canonicalLeaves(obj.Object, back)
	return obj
}

// isCanonical reports whether canonical would leave every scalar of obj as it is;
// false also when it cannot tell (the Go type does not decode obj). simulate asks
// it of head, much smaller than the merged object, to skip canonical on the
// merge: in a server-side apply every scalar of the merged object is live's
// (written by the server, so canonical already), head's (under the same field
// names, so of the same Go type) or the field manager's managed fields (which it
// encodes through the Go type, metav1.ManagedFieldsEntry); restoreDefaults takes
// live's. A scalar's canonical form depends only on its Go type and value (the
// converter decodes each field on its own), so canonical changes nothing in the
// merge when it changes nothing in head. Not for a client-side apply, whose
// merge also takes values from the last-applied annotation.
// TestNoopApplySkipped holds the shortcut to the full simulation and to dry-run.
func isCanonical(obj *unstructured.Unstructured) bool {
	typed, err := scheme.Scheme.New(obj.GroupVersionKind())
	if err != nil {
		return true // no Go type: canonical leaves any object as it is
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return false
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return false
	}
	return sameLeaves(obj.Object, back)
}

// sameLeaves reports whether canonicalLeaves(cur, canon) would change nothing.
func sameLeaves(cur, canon map[string]any) bool {
	for k, v := range cur {
		if cv, ok := canon[k]; ok && !sameLeaf(v, cv) {
			return false
		}
	}
	return true
}

// sameLeaf reports whether canonicalValue(v, cv) is v, unchanged.
func sameLeaf(v, cv any) bool {
	switch x := v.(type) {
	case map[string]any:
		if cm, ok := cv.(map[string]any); ok {
			return sameLeaves(x, cm)
		}
		return true
	case []any:
		if cl, ok := cv.([]any); ok && len(cl) == len(x) {
			for i := range x {
				if !sameLeaf(x[i], cl[i]) {
					return false
				}
			}
		}
		return true
	case nil:
		return true
	}
	switch cv.(type) {
	case map[string]any, []any, nil:
		return true
	}
	switch v.(type) {
	case string, bool, int64, float64:
		// Comparable: equal only with the same type and value.
		return v == cv
	}
	return false
}

// canonicalLeaves overwrites the scalars of cur with those of canon where both
// have a scalar at the same place; maps are matched by key, lists by index.
func canonicalLeaves(cur map[string]any, canon map[string]any) {
	for k, v := range cur {
		cv, ok := canon[k]
		if !ok {
			continue
		}
		cur[k] = canonicalValue(v, cv)
	}
}

func canonicalValue(v, cv any) any {
	switch x := v.(type) {
	case map[string]any:
		if cm, ok := cv.(map[string]any); ok {
			canonicalLeaves(x, cm)
		}
		return x
	case []any:
		if cl, ok := cv.([]any); ok && len(cl) == len(x) {
			for i := range x {
				x[i] = canonicalValue(x[i], cl[i])
			}
		}
		return x
	case nil:
		return x
	}
	switch cv.(type) {
	case map[string]any, []any, nil:
		return v
	}
	return cv
}
