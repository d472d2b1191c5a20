package diffing

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/driftpreview/driftpreview/render"
)

// MaskedValue replaces every Secret value before anything is shown. It is a fixed
// text, not a hash, so it reveals nothing about the value, not even whether two
// Secrets hold the same one.
const MaskedValue = "<hidden>"

// changedMarker is what a diff line of a masked Secret value says when the value
// behind it changed: the line changes, the value stays hidden.
const changedMarker = "# changed (value hidden)"

// changedSentinel stands in for a changed masked value while an object is
// marshalled; unifiedYAML swaps it for MaskedValue plus changedMarker.
const changedSentinel = "DRIFTPREVIEW-MASKED-VALUE-CHANGED"

// lastApplied is the client-side-apply annotation: a full copy of the object as
// last applied, Secret values included, so it is never shown.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// noisyAnnotations are set by the API server or controllers and say nothing about
// what the PR or the merge changes.
var noisyAnnotations = []string{
	lastApplied,
	"deployment.kubernetes.io/revision",
	"control-plane.alpha.kubernetes.io/leader",
}

// isSecretKey reports whether key is a core Secret, the kind whose values are
// masked everywhere.
func isSecretKey(k render.ObjectKey) bool { return k.Group == "" && k.Kind == "Secret" }

func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && isSecretKey(render.KeyOf(obj))
}

// Mask returns a copy of obj that is safe to print: Secret data and stringData
// values become MaskedValue (keys stay, so a reader sees which keys exist), and the
// last-applied-configuration annotation, which copies the whole object, is removed
// from every kind. Everything that prints objects calls it first.
func Mask(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	out := obj.DeepCopy()
	if ann := out.GetAnnotations(); ann != nil {
		if _, ok := ann[lastApplied]; ok {
			delete(ann, lastApplied)
			setAnnotations(out, ann)
		}
	}
	if isSecret(out) {
		for _, field := range []string{"data", "stringData"} {
			m, ok := out.Object[field].(map[string]any)
			if !ok {
				if _, present := out.Object[field]; present {
					out.Object[field] = MaskedValue
				}
				continue
			}
			for k := range m {
				m[k] = MaskedValue
			}
		}
	}
	return out
}

// maskRead is Mask for a reader: obj itself when Mask would change nothing (not
// a Secret, no last-applied annotation), else Mask's copy.
func maskRead(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || isSecret(obj) {
		return Mask(obj)
	}
	if md, ok := obj.Object["metadata"].(map[string]any); ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if _, ok := ann[lastApplied]; ok {
				return Mask(obj)
			}
		}
	}
	return obj
}

