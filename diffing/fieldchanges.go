package diffing

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// FieldChange is one changed field of a modified object, keyed by a path a
// person reads: spec.replicas, spec.template.spec.containers[name=app].image,
// metadata.labels["app.kubernetes.io/name"].
type FieldChange struct {
	Path string
	// Before and After are the values, written short (scalars as they are,
	// maps and lists as compact JSON, cut at 80 bytes); "" on the side where
	// the field is absent (see Added and Removed). Secret values are masked.
	Before, After string
	// Added and Removed say the field is only at head, or only at base.
	Added, Removed bool
	// Reordered says a keyed list holds the same items in another order:
	// Before and After are its keys in each order ("app, proxy").
	Reordered bool
	// Lines is how many lines of a multi-line string (embedded YAML, a
	// script) changed; Before and After are then "" (the diff shows them).
	Lines int
}

// MaxFieldChanges is how many changed fields Change.Fields lists per object;
// Change.MoreFields counts the rest.
const MaxFieldChanges = 20

// FieldChanges lists the fields that differ between two versions of one object
// (its content maps) in the order of the object's keys (sorted, as the
// diff shows them), at most limit of them (limit <= 0: all),
// and how many more there are. Maps are compared key by key; lists whose items
// are all maps with a distinct merge key (mergeKeys: name for containers, env
// and volumes, containerPort for ports, mountPath for volumeMounts…) are
// compared item by item by that key, and the same items in another order are
// one Reordered change; other lists of the same length index by index (a pure
// reorder is one Reordered change), and lists of different lengths as one
// value. A multi-line string that changed is counted in Lines.
//
// The summary is our own rather than homeport/dyff's engine (evaluated for
// issue 23, v1.12.0): dyff compares yaml.v3 node trees, so every masked object
// would be marshalled once more (marshalling was a fifth of a run's CPU, see
// objectDiffFields); it matches list items by a guessed identifier (name, key,
// id), not by Kubernetes' strategic merge keys (containerPort, mountPath, ip);
// and it brings about ten modules into the bot (gonvenience's bunt, neat, term,
// text and ytbx, go-colorful, hashstructure, go-levenshtein, cobra) for output
// we would not use. Its Go version (1.25) would fit.
func FieldChanges(before, after map[string]any, limit int) ([]FieldChange, int) {
	var out []FieldChange
	fieldChanges(before, after, "", "", &out)
	if limit > 0 && len(out) > limit {
		return out[:limit], len(out) - limit
	}
	return out, 0
}

