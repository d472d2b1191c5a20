package diffing

import (
	"strings"

	"github.com/driftpreview/driftpreview/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ImageChange is one container image a pull request adds, removes or changes
// (issue 23): the most asked question of a chart bump. Before is "" for a
// container the PR adds, After "" for one it removes.
type ImageChange struct {
	Object render.ObjectKey `json:"object"`
	// List is the pod spec list the container is in: containers,
	// initContainers or ephemeralContainers.
	List      string `json:"list"`
	Container string `json:"container"`
	Before    string `json:"before,omitempty"`
	After     string `json:"after,omitempty"`
}

// podSpecPaths are where each workload kind holds its pod spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerLists are the pod spec's lists of containers, in the order a pod
// starts them.
var containerLists = []string{"initContainers", "containers", "ephemeralContainers"}

// ImageChanges lists the container images that differ between two versions of
// one object (either may be nil: created or deleted), matching containers by
// list and name, in the pod spec's order.
func ImageChanges(k render.ObjectKey, base, head *unstructured.Unstructured) []ImageChange {
	if _, ok := podSpecPaths[k.Kind]; !ok {
		return nil
	}
	var out []ImageChange
	for _, list := range containerLists {
		before, after := containerImages(base, k.Kind, list), containerImages(head, k.Kind, list)
		for _, c := range after {
			if img, ok := lookupImage(before, c.name); !ok || img != c.image {
				out = append(out, ImageChange{Object: k, List: list, Container: c.name, Before: img, After: c.image})
			}
		}
		for _, c := range before {
			if _, ok := lookupImage(after, c.name); !ok {
				out = append(out, ImageChange{Object: k, List: list, Container: c.name, Before: c.image})
			}
		}
	}
	return out
}

type namedImage struct{ name, image string }

// containerImages lists one container list of the object's pod spec.
func containerImages(o *unstructured.Unstructured, kind, list string) []namedImage {
	if o == nil {
		return nil
	}
	path := append(append([]string(nil), podSpecPaths[kind]...), list)
	v, _, _ := unstructured.NestedFieldNoCopy(o.Object, path...)
	items, _ := v.([]any)
	var out []namedImage
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		name, _ := m["name"].(string)
		image, _ := m["image"].(string)
		out = append(out, namedImage{name, image})
	}
	return out
}

func lookupImage(l []namedImage, name string) (string, bool) {
	for _, c := range l {
		if c.name == name {
			return c.image, true
		}
	}
	return "", false
}

// SplitImage splits an image reference into its repository and its tag or
// digest (":1.4.0", "@sha256:…"; "" when it has neither), as a registry
// reads it: a colon before the last slash is a registry's port.
func SplitImage(ref string) (repo, version string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		return ref[:i], ref[i:]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') {
		return ref[:i], ref[i:]
	}
	return ref, ""
}
