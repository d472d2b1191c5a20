package diffing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkModified reports stateful-change and secret-change for objects in both base
// and head.
func (d *differ) checkModified() {
	for k, c := range d.changes {
		if c.Action != ActionModified {
			continue
		}
		b, h := d.base[k].Obj, d.head[k].Obj
		if Stateful(k.GroupKind(), d.opts.StatefulKinds) {
			d.statefulChange(k, b, h)
		}
		if isSecretKey(k) {
			d.secretChange(k, secretValues(b), secretValues(h))
		}
	}
}

// statefulChange reports the fields a PR changes in a stateful object.
func (d *differ) statefulChange(k render.ObjectKey, b, h *unstructured.Unstructured) {
	paths := d.ig.linePaths(k)
	bn, hn := strip(normalizedView(b), paths), strip(normalizedView(h), paths) // read only
	changed := topPaths(bn.Object, hn.Object)
	if metadataOnly(changed) {
		// Labels and annotations are not the object's data: a label added to a
		// Namespace or a StatefulSet applies to its metadata and nothing else
		// (issue 23). Other rules (immutable fields, conflicts, drift) still
		// judge these paths.
		return
	}
	f := Finding{Rule: RuleStatefulChange, Key: k}
	if len(changed) == 1 {
		f.Path = changed[0]
	}
	quoted := make([]string, len(changed))
	for i, p := range changed {
		quoted[i] = code(p)
	}
	f.Message = fmt.Sprintf("This PR changes %s of a stateful %s, which %s applies in place to the running object and its data.",
		joinAnd(quoted, 4), k.Kind, d.who())
	d.add(f)
}

// secretChange reports which Secret keys changed, never their values.
func (d *differ) secretChange(k render.ObjectKey, bv, hv map[string]string) {
	var changed, added, removed []string
	for _, key := range sortedKeys(hv) {
		old, ok := bv[key]
		switch {
		case !ok:
			added = append(added, key)
		case old != hv[key]:
			changed = append(changed, key)
		}
	}
	for _, key := range sortedKeys(bv) {
		if _, ok := hv[key]; !ok {
			removed = append(removed, key)
		}
	}
	var parts []string
	for _, g := range []struct {
		keys []string
		verb string
	}{{changed, "changed"}, {added, "added"}, {removed, "removed"}} {
		if len(g.keys) == 0 {
			continue
		}
		word := "key"
		if len(g.keys) > 1 {
			word = "keys"
		}
		q := make([]string, len(g.keys))
		for i, s := range g.keys {
			q[i] = code(s)
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", word, strings.Join(q, ", "), g.verb))
	}
	if len(parts) == 0 {
		return // only metadata or the data/stringData form changed
	}
	msg := strings.Join(parts, ", ")
	d.add(Finding{Rule: RuleSecretChange, Key: k,
		Message: strings.ToUpper(msg[:1]) + msg[1:] + " (values hidden)."})
}

// metadataOnly says that every changed path is an object's labels or annotations.
func metadataOnly(paths []string) bool {
	for _, p := range paths {
		if p != "/metadata/labels" && p != "/metadata/annotations" {
			return false
		}
	}
	return len(paths) > 0
}

// topPaths lists the fields that differ between two objects, as JSON pointers two
// levels deep under spec and metadata (/spec/replicas, /metadata/labels) and one
// level deep elsewhere (/data).
func topPaths(a, b map[string]any) []string {
	var out []string
	for _, k := range unionKeys(a, b) {
		av, bv := a[k], b[k]
		if valuesEqual(av, bv) {
			continue
		}
		am, aok := av.(map[string]any)
		bm, bok := bv.(map[string]any)
		if (k == "spec" || k == "metadata") && aok && bok {
			for _, sub := range unionKeys(am, bm) {
				if !valuesEqual(am[sub], bm[sub]) {
					out = append(out, joinPointer([]string{k, sub}))
				}
			}
			continue
		}
		out = append(out, joinPointer([]string{k}))
	}
	return out
}

// unionKeys lists the keys of two maps, sorted.
func unionKeys(a, b map[string]any) []string {
	keys := sortedKeys(a)
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// joinAnd lists items as "a, b and c", with at most limit named.
func joinAnd(items []string, limit int) string {
	if len(items) > limit {
		rest := len(items) - limit
		items = append(items[:limit:limit], fmt.Sprintf("%d more", rest))
	}
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
