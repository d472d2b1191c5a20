package live

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
)

// conflictsFrom turns a server-side-apply conflict error (from the local field
// manager or from the apiserver's 409, which carry the same causes) into Conflicts:
// the field as a JSON pointer into head, the manager with its operation and time
// from live's managedFields, and the live and head values. ok is false when err is
// not an apply conflict.
func conflictsFrom(err error, live, applied *unstructured.Unstructured) (out []diffing.Conflict, ok bool) {
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Reason != metav1.StatusReasonConflict || se.ErrStatus.Details == nil {
		return nil, false
	}
	for _, c := range se.ErrStatus.Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict || c.Field == "" {
			continue
		}
		ok = true
		name, sub, update := parseConflictManager(c.Message)
		cf := diffing.Conflict{Manager: name, Operation: string(metav1.ManagedFieldsOperationApply)}
		if update {
			cf.Operation = string(metav1.ManagedFieldsOperationUpdate)
		}
		if e, found := managerEntry(live, name, sub, cf.Operation); found {
			cf.Operation = string(e.Operation)
			cf.Time = timePtr(e.Time)
		}
		ptr, headVal, inHead := resolveFieldPath(applied.Object, c.Field)
		livePtr, liveVal, inLive := resolveFieldPath(live.Object, c.Field)
		switch {
		case inHead:
			cf.Path = ptr
		case inLive:
			cf.Path = livePtr
		default:
			cf.Path = naivePointer(c.Field)
		}
		if inHead {
			cf.Head = headVal
		}
		if inLive {
			cf.Live = liveVal
		}
		out = append(out, cf)
	}
	slices.SortFunc(out, func(a, b diffing.Conflict) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Manager, b.Manager)
	})
	return out, ok
}

// parseConflictManager reads the manager out of a conflict cause message, which the
// apiserver writes as `conflict with "name"[ with subresource "sub"][ using
// apps/v1[ at <time>]]`; "using" marks an Update operation.
func parseConflictManager(msg string) (name, subresource string, update bool) {
	rest, found := strings.CutPrefix(msg, "conflict with ")
	if !found {
		return msg, "", false
	}
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return rest, "", false
	}
	name, _ = strconv.Unquote(q)
	rest = rest[len(q):]
	if after, found := strings.CutPrefix(rest, " with subresource "); found {
		if q, err := strconv.QuotedPrefix(after); err == nil {
			subresource, _ = strconv.Unquote(q)
			rest = after[len(q):]
		}
	}
	return name, subresource, strings.HasPrefix(rest, " using ")
}

// managerEntry finds the managedFields entry of a manager, preferring the one with
// the given operation.
func managerEntry(live *unstructured.Unstructured, name, subresource, operation string) (metav1.ManagedFieldsEntry, bool) {
	var fallback *metav1.ManagedFieldsEntry
	entries := live.GetManagedFields()
	for i, e := range entries {
		if e.Manager != name || e.Subresource != subresource {
			continue
		}
		if string(e.Operation) == operation {
			return e, true
		}
		if fallback == nil {
			fallback = &entries[i]
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return metav1.ManagedFieldsEntry{}, false
}

// resolveFieldPath finds the field a structured-merge-diff path string
// (".spec.containers[name=\"web\"].image", ".data.app.properties", "[=\"x\"]",
// "[3]") names in obj, and returns it as a JSON pointer with list indices, with its
// value. Field names may contain dots, so names are matched against obj's keys,
// backtracking when one is a prefix of another.
func resolveFieldPath(obj map[string]any, path string) (string, any, bool) {
	segs, v, ok := resolve(obj, path, nil)
	if !ok {
		return "", nil, false
	}
	return pointer(segs), v, true
}

func resolve(cur any, rest string, segs []string) ([]string, any, bool) {
	if rest == "" {
		return segs, cur, true
	}
	switch rest[0] {
	case '.':
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, nil, false
		}
		rest = rest[1:]
		keys := make([]string, 0, len(m))
		for k := range m {
			if strings.HasPrefix(rest, k) && (len(rest) == len(k) || rest[len(k)] == '.' || rest[len(k)] == '[') {
				keys = append(keys, k)
			}
		}
		// The longest matching name first: "app.properties" before "app".
		slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
		for _, k := range keys {
			if s, v, ok := resolve(m[k], rest[len(k):], append(slices.Clip(segs), k)); ok {
				return s, v, true
			}
		}
		return nil, nil, false
	case '[':
		l, ok := cur.([]any)
		if !ok {
			return nil, nil, false
		}
		match, after, ok := parseListElement(rest)
		if !ok {
			return nil, nil, false
		}
		for i, item := range l {
			if match(i, item) {
				return resolve(item, after, append(slices.Clip(segs), strconv.Itoa(i)))
			}
		}
	}
	return nil, nil, false
}

// parseListElement parses one bracketed list element of a path string: an index
// "[3]", a set value "[=v]" or associative keys "[k1=v1,k2=v2]" (values in JSON),
// and returns a matcher for list items with the rest of the path.
func parseListElement(s string) (match func(int, any) bool, rest string, ok bool) {
	body := s[1:]
	if end := strings.IndexByte(body, ']'); end > 0 {
		if i, err := strconv.Atoi(body[:end]); err == nil {
			return func(j int, _ any) bool { return j == i }, body[end+1:], true
		}
	}
	if strings.HasPrefix(body, "=") {
		v, after, ok := jsonPrefix(body[1:])
		if !ok || !strings.HasPrefix(after, "]") {
			return nil, "", false
		}
		return func(_ int, item any) bool { return sameJSON(item, v) }, after[1:], true
	}
	keys := map[string]any{}
	for {
		eq := strings.IndexByte(body, '=')
		if eq <= 0 {
			return nil, "", false
		}
		name := body[:eq]
		v, after, ok := jsonPrefix(body[eq+1:])
		if !ok {
			return nil, "", false
		}
		keys[name] = v
		if strings.HasPrefix(after, ",") {
			body = after[1:]
			continue
		}
		if !strings.HasPrefix(after, "]") {
			return nil, "", false
		}
		rest = after[1:]
		break
	}
	return func(_ int, item any) bool {
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range keys {
			if !sameJSON(m[k], v) {
				return false
			}
		}
		return true
	}, rest, true
}

// jsonPrefix decodes the JSON value at the start of s.
func jsonPrefix(s string) (any, string, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "", false
	}
	return v, s[dec.InputOffset():], true
}

// sameJSON compares two values by their JSON form, so int64 7 equals float64 7.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func pointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// naivePointer turns a path string into a pointer when the field is in neither
// object (it should not happen); dots become slashes.
func naivePointer(path string) string {
	return "/" + strings.ReplaceAll(strings.TrimPrefix(path, "."), ".", "/")
}

// timePtr returns t in UTC, or nil.
func timePtr(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
