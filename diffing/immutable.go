package diffing

import (
	"fmt"
	"slices"

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
	gkDeployment  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	gkReplicaSet  = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	gkDaemonSet   = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	gkStatefulSet = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	gkJob         = schema.GroupKind{Group: "batch", Kind: "Job"}
	gkService     = schema.GroupKind{Kind: "Service"}
	gkPVC         = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	gkConfigMap   = schema.GroupKind{Kind: "ConfigMap"}
	gkSecret      = schema.GroupKind{Kind: "Secret"}
	gkRoleBinding = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}
	gkCRoleBind   = schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}
)

// immutableFields is the table of fields the API server refuses to update.
var immutableFields = []immutableField{
	{kinds: []schema.GroupKind{gkDeployment, gkReplicaSet, gkDaemonSet, gkStatefulSet, gkJob}, path: "/spec/selector"},
	{kinds: []schema.GroupKind{gkStatefulSet}, path: "/spec/volumeClaimTemplates"},
	{kinds: []schema.GroupKind{gkStatefulSet}, path: "/spec/serviceName"},
	{kinds: []schema.GroupKind{gkStatefulSet}, path: "/spec/podManagementPolicy"},
	{kinds: []schema.GroupKind{gkService}, path: "/spec/clusterIP", check: clusterIPChanged("/spec/clusterIP")},
	{kinds: []schema.GroupKind{gkService}, path: "/spec/clusterIPs", check: clusterIPChanged("/spec/clusterIPs")},
	{kinds: []schema.GroupKind{gkJob}, path: "/spec/template"},
	{kinds: []schema.GroupKind{gkPVC}, path: "/spec/storageClassName"},
	{kinds: []schema.GroupKind{gkPVC}, path: "/spec/accessModes"},
	{kinds: []schema.GroupKind{gkPVC}, path: "/spec/volumeName"},
	{kinds: []schema.GroupKind{gkPVC}, path: "/spec/resources/requests/storage", check: storageShrinks},
	{kinds: []schema.GroupKind{gkConfigMap, gkSecret}, path: "/data", check: immutableData("data")},
	{kinds: []schema.GroupKind{gkConfigMap}, path: "/binaryData", check: immutableData("binaryData")},
	{kinds: []schema.GroupKind{gkSecret}, path: "/stringData", check: immutableData("stringData")},
	{kinds: []schema.GroupKind{gkConfigMap, gkSecret}, path: "/immutable", check: immutableUnset},
	{kinds: []schema.GroupKind{gkRoleBinding, gkCRoleBind}, path: "/roleRef"},
}

// checkImmutable compares each head object with what it updates — the live object
// when live was read, else the base render — field by field through the table.
// Objects whose update the apiserver itself judged (dry-run) are skipped: its
// answer is the finding, and one refusal gives one finding.
func (d *differ) checkImmutable() {
	for _, ho := range d.in.Head.Objects {
		k := ho.Key
		if d.serverJudged[k] {
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
		var refused bool
		var change string
		if f.check != nil {
			refused, change = f.check(head, ref, base, refIsLive)
		} else {
			refused, change = fieldChanged(head, ref, base, f.path, refIsLive)
		}
		if !refused {
			continue
		}
		if isSecretKey(k) {
			change = ""
		}
		hits = append(hits, immutableHit{f.path, change})
	}
	return hits
}

// immutableFinding reports a refused update. what is the start of the sentence,
// such as "`/spec/selector` cannot be updated". With Replace on, the controller
// deletes and recreates the object instead, which is a warning (and data-loss for
// a PVC whose volume is deleted with it).
func (d *differ) immutableFinding(k render.ObjectKey, path, what string) {
	f := Finding{Rule: RuleImmutableField, Key: k, Path: path}
	if !d.opts.Replace {
		f.Message = fmt.Sprintf("%s, so the sync will fail until the %s is recreated.", what, k.Kind)
		d.add(f)
		return
	}
	f.Severity = SeverityWarning
	f.Message = fmt.Sprintf("%s, so it is replaced: %s deletes the %s and recreates it", what, d.who(), k.Kind)
	switch {
	case k.GroupKind() == gkPVC:
		f.Message += ", which risks the data on its volume."
	case k.GroupKind() == gkStatefulSet:
		f.Message += " with all its pods, which risks its data unless its claims are retained."
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

// storageShrinks refuses a PVC whose requested storage gets smaller.
func storageShrinks(head, ref, _ *unstructured.Unstructured, _ bool) (bool, string) {
	hs, ok, _ := unstructured.NestedFieldNoCopy(head.Object, "spec", "resources", "requests", "storage")
	if !ok {
		return false, ""
	}
	rs, ok, _ := unstructured.NestedFieldNoCopy(ref.Object, "spec", "resources", "requests", "storage")
	if !ok {
		return false, ""
	}
	hq, err1 := resource.ParseQuantity(fmt.Sprint(hs))
	rq, err2 := resource.ParseQuantity(fmt.Sprint(rs))
	if err1 != nil || err2 != nil || hq.Cmp(rq) >= 0 {
		return false, ""
	}
	return true, fmt.Sprintf("from %s to %s: a claim can grow but never shrink", code(rq.String()), code(hq.String()))
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
