package live

import (
	"bytes"
	"encoding/json"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// skipNoops lets simulate skip the field manager for applies that change nothing
// (applyIsNoop); tests turn it off to compare with the full simulation.
var skipNoops = true

// simulations and noops count simulate's calls and how many of them were found to
// be no-op applies, for tests and benchmarks.
var simulations, noops atomic.Int64

// stripped are the paths the apiserver's field manager never records as anyone's
// (stripMetaManager in k8s.io/apimachinery/pkg/util/managedfields/internal).
var stripped = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// resetFilter is what an apply to the main resource never owns: status (the
// apiserver's reset fields, as in schemaCache.fieldManager).
var resetFilter = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))

// applyIsNoop reports whether the server-side apply of head onto live as manager
// is one the apiserver answers with live unchanged: manager already owns through
// an Apply of head's apiVersion exactly the fields head sets, and merging head
// into live changes no value. It then follows structured-merge-diff's
// merge.Updater.Apply step by step: the merged object equals live; prune removes
// nothing, since the fields manager owned before are the ones it applies now; no
// value changes, so no other manager's field conflicts; and the unchanged object
// makes the field manager return live as it was (managedFieldsUpdater keeps the
// managers' times). Any doubt (no such entry, a set or value that differs, an
// object the schema rejects) answers false, and the apply is simulated in full.
// Client-side-apply managers must have been ruled out by the caller: their
// upgrade changes the managed fields before the apply. live is typed without its
// managed fields, which head never sets (prepare removes them) and the server
// wrote, so the merge and the comparison skip most of a live object.
// TestNoopApplySkipped holds the shortcut to the full simulation and to dry-run.
func applyIsNoop(tc managedfields.TypeConverter, live, head *unstructured.Unstructured, manager string) bool {
	owned := appliedFields(live, manager, head.GetAPIVersion())
	if owned == nil {
		return false
	}
	ht, err := tc.ObjectToTyped(head)
	if err != nil {
		return false
	}
	set, err := ht.ToFieldSet()
	if err != nil {
		return false
	}
	if !resetFilter.Filter(set).Difference(stripped).Equals(owned) {
		return false
	}
	lt, err := tc.ObjectToTyped(withoutManagedFields(live), typed.AllowDuplicates)
	if err != nil {
		return false
	}
	merged, err := lt.Merge(ht)
	if err != nil {
		return false
	}
	return value.EqualsUsing(value.NewFreelistAllocator(), lt.AsValue(), merged.AsValue())
}

// withoutManagedFields is a shallow copy of obj without metadata.managedFields,
// often most of a live object, which the apply config never sets (prepare removes
// it), so neither the merge nor the comparison with live depends on it.
func withoutManagedFields(obj *unstructured.Unstructured) *unstructured.Unstructured {
	md, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	if _, ok := md["managedFields"]; !ok {
		return obj
	}
	out := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		out[k] = v
	}
	m := make(map[string]any, len(md))
	for k, v := range md {
		if k != "managedFields" {
			m[k] = v
		}
	}
	out["metadata"] = m
	return &unstructured.Unstructured{Object: out}
}

// appliedFields is the field set of manager's Apply entry on the main resource of
// live, when there is exactly one and it was made in apiVersion; else nil. It
// reads the entries as they are in the unstructured object, without converting
// every entry to its Go type.
func appliedFields(live *unstructured.Unstructured, manager, apiVersion string) *fieldpath.Set {
	entries, _, _ := unstructured.NestedFieldNoCopy(live.Object, "metadata", "managedFields")
	list, _ := entries.([]any)
	var fields map[string]any
	found := 0
	for _, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		if m["manager"] != manager || m["operation"] != "Apply" {
			continue
		}
		if sub, _ := m["subresource"].(string); sub != "" {
			continue
		}
		found++
		if m["apiVersion"] != apiVersion || m["fieldsType"] != "FieldsV1" {
			return nil
		}
		fields, _ = m["fieldsV1"].(map[string]any)
	}
	if found != 1 || fields == nil {
		return nil
	}
	if set, _, ok := fieldsSet(fields); ok {
		if set == nil {
			return &fieldpath.Set{}
		}
		return set
	}
	return fieldsFromJSON(fields)
}

// fieldsFromJSON is the field set of a FieldsV1 map by way of its JSON, as the
// apiserver decodes it (fieldpath.Set.FromJSON); nil if it is not one.
func fieldsFromJSON(fields map[string]any) *fieldpath.Set {
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
		return nil
	}
	return set
}

// fieldsSet builds the field set of a FieldsV1 map straight from the map, as
// structured-merge-diff's readIterV1 (fieldpath/serialize.go) builds it from the
// map's JSON: "." marks its map's path as a member, a map with no path element in
// it is a member (a leaf), and keys of a path element type it does not know are
// dropped. It returns the children of m and whether m's own path is a member; ok
// is false for anything else than such a map (a key it cannot parse, a value not
// a map), which appliedFields then reads through the JSON, so both give the same
// set (TestFieldsSetMatchesFromJSON).
func fieldsSet(m map[string]any) (children *fieldpath.Set, isMember, ok bool) {
	for k, v := range m {
		if k == "." {
			isMember = true
			continue
		}
		sub, isMap := v.(map[string]any)
		if !isMap {
			return nil, false, false
		}
		pe, err := fieldpath.DeserializePathElement(k)
		if err == fieldpath.ErrUnknownPathElementType {
			continue
		}
		if err != nil {
			return nil, false, false
		}
		grandchildren, childIsMember, ok := fieldsSet(sub)
		if !ok {
			return nil, false, false
		}
		if childIsMember {
			if children == nil {
				children = &fieldpath.Set{}
			}
			children.Members.Insert(pe)
		}
		if grandchildren != nil {
			if children == nil {
				children = &fieldpath.Set{}
			}
			*children.Children.Descend(pe) = *grandchildren
		}
	}
	if children == nil {
		isMember = true
	}
	return children, isMember, true
}
