package diffing

import (
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
}

// MaxFieldChanges is how many changed fields Change.Fields lists per object;
// Change.MoreFields counts the rest.
const MaxFieldChanges = 20

// FieldChanges lists the fields that differ between two versions of one object
// (its content maps) in the order of the object's keys (sorted, as the
// diff shows them), at most limit of them (limit <= 0: all),
// and how many more there are. Maps are compared key by key; lists whose items
// are all maps with a distinct string "name" (containers, env, ports, volumes)
// are compared item by item by name, other lists of the same length index by
// index, and lists of different lengths as one value.
func FieldChanges(before, after map[string]any, limit int) ([]FieldChange, int) {
	var out []FieldChange
	fieldChanges(before, after, "", &out)
	if limit > 0 && len(out) > limit {
		return out[:limit], len(out) - limit
	}
	return out, 0
}

func fieldChanges(a, b any, path string, out *[]FieldChange) {
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
				fieldChanges(x, y, p, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		an, aok := namedItems(av)
		bn, bok := namedItems(bv)
		if aok && bok {
			for _, name := range unionKeys(an, bn) {
				x, inA := an[name]
				y, inB := bn[name]
				p := path + "[name=" + name + "]"
				switch {
				case !inA:
					*out = append(*out, FieldChange{Path: p, After: fieldValue(y), Added: true})
				case !inB:
					*out = append(*out, FieldChange{Path: p, Before: fieldValue(x), Removed: true})
				default:
					fieldChanges(x, y, p, out)
				}
			}
			return
		}
		if len(av) == len(bv) {
			for i := range av {
				fieldChanges(av[i], bv[i], path+"["+strconv.Itoa(i)+"]", out)
			}
			return
		}
	default:
		if scalarEqual(a, b) {
			return
		}
	}
	// A scalar changed, or a value changed type, or a list its length.
	*out = append(*out, FieldChange{Path: path, Before: fieldValue(a), After: fieldValue(b)})
}

// namedItems maps a list's items by their "name" when every item is a map with a
// distinct, non-empty string name (the lists Kubernetes merges by name).
func namedItems(l []any) (map[string]any, bool) {
	if len(l) == 0 {
		return map[string]any{}, true
	}
	m := make(map[string]any, len(l))
	for _, it := range l {
		o, ok := it.(map[string]any)
		if !ok {
			return nil, false
		}
		name, ok := o["name"].(string)
		if !ok || name == "" {
			return nil, false
		}
		if _, dup := m[name]; dup {
			return nil, false
		}
		m[name] = it
	}
	return m, true
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
