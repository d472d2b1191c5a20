package live

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// SetWideMaxItems sets the cap of a cluster-wide LIST for a test, which restores
// it with the returned func.
func SetWideMaxItems(n int) (restore func()) {
	old := wideMaxItems
	wideMaxItems = n
	return func() { wideMaxItems = old }
}

// SetShortcuts turns simulate's shortcuts (the no-op test, canonical skipped for
// a canonical head, the prune skipped when head keeps every field the manager
// owns) on or off for a test, which restores them with the returned func.
func SetShortcuts(on bool) (restore func()) {
	oldNoops, oldCanonical, oldPrune := skipNoops, skipCanonical, skipPrune
	skipNoops, skipCanonical, skipPrune = on, on, on
	return func() { skipNoops, skipCanonical, skipPrune = oldNoops, oldCanonical, oldPrune }
}

// Simulations returns how many applies simulate was asked for and how many of them
// it found to be no-ops, since the process started.
func Simulations() (simulated, noop int64) { return simulations.Load(), noops.Load() }

// Shortcuts returns how many no-op tests mayContain answered without typing the
// objects, and how many predictions skipped canonical, since the process started.
func Shortcuts() (notContainedTests, canonicalSkipped int64) {
	return notContained.Load(), canonicalSkips.Load()
}

// PruneSkips returns how many simulated applies skipped the prune (keepsOwned)
// since the process started.
func PruneSkips() int64 { return pruneSkips.Load() }

// ListPage sends one page of the LIST of gvr in ns ("" for all namespaces or a
// cluster-scoped type) as Read does.
func ListPage(ctx context.Context, r *Reader, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, string, error) {
	st := &read{r: r}
	return st.listPage(ctx, listing{res: resource{gvr: gvr}, ns: ns}, opts)
}

// FieldSets returns the field set of a FieldsV1 map built straight from the map
// (ok false if fieldsSet leaves it to the JSON) and the one read from its JSON as
// the apiserver reads it.
func FieldSets(fields map[string]any) (direct *fieldpath.Set, ok bool, viaJSON *fieldpath.Set) {
	direct, _, ok = fieldsSet(fields)
	if ok && direct == nil {
		direct = &fieldpath.Set{}
	}
	return direct, ok, fieldsFromJSON(fields)
}

// DecodeSchemas returns components.schemas of an OpenAPI v3 document as Read
// decodes them.
func DecodeSchemas(raw []byte) (*map[string]*spec.Schema, error) { return decodeSchemas(raw) }

// Canonical and IsCanonical are simulate's canonical and isCanonical.
func Canonical(obj *unstructured.Unstructured) *unstructured.Unstructured { return canonical(obj) }
func IsCanonical(obj *unstructured.Unstructured) bool                     { return isCanonical(obj) }

// PreparedSchemas returns the GroupVersions whose converters r keeps, with
// whether each was built without an error.
func PreparedSchemas(r *Reader) map[schema.GroupVersion]bool {
	s := r.getSchemas()
	s.mu.Lock()
	defer s.mu.Unlock()
	got := map[schema.GroupVersion]bool{}
	for gv, res := range s.converters {
		got[gv] = res.err == nil
	}
	return got
}