// serverMetadata are the metadata fields the API server sets by itself.
var serverMetadata = []string{
	"managedFields", "resourceVersion", "uid", "generation", "creationTimestamp",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// Normalize returns a copy of obj without what the API server sets by itself
// (status, managedFields, resourceVersion, uid, generation, timestamps, selfLink,
// revision annotations), so that base, head and live objects compare on what a
// person or a controller declared.
func Normalize(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return normalize(obj, true)
}

// normalizedView is Normalize for readers: the same content, but the values it
// keeps as they are (spec, data, labels…) are obj's own, not copies. Only the
// maps Normalize changes (the top level, metadata, annotations, a Secret's data)
// are new. Whoever changes the result must copy it first (Mask, strip do).
func normalizedView(obj *unstructured.Unstructured) *unstructured.Unstructured {
	return normalize(obj, false)
}

func normalize(obj *unstructured.Unstructured, deep bool) *unstructured.Unstructured {
	if obj == nil {
		return nil
	}
	if obj.Object == nil {
		return &unstructured.Unstructured{}
	}
	cp := func(v any) any { return v }
	if deep {
		cp = runtime.DeepCopyJSONValue
	}
	// A copy without status and the server-set metadata, which are not copied
	// at all: managedFields are often most of a live object.
	out := &unstructured.Unstructured{Object: make(map[string]any, len(obj.Object))}
	for k, v := range obj.Object {
		switch md, isMap := v.(map[string]any); {
		case k == "status":
		case k == "metadata" && isMap:
			mdc := make(map[string]any, len(md))
			for f, fv := range md {
				if !slices.Contains(serverMetadata, f) {
					mdc[f] = cp(fv)
				}
			}
			out.Object[k] = mdc
		default:
			out.Object[k] = cp(v)
		}
	}
	md, ok := out.Object["metadata"].(map[string]any)
	if ok {
		if ann, ok := md["annotations"].(map[string]any); ok {
			if !deep && ann != nil {
				ann = maps.Clone(ann)
				md["annotations"] = ann
			}
			for _, a := range noisyAnnotations {
				delete(ann, a)
			}
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
		if l, ok := md["labels"].(map[string]any); ok && len(l) == 0 {
			delete(md, "labels")
		}
		if f, ok := md["finalizers"].([]any); ok && len(f) == 0 {
			delete(md, "finalizers")
		}
	}
	if _, folds := out.Object["stringData"].(map[string]any); folds && !deep && isSecret(out) {
		if data, ok := out.Object["data"].(map[string]any); ok {
			out.Object["data"] = maps.Clone(data)
		}
	}
	foldStringData(out)
	return out
}

// foldStringData moves a Secret's stringData into data, base64-encoded, as the API
// server does on every write. Without it a rendered Secret written with stringData
// never compares equal to its live self, and a simulated apply (which has no
// defaulting) predicts a stringData field that the server would never keep.
func foldStringData(u *unstructured.Unstructured) {
	sd, ok := u.Object["stringData"].(map[string]any)
	if !isSecret(u) || !ok {
		return
	}
	data, _ := u.Object["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		str, _ := v.(string)
		data[k] = base64.StdEncoding.EncodeToString([]byte(str))
	}
	u.Object["data"] = data
	delete(u.Object, "stringData")
}

func setAnnotations(u *unstructured.Unstructured, ann map[string]string) {
	if len(ann) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "annotations")
		return
	}
	u.SetAnnotations(ann)
}

// secretValues gives a Secret's effective values by key, the way the API server
// stores them: data decoded, stringData over it. The result is used only to
// compare values and never leaves the package.
func secretValues(obj *unstructured.Unstructured) map[string]string {
	if !isSecret(obj) {
		return nil
	}
	vals := map[string]string{}
	if m, ok := obj.Object["data"].(map[string]any); ok {
		for k, v := range m {
			s, _ := v.(string)
			if b, err := base64.StdEncoding.DecodeString(s); err == nil {
				vals[k] = string(b)
			} else {
				vals[k] = "\x00raw:" + s
			}
		}
	}
	if m, ok := obj.Object["stringData"].(map[string]any); ok {
		for k, v := range m {
			s, _ := v.(string)
			vals[k] = s
		}
	}
	return vals
}

// maskPair masks two versions of one object for a diff. For Secrets, a key whose
// value differs between oldVals and newVals gets the changed marker on the new
// side, so the diff shows that it changed without showing either value. The
// results are for reading: an object Mask would not change is returned as it is.
func maskPair(oldObj, newObj *unstructured.Unstructured, oldVals, newVals map[string]string) (*unstructured.Unstructured, *unstructured.Unstructured) {
	mo, mn := maskRead(oldObj), maskRead(newObj)
	if mn == nil || !isSecret(mn) || oldVals == nil {
		return mo, mn
	}
	for _, field := range []string{"data", "stringData"} {
		m, ok := mn.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			ov, inOld := oldVals[k]
			nv, inNew := newVals[k]
			if inOld && inNew && ov != nv && oldHasField(mo, field, k) {
				m[k] = changedSentinel
			}
		}
	}
	return mo, mn
}

func oldHasField(obj *unstructured.Unstructured, field, key string) bool {
	if obj == nil {
		return false
	}
	m, ok := obj.Object[field].(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[key]
	return ok
}

// scrubSecrets removes any Secret value (plain or base64) from text that came from
// outside, such as an API error, before it goes into a message.
func scrubSecrets(text string, objs ...*unstructured.Unstructured) string {
	for _, o := range objs {
		if !isSecret(o) {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			m, _ := o.Object[field].(map[string]any)
			for _, v := range m {
				s, _ := v.(string)
				if len(s) < 3 {
					continue
				}
				text = strings.ReplaceAll(text, s, MaskedValue)
				if field == "data" {
					if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) >= 3 {
						text = strings.ReplaceAll(text, string(b), MaskedValue)
					}
				}
			}
		}
	}
	return text
}
