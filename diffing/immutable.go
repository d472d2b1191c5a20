package diffing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// immutableField is one field the API refuses to update on one set of kinds.
type immutableField struct {
	kinds []schema.GroupKind
	path  string
	// check, when set, replaces the default "head sets it and it differs"; it
	// returns whether the update is refused and a short "from → to" for messages.
	check func(head, ref, base *unstructured.Unstructured, refIsLive bool) (bool, string)
}

var (
	gkStatefulSet = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	gkService     = schema.GroupKind{Kind: "Service"}
	gkPVC         = schema.GroupKind{Kind: "PersistentVolumeClaim"}
)

// immutableEntry is one row of immutableTable (immutable_table.go), which
// fixtures/immutable generates from the apiserver's answers and checks in make
// test: group, kind, JSON pointer ("*" for every list item) and when the update is
// refused ("" any change, "decrease", or "immutable": while `immutable: true`).
type immutableEntry struct {
	group, kind, path, when string
}

// immutableFields is the table of fields the API server refuses to update, with
// how each change is judged.
var immutableFields = buildImmutableFields(immutableTable)

func buildImmutableFields(table []immutableEntry) []immutableField {
	out := make([]immutableField, 0, len(table))
	for _, e := range table {
		gk := schema.GroupKind{Group: e.group, Kind: e.kind}
		f := immutableField{kinds: []schema.GroupKind{gk}, path: e.path}
		switch {
		case e.when == "decrease":
			f.check = quantityDecreases(e.path)
		case e.when == "immutable" && e.path == "/immutable":
			f.check = immutableUnset
		case e.when == "immutable" && (e.path == "/data" || e.path == "/binaryData"):
			f.check = immutableData(strings.TrimPrefix(e.path, "/"))
		case e.when == "immutable":
			f.check = whileImmutable(e.path)
		case gk == gkService && (e.path == "/spec/clusterIP" || e.path == "/spec/clusterIPs"):
			// The apiserver keeps the allocated IP when head leaves it empty
			// (registry/core/service: patchAllocatedValues).
			f.check = clusterIPChanged(e.path)
		}
		out = append(out, f)
	}
	return out
}

// checkImmutable compares each head object with what it updates — the live object
// when live was read, else the base render — field by field through the table.
// Objects whose update the apiserver itself judged (dry-run) are skipped: its
// answer is the finding, and one refusal gives one finding.
func (d *differ) checkImmutable() {
	for _, ho := range d.in.Head.Objects {
		k := ho.Key
		if d.serverJudged[k] || d.skipped[k] {
			continue
		}
		var ref, base *unstructured.Unstructured
		if b := d.base[k]; b != nil {
			base = b.Obj
		}
		if d.liveOK {
			ref = d.in.Live.Objects[k]
		} else {
			ref = base
		}
		if ref == nil {
			continue // created, not updated
		}
		for _, h := range immutableHits(k, ho.Obj, ref, base, d.liveOK) {
			what := code(h.path) + " cannot be updated"
			if h.change != "" {
				what = fmt.Sprintf("%s cannot change %s", code(h.path), h.change)
			}
			d.immutableFinding(k, h.path, what)
		}
	}
}

// immutableHit is one table field that an update changes.
type immutableHit struct {
	path, change string
}

// immutableHits are the table's fields that updating ref to head changes, with a
// short "from → to" (empty for Secrets).
func immutableHits(k render.ObjectKey, head, ref, base *unstructured.Unstructured, refIsLive bool) []immutableHit {
	var hits []immutableHit
	for _, f := range immutableFields {
		if !slices.Contains(f.kinds, k.GroupKind()) {
			continue
		}
		if f.check != nil {
			if refused, change := f.check(head, ref, base, refIsLive); refused {
				hits = append(hits, immutableHit{f.path, hideChange(k, change)})
			}
			continue
		}
		for _, p := range expandPointer(head.Object, f.path) {
			if refused, change := fieldChanged(head, ref, base, p, refIsLive); refused {
				hits = append(hits, immutableHit{p, hideChange(k, change)})
			}
		}
	}
	return hits
}

func hideChange(k render.ObjectKey, change string) string {
	if isSecretKey(k) {
		return ""
	}
	return change
}

