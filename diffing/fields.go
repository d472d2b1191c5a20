package diffing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/driftpreview/driftpreview/render"
)

// splitPointer splits a JSON pointer ("/metadata/annotations/a~1b") into unescaped
// segments. "" and "/" are the whole document.
func splitPointer(p string) []string {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// joinPointer builds a JSON pointer from unescaped segments.
func joinPointer(segs []string) string {
	var sb strings.Builder
	for _, s := range segs {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return sb.String()
}

// getPath returns the value at a JSON pointer and whether it exists.
func getPath(obj map[string]any, p string) (any, bool) {
	var cur any = obj
	for _, s := range splitPointer(p) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[s]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// removePath deletes every field a JSON pointer names, where a "*" segment matches
// any key or index. Lists lose the element; parents are kept.
func removePath(obj map[string]any, p string) {
	segs := splitPointer(p)
	if len(segs) == 0 {
		return
	}
	removeSegs(obj, segs)
}

func removeSegs(cur any, segs []string) any {
	s, rest := segs[0], segs[1:]
	switch c := cur.(type) {
	case map[string]any:
		for k, v := range c {
			if s != "*" && s != k {
				continue
			}
			if len(rest) == 0 {
				delete(c, k)
			} else {
				c[k] = removeSegs(v, rest)
			}
		}
		return c
	case []any:
		if len(rest) == 0 {
			if s == "*" {
				return []any{}
			}
			i, err := strconv.Atoi(s)
			if err != nil || i < 0 || i >= len(c) {
				return c
			}
			return append(c[:i:i], c[i+1:]...)
		}
		for i := range c {
			if s == "*" || s == strconv.Itoa(i) {
				c[i] = removeSegs(c[i], rest)
			}
		}
		return c
	}
	return cur
}

// pointerCovers reports whether rule pointer r names p or one of its parents; "*"
// in r matches any one segment.
func pointerCovers(r, p string) bool {
	rs, ps := splitPointer(r), splitPointer(p)
	if len(rs) > len(ps) {
		return false
	}
	for i, s := range rs {
		if s != "*" && s != ps[i] {
			return false
		}
	}
	return true
}

// leafDiffs lists the JSON pointers where want sets a value that got lacks or holds
// differently. Maps recurse; lists of the same length recurse by index, other lists
// are one leaf. Fields only in got are not listed: a server-side apply of want
// leaves them alone.
func leafDiffs(want, got any, prefix []string, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, joinPointer(prefix))
			return
		}
		for _, k := range sortedKeys(w) {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, joinPointer(append(prefix, k)))
				continue
			}
			leafDiffs(w[k], gv, append(prefix[:len(prefix):len(prefix)], k), out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			*out = append(*out, joinPointer(prefix))
			return
		}
		for i := range w {
			leafDiffs(w[i], g[i], append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), out)
		}
	default:
		if !scalarEqual(want, got) {
			*out = append(*out, joinPointer(prefix))
		}
	}
}

// subset reports whether every field want sets is in got with the same value, the
// way a server-side apply of want onto got would change nothing. Lists must have the
// same length.
func subset(want, got any) bool {
	var d []string
	leafDiffs(want, got, nil, &d)
	return len(d) == 0
}

// scalarEqual compares scalars, treating int64 and float64 of the same number as
// equal (YAML and JSON decoding differ there).
func scalarEqual(a, b any) bool {
	if af, ok := number(a); ok {
		bf, ok := number(b)
		return ok && af == bf
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// valuesEqual is a deep equality that treats numbers by value.
func valuesEqual(a, b any) bool {
	return subset(a, b) && subset(b, a)
}

// formatValue renders a field value for a message: scalars plainly, anything else
// as compact JSON, cut to a readable length.
func formatValue(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "null"
	case string:
		s = x
	case bool, int64, int, float64, int32:
		s = fmt.Sprint(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			s = fmt.Sprint(x)
		} else {
			s = string(b)
		}
	}
	return render.Shorten(s, 80)
}

// owner is one field manager's claim on a field of a live object.
type owner struct {
	Manager   string
	Operation string
	Time      *time.Time
}

// fieldOwners maps JSON pointers of the live object to the managers that own them,
// from metadata.managedFields. List elements addressed by key or value (k:, v:) are
// resolved to their index in this object.
func fieldOwners(live *unstructured.Unstructured) map[string][]owner {
	out := map[string][]owner{}
	if live == nil {
		return out
	}
	for _, mf := range live.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.GetRawBytes())); err != nil {
			continue // one unreadable entry must not hide the others
		}
		var t *time.Time
		if mf.Time != nil {
			tt := mf.Time.UTC()
			t = &tt
		}
		o := owner{Manager: mf.Manager, Operation: string(mf.Operation), Time: t}
		set.Iterate(func(p fieldpath.Path) {
			if ptr, ok := resolvePath(live.Object, p); ok {
				out[ptr] = append(out[ptr], o)
			}
		})
	}
	return out
}

// resolvePath turns a structured-merge-diff path into a JSON pointer into obj.
func resolvePath(obj map[string]any, p fieldpath.Path) (string, bool) {
	var cur any = obj
	segs := make([]string, 0, len(p))
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return "", false
			}
			segs = append(segs, *pe.FieldName)
			cur = m[*pe.FieldName]
		case pe.Key != nil:
			idx, ok := findItem(cur, func(e any) bool {
				em, ok := e.(map[string]any)
				if !ok {
					return false
				}
				for _, f := range *pe.Key {
					if !scalarEqual(em[f.Name], f.Value.Unstructured()) {
						return false
					}
				}
				return true
			})
			if !ok {
				return "", false
			}
			segs = append(segs, strconv.Itoa(idx))
			cur = cur.([]any)[idx]
		case pe.Value != nil:
			want := (*pe.Value).Unstructured()
			idx, ok := findItem(cur, func(e any) bool { return valuesEqual(e, want) })
			if !ok {
				return "", false
			}
			segs = append(segs, strconv.Itoa(idx))
			cur = cur.([]any)[idx]
		case pe.Index != nil:
			l, ok := cur.([]any)
			if !ok || *pe.Index >= len(l) {
				return "", false
			}
			segs = append(segs, strconv.Itoa(*pe.Index))
			cur = l[*pe.Index]
		}
	}
	return joinPointer(segs), true
}

// findItem is the index of the first element of the list cur for which match
// holds; false when cur is no list or nothing matches.
func findItem(cur any, match func(any) bool) (int, bool) {
	l, ok := cur.([]any)
	if !ok {
		return 0, false
	}
	for i, e := range l {
		if match(e) {
			return i, true
		}
	}
	return 0, false
}

// ownersOf finds who owns p: the managers of p itself or, failing that, of its
// nearest owned parent (atomic lists and maps are owned as a whole).
func ownersOf(owners map[string][]owner, p string) []owner {
	segs := splitPointer(p)
	for n := len(segs); n > 0; n-- {
		if o, ok := owners[joinPointer(segs[:n])]; ok {
			return o
		}
	}
	return nil
}
