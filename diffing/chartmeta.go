package diffing

import (
	"maps"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DefaultChartMetadata are the label and annotation keys (path.Match patterns)
// that a chart bump changes on every object it renders without changing what
// runs: Helm's chart label, the app version, the old "chart" label and the
// checksum/* pod-template annotations charts use to roll pods on a config
// change (issue 23). The comment folds their changes into one line per object;
// the repo config's noise.chartMetadata replaces the list.
var DefaultChartMetadata = []string{"helm.sh/chart", "app.kubernetes.io/version", "chart", "checksum/*"}

// chartMetaPaths are the metadata maps whose labels and annotations are chart
// bookkeeping: the object's own and its pod template's (workloads, CronJobs).
var chartMetaPaths = [][]string{
	{"metadata"},
	{"spec", "template", "metadata"},
	{"spec", "jobTemplate", "metadata"},
	{"spec", "jobTemplate", "spec", "template", "metadata"},
}

// chartMetaKey reports whether a label or annotation key matches a pattern.
func chartMetaKey(k string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool {
		ok, _ := path.Match(p, k)
		return ok
	})
}

// chartMetaChanges lists, sorted and once each, the chart bookkeeping keys
// whose labels or annotations differ between two versions of an object.
func chartMetaChanges(a, b map[string]any, patterns []string) []string {
	if len(patterns) == 0 {
		return nil
	}
	var out []string
	for _, p := range chartMetaPaths {
		ma, _, _ := unstructured.NestedMap(a, p...)
		mb, _, _ := unstructured.NestedMap(b, p...)
		for _, field := range []string{"labels", "annotations"} {
			la, _ := ma[field].(map[string]any)
			lb, _ := mb[field].(map[string]any)
			for _, k := range unionKeys(la, lb) {
				x, inA := la[k]
				y, inB := lb[k]
				if chartMetaKey(k, patterns) && (inA != inB || !scalarEqual(x, y)) && !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// withoutChartMeta is a copy of obj without its chart bookkeeping labels and
// annotations, for the diff the comment shows (obj is left as it is; only the
// maps on the way are copied). A labels or annotations map left empty goes.
func withoutChartMeta(obj *unstructured.Unstructured, patterns []string) *unstructured.Unstructured {
	root := maps.Clone(obj.Object)
	for _, p := range chartMetaPaths {
		m := root
		for _, k := range p {
			next, ok := m[k].(map[string]any)
			if !ok {
				m = nil
				break
			}
			next = maps.Clone(next)
			m[k] = next
			m = next
		}
		if m == nil {
			continue
		}
		for _, field := range []string{"labels", "annotations"} {
			l, ok := m[field].(map[string]any)
			if !ok {
				continue
			}
			l = maps.Clone(l)
			maps.DeleteFunc(l, func(k string, _ any) bool { return chartMetaKey(k, patterns) })
			if len(l) == 0 {
				delete(m, field)
			} else {
				m[field] = l
			}
		}
	}
	return &unstructured.Unstructured{Object: root}
}