// expandPointer lists the concrete pointers a table path with "*" segments names
// in obj (every list item, every map key); a path without "*" is itself.
func expandPointer(obj map[string]any, p string) []string {
	if !strings.Contains(p, "*") {
		return []string{p}
	}
	var out []string
	var walk func(cur any, done, rest []string)
	walk = func(cur any, done, rest []string) {
		if len(rest) == 0 {
			out = append(out, joinPointer(done))
			return
		}
		seg, rest := rest[0], rest[1:]
		switch c := cur.(type) {
		case map[string]any:
			if seg != "*" {
				if v, ok := c[seg]; ok {
					walk(v, append(slices.Clone(done), seg), rest)
				}
				return
			}
			for _, k := range sortedKeys(c) {
				walk(c[k], append(slices.Clone(done), k), rest)
			}
		case []any:
			for i, v := range c {
				if seg == "*" || seg == strconv.Itoa(i) {
					walk(v, append(slices.Clone(done), strconv.Itoa(i)), rest)
				}
			}
		}
	}
	walk(obj, nil, splitPointer(p))
	return out
}

// whileImmutable refuses a change of the field while the live (or base) object
// has `immutable: true`.
func whileImmutable(path string) func(head, ref, base *unstructured.Unstructured, refIsLive bool) (bool, string) {
	return func(head, ref, base *unstructured.Unstructured, refIsLive bool) (bool, string) {
		if im, _, _ := unstructured.NestedBool(ref.Object, "immutable"); !im {
			return false, ""
		}
		return fieldChanged(head, ref, base, path, refIsLive)
	}
}

// quantityDecreases refuses a quantity that gets smaller, such as a bound claim's
// requested storage (it can grow, subject to admission, but never shrink).
func quantityDecreases(path string) func(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
	return func(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
		hs, ok := getPath(head.Object, path)
		if !ok {
			return false, ""
		}
		rs, ok := getPath(ref.Object, path)
		if !ok {
			return false, ""
		}
		hq, err1 := resource.ParseQuantity(fmt.Sprint(hs))
		rq, err2 := resource.ParseQuantity(fmt.Sprint(rs))
		if err1 != nil || err2 != nil || hq.Cmp(rq) >= 0 {
			return false, ""
		}
		what := "it"
		if path == "/spec/resources/requests/storage" {
			what = "a claim"
		}
		return true, fmt.Sprintf("from %s to %s: %s can grow but never shrink", code(rq.String()), code(hq.String()), what)
	}
}

// objects are k's head object and what it updates: its live object when live
// was read, else its base render (as checkImmutable compares).
func (d *differ) objects(k render.ObjectKey) (head, live *unstructured.Unstructured) {
	if h := d.head[k]; h != nil {
		head = h.Obj
	}
	if d.liveOK {
		live = d.in.Live.Objects[k]
	} else if b := d.base[k]; b != nil {
		live = b.Obj
	}
	return head, live
}

// immutableFinding reports a refused update. what is the start of the sentence,
// such as "`/spec/selector` cannot be updated". With Replace on, the controller
// deletes and recreates the object instead, which is a warning (and data-loss for
// a PVC whose volume is deleted with it).
func (d *differ) immutableFinding(k render.ObjectKey, path, what string) {
	f := Finding{Rule: RuleImmutableField, Key: k, Path: path}
	by := d.replacedBy(k)
	if by == "" {
		f.Message = fmt.Sprintf("%s, so the sync will fail until the %s is recreated.", what, k.Kind)
		if a := d.opts.Argo; a != nil {
			// kubectl replace is a PUT, which the API refuses alike (a
			// replace dry-run proves it: TestArgoReplaceRefusedByServer).
			head, live := d.objects(k)
			if from, ok := a.Replaces(k, head, live); ok {
				f.Message = fmt.Sprintf("%s, and %s makes %s replace the %s (kubectl replace, a PUT), which the API refuses alike: the sync will fail until the %s is recreated (add `Force=true` to the object's %s to delete and recreate it).",
					what, from, d.who(), k.Kind, k.Kind, code(ArgoSyncOptionsAnnotation))
			}
		}
		d.add(f)
		return
	}
	f.Severity = SeverityWarning
	switch {
	case d.fluxKustomize():
		// kustomize-controller deletes it (background propagation) and applies
		// it again (fluxcd/pkg ssa/manager_apply.go ApplyAll).
		f.Message = fmt.Sprintf("%s, so %s makes %s delete the %s and create it again", what, by, d.who(), k.Kind)
	case d.opts.Argo != nil:
		f.Message = fmt.Sprintf("%s, so it is replaced: %s makes %s delete the %s and recreate it", what, by, d.who(), k.Kind)
	default:
		f.Message = fmt.Sprintf("%s, so it is replaced: %s deletes the %s and recreates it", what, d.who(), k.Kind)
	}
	switch {
	case k.GroupKind() == gkPVC:
		f.Message += ", which risks the data on its volume."
	case k.GroupKind() == gkStatefulSet:
		f.Message += " with all its pods, which risks its data unless its claims are retained."
	case k.GroupKind() == gkJob:
		f.Message += ": the Job runs again (and its old pods are deleted)."
	case Stateful(k.GroupKind(), d.opts.StatefulKinds):
		f.Message += ", which risks its data."
	default:
		f.Message += "."
	}
	d.add(f)
	if k.GroupKind() == gkPVC && !slices.ContainsFunc(d.found, func(f Finding) bool { return f.Rule == RuleDataLoss && f.Key == k }) {
		d.dataLoss(k, "Replaced")
	}
}