func fieldChanges(a, b any, path, field string, out *[]FieldChange) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range unionKeys(av, bv) {
			x, inA := av[k]
			y, inB := bv[k]
			p := joinField(path, k)
			switch {
			case !inA:
				*out = append(*out, FieldChange{Path: p, After: fieldValue(y), Added: true})
			case !inB:
				*out = append(*out, FieldChange{Path: p, Before: fieldValue(x), Removed: true})
			default:
				fieldChanges(x, y, p, k, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		if keyedChanges(av, bv, path, field, out) {
			return
		}
		if len(av) == len(bv) {
			if reordered(av, bv) {
				*out = append(*out, FieldChange{Path: path, Before: fieldValue(a), After: fieldValue(b), Reordered: true})
				return
			}
			for i := range av {
				fieldChanges(av[i], bv[i], path+"["+strconv.Itoa(i)+"]", "", out)
			}
			return
		}
	case string:
		if bs, ok := b.(string); ok && av != bs && (strings.Contains(av, "\n") || strings.Contains(bs, "\n")) {
			*out = append(*out, FieldChange{Path: path, Lines: changedLines(av, bs)})
			return
		}
	}
	if scalarEqual(a, b) {
		return
	}
	// A scalar changed, or a value changed type, or a list its length.
	*out = append(*out, FieldChange{Path: path, Before: fieldValue(a), After: fieldValue(b)})
}

// mergeKeys are the keys Kubernetes' strategic merge patch matches list items
// by (the patchMergeKey tags of k8s.io/api), by the list's field name; a list
// not named here is tried by "name". The first key every item of both lists
// has, distinct, is used.
var mergeKeys = map[string][]string{
	"ports":                     {"containerPort", "port"}, // Container.ports, ServiceSpec.ports
	"volumeMounts":              {"mountPath"},
	"volumeDevices":             {"devicePath"},
	"hostAliases":               {"ip"},
	"conditions":                {"type"},
	"readinessGates":            {"conditionType"},
	"topologySpreadConstraints": {"topologyKey"},
	"ownerReferences":           {"uid"},
}

// keyedChanges compares two lists item by item by their merge key, and
// reports whether it could: every item of both is a map with a distinct
// scalar value of the key. The same keys in another order add one
// Reordered change before the changes of the items.
func keyedChanges(a, b []any, path, field string, out *[]FieldChange) bool {
	keys, ok := mergeKeys[field]
	if !ok {
		keys = []string{"name"}
	}
	for _, key := range keys {
		ak, am, aok := keyedItems(a, key)
		bk, bm, bok := keyedItems(b, key)
		if !aok || !bok {
			continue
		}
		if common(ak, bm) > 1 && !slices.Equal(inBoth(ak, bm), inBoth(bk, am)) {
			*out = append(*out, FieldChange{Path: path, Before: strings.Join(inBoth(ak, bm), ", "),
				After: strings.Join(inBoth(bk, am), ", "), Reordered: true})
		}
		for _, id := range unionKeys(am, bm) {
			x, inA := am[id]
			y, inB := bm[id]
			p := path + "[" + key + "=" + id + "]"
			switch {
			case !inA:
				*out = append(*out, FieldChange{Path: p, After: fieldValue(y), Added: true})
			case !inB:
				*out = append(*out, FieldChange{Path: p, Before: fieldValue(x), Removed: true})
			default:
				fieldChanges(x, y, p, "", out)
			}
		}
		return true
	}
	return false
}

// keyedItems lists a list's items' key values in order and maps the items by
// them, when every item is a map with a distinct, non-empty scalar value of
// key (an empty list is keyed by any key).
func keyedItems(l []any, key string) ([]string, map[string]any, bool) {
	ids := make([]string, 0, len(l))
	m := make(map[string]any, len(l))
	for _, it := range l {
		o, ok := it.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		var id string
		switch v := o[key].(type) {
		case string:
			id = v
		case int64, float64, int, bool:
			id = formatValue(v)
		}
		if id == "" {
			return nil, nil, false
		}
		if _, dup := m[id]; dup {
			return nil, nil, false
		}
		m[id] = it
		ids = append(ids, id)
	}
	return ids, m, true
}

// inBoth is ids without those other does not have, in order.
func inBoth(ids []string, other map[string]any) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { _, ok := other[id]; return !ok })
}

func common(ids []string, other map[string]any) int { return len(inBoth(ids, other)) }

// reordered reports whether b holds a's items in another order (and is not a).
func reordered(a, b []any) bool {
	if JSONEqual(a, b) {
		return false
	}
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i := range a {
		as[i], bs[i] = formatValueFull(a[i]), formatValueFull(b[i])
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// joinField appends a map key to a path: .key for a plain name, ["key"] for one
// with dots, slashes or other characters a reader would misread.
func joinField(path, k string) string {
	plain := k != ""
	for _, c := range k {
		if !(c == '_' || c == '-' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(k) + "]"
	case path == "":
		return k
	}
	return path + "." + k
}

// fieldValue writes a value for a FieldChange; a changed masked Secret value
// reads as MaskedValue, said to be changed.
func fieldValue(v any) string {
	return strings.ReplaceAll(formatValue(v), changedSentinel, MaskedValue+" (changed)")
}

// formatValueFull writes a value as JSON, uncut, to compare list items.
func formatValueFull(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return formatValue(v)
	}
	return string(b)
}
