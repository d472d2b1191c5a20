package render

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// hiddenValue replaces Secret values in YAML output.
const hiddenValue = "(hidden)"

// WriteYAML writes objects as multi-document YAML in the order given, each document
// starting with "---" and a "# Source: <file>" comment, the way `helm template`
// prints. Secret data and stringData values and last-applied annotations are
// replaced by "(hidden)" (keys stay), so the output is safe for logs and comments.
func WriteYAML(w io.Writer, objs []Object) error {
	for _, o := range objs {
		b, err := sigsyaml.Marshal(masked(o.Obj).Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", o.Key, err)
		}
		if _, err := fmt.Fprintf(w, "---\n# Source: %s\n%s", o.Source, b); err != nil {
			return fmt.Errorf("writing %s: %w", o.Key, err)
		}
	}
	return nil
}

// masked returns u with secret values hidden, copying only when needed.
func masked(u *unstructured.Unstructured) *unstructured.Unstructured {
	gvk := u.GroupVersionKind()
	secret := gvk.Group == "" && gvk.Kind == "Secret"
	_, lastApplied := u.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]
	if !secret && !lastApplied {
		return u
	}
	c := u.DeepCopy()
	if secret {
		for _, f := range []string{"data", "stringData"} {
			if m, ok := c.Object[f].(map[string]any); ok {
				for k := range m {
					m[k] = hiddenValue
				}
			}
		}
	}
	if lastApplied {
		ann := c.GetAnnotations()
		ann["kubectl.kubernetes.io/last-applied-configuration"] = hiddenValue
		c.SetAnnotations(ann)
	}
	return c
}