// fieldChanged is the default table check: head sets the field and the update
// would change it. Against live, head must be contained in the live value (live
// holds defaults head does not set); a field base set that head drops or changes
// counts too. Against base, the values must be equal.
func fieldChanged(head, ref, base *unstructured.Unstructured, path string, refIsLive bool) (bool, string) {
	hv, ok := getPath(head.Object, path)
	if !ok {
		return false, ""
	}
	rv, inRef := getPath(ref.Object, path)
	changed := false
	if refIsLive {
		changed = !inRef || !subset(hv, rv)
		if !changed && base != nil {
			if bv, ok := getPath(base.Object, path); ok && !valuesEqual(bv, hv) && subset(bv, rv) {
				changed = true
			}
		}
	} else {
		changed = !inRef || !valuesEqual(hv, rv)
	}
	if !changed || !inRef {
		return changed && inRef, ""
	}
	return true, fromTo(rv, hv)
}

// fromTo writes "from `a` to `b`" for scalar values and "" otherwise.
func fromTo(from, to any) string {
	switch from.(type) {
	case map[string]any, []any:
		return ""
	}
	switch to.(type) {
	case map[string]any, []any:
		return ""
	}
	return fmt.Sprintf("from %s to %s", code(formatValue(from)), code(formatValue(to)))
}

// clusterIPChanged refuses a Service update only when head sets a cluster IP and
// it differs from the one allocated.
func clusterIPChanged(path string) func(head, ref, base *unstructured.Unstructured, _ bool) (bool, string) {
	return func(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
		hv, ok := getPath(head.Object, path)
		if !ok || hv == "" {
			return false, ""
		}
		rv, ok := getPath(ref.Object, path)
		if !ok || rv == "" || valuesEqual(hv, rv) {
			return false, ""
		}
		return true, fromTo(rv, hv)
	}
}

// immutableData refuses a change to data of a ConfigMap or Secret marked
// immutable. Secrets compare their effective values, so a move between data and
// stringData with the same value is no change.
func immutableData(field string) func(head, ref, base *unstructured.Unstructured, _ bool) (bool, string) {
	return func(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
		if im, _, _ := unstructured.NestedBool(ref.Object, "immutable"); !im {
			return false, ""
		}
		if isSecret(head) {
			if field != "data" {
				return false, "" // one finding per Secret, on /data
			}
			hv, rv := secretValues(head), secretValues(ref)
			for k, v := range hv {
				if rv[k] != v {
					return true, ""
				}
			}
			return len(hv) != len(rv), ""
		}
		hv, hok := head.Object[field]
		rv, rok := ref.Object[field]
		if !hok && !rok {
			return false, ""
		}
		return !valuesEqual(hv, rv), ""
	}
}

// immutableUnset refuses turning `immutable: true` off again.
func immutableUnset(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
	rim, _, _ := unstructured.NestedBool(ref.Object, "immutable")
	him, ok, _ := unstructured.NestedBool(head.Object, "immutable")
	if rim && ok && !him {
		return true, "from `true` to `false`"
	}
	return false, ""
}
