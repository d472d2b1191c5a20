package live

import (
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// withServerDefaults returns predicted with the live fields that git never set
// (neither base nor head has them) and that the simulated apply dropped put back.
// A local apply runs no API defaulting, so replacing an atomic list such as a
// StatefulSet's volumeClaimTemplates loses the defaults the API server fills in
// again on a real apply (apiVersion, kind, volumeMode, status…); showing them as
// removed would be noise. Fields git did set are never restored, so a field the
// PR removes still shows as removed. dry-run predictions come from the server and
// need none of this. simulate calls it on every prediction, so Prediction.Object is
// what the server would store.
func withServerDefaults(predicted, live *unstructured.Unstructured, base, head map[string]any) *unstructured.Unstructured {
	out := predicted.DeepCopy()
	restoreDefaults(out.Object, live.Object, base, head, false)
	return out
}

// restoreDefaults works inside list items only: a map field outside any list that
// the apply dropped was owned by the GitOps manager and is really removed, while a
// list item is replaced whole when the list is atomic.
func restoreDefaults(pred, live, base, head map[string]any, inList bool) {
	for k, lv := range live {
		if k == "metadata" {
			continue // server-set metadata is dropped by Normalize anyway
		}
		pv, inPred := pred[k]
		bv, inBase := base[k]
		hv, inHead := head[k]
		if !inPred {
			if inList && !inBase && !inHead {
				pred[k] = runtime.DeepCopyJSONValue(lv)
			}
			continue
		}
		switch l := lv.(type) {
		case map[string]any:
			if p, ok := pv.(map[string]any); ok {
				b, _ := bv.(map[string]any)
				h, _ := hv.(map[string]any)
				restoreDefaults(p, l, b, h, inList)
			}
		case []any:
			p, ok := pv.([]any)
			if !ok || len(p) != len(l) {
				continue // items added or removed: no safe pairing
			}
			b, _ := bv.([]any)
			h, _ := hv.([]any)
			for i := range l {
				lm, ok1 := l[i].(map[string]any)
				pm, ok2 := p[i].(map[string]any)
				if !ok1 || !ok2 || !sameItem(pm, lm) {
					continue
				}
				restoreDefaults(pm, lm, itemAt(b, i), itemAt(h, i), true)
			}
		}
	}
}

func itemAt(l []any, i int) map[string]any {
	if i < len(l) {
		m, _ := l[i].(map[string]any)
		return m
	}
	return nil
}

// sameItem reports whether a predicted list item is the live item at the same
// index: no scalar field both have differs. A Service port 80 replaced by port 8080
// is another item, whose defaults (targetPort = port) the server computes afresh,
// so live's are not carried over to it.
func sameItem(pred, live map[string]any) bool {
	for k, lv := range live {
		pv, ok := pred[k]
		if !ok {
			continue
		}
		switch lv.(type) {
		case map[string]any, []any:
			continue
		}
		switch pv.(type) {
		case map[string]any, []any:
			continue
		}
		if !reflect.DeepEqual(pv, lv) {
			return false
		}
	}
	return true
}
