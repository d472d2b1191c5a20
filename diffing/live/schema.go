package live

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// builtinConverter is client-go's compiled-in schema of the built-in types, the
// fallback when the cluster's OpenAPI v3 document cannot be read. It is built on
// first use: parsing it takes a while.
var builtinConverter = sync.OnceValue(func() managedfields.TypeConverter {
	return applyconfigurations.NewTypeConverter(scheme.Scheme)
})

// schemaCache builds and keeps one type converter per GroupVersion and one field
// manager per kind, from the cluster's OpenAPI v3 document.
type schemaCache struct {
	at   time.Time
	disc *discovery.DiscoveryClient

	mu         sync.Mutex
	paths      map[string]openapi.GroupVersionWithContext
	pathsErr   error
	pathsAt    time.Time
	converters map[schema.GroupVersion]converterResult
	managers   map[schema.GroupVersionKind]*applier
}

// applier is the field manager of one kind and the type converter it was built
// from.
type applier struct {
	fm *managedfields.FieldManager
	tc managedfields.TypeConverter
}

type converterResult struct {
	tc  managedfields.TypeConverter
	err error
	at  time.Time
}

// retryAfter is how soon a GroupVersion whose OpenAPI document lacked a kind is read
// again: the apiserver publishes a new CRD's schema a moment after serving it.
const retryAfter = 2 * time.Second

func newSchemaCache(disc *discovery.DiscoveryClient) *schemaCache {
	return &schemaCache{
		at:         time.Now(),
		disc:       disc,
		converters: map[schema.GroupVersion]converterResult{},
		managers:   map[schema.GroupVersionKind]*applier{},
	}
}

// openAPIPath is the key of a GroupVersion in the OpenAPI v3 discovery document.
func openAPIPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// fieldManager returns the apiserver's server-side-apply field manager for gvk, as
// the apiserver builds it for a custom resource: the same merge, conflict,
// last-applied and managed-fields bookkeeping, without defaulting or admission.
func (s *schemaCache) fieldManager(ctx context.Context, gvk schema.GroupVersionKind) (*applier, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.managers[gvk]; a != nil {
		return a, nil
	}
	tc, err := s.converter(ctx, gvk)
	if err != nil {
		return nil, err
	}
	gv := gvk.GroupVersion()
	// Writes to the main resource never change status (the apiserver's reset fields).
	reset := map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(gv.String()): fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status"))),
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(tc, sameVersion{}, noDefaults{}, creater{}, gvk, gv, "", reset)
	if err != nil {
		return nil, fmt.Errorf("building field manager for %s: %w", gvk, err)
	}
	a := &applier{fm: fm, tc: tc}
	s.managers[gvk] = a
	return a, nil
}

// PrepareSchemas builds the type converters of gvs from the cluster's OpenAPI v3
// documents before their first use: a preview starts it while it checks the
// pull request out, so the first simulation does not wait ~0.3 s for the
// documents of the core and apps groups with both cores otherwise idle. It
// keeps only what it built: any error (a cancelled ctx included) leaves the
// cache as it was, for the first real use to meet and report in its place.
func (r *Reader) PrepareSchemas(ctx context.Context, gvs ...schema.GroupVersion) {
	s := r.getSchemas()
	for _, gv := range gvs {
		if ctx.Err() != nil {
			return
		}
		s.prepare(ctx, gv)
	}
}

// prepare builds and keeps gv's converter unless one is kept already; on an
// error nothing is kept, not even the OpenAPI index read on the way.
func (s *schemaCache) prepare(ctx context.Context, gv schema.GroupVersion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.converters[gv]; ok {
		return
	}
	paths, pathsErr, pathsAt := s.paths, s.pathsErr, s.pathsAt
	tc, err := s.openAPIConverter(ctx, gv)
	if err != nil {
		s.paths, s.pathsErr, s.pathsAt = paths, pathsErr, pathsAt
		return
	}
	s.converters[gv] = converterResult{tc: tc, at: time.Now()}
}

// converter returns a type converter that knows gvk: from the cluster's OpenAPI v3
// document for its GroupVersion, else client-go's built-in schemas. s.mu is held.
func (s *schemaCache) converter(ctx context.Context, gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	gv := gvk.GroupVersion()
	res, ok := s.converters[gv]
	if !ok || ((res.err != nil || !knows(res.tc, gvk)) && time.Since(res.at) > retryAfter) {
		res.tc, res.err = s.openAPIConverter(ctx, gv)
		res.at = time.Now()
		s.converters[gv] = res
	}
	if res.err == nil && knows(res.tc, gvk) {
		return res.tc, nil
	}
	if scheme.Scheme.Recognizes(gvk) && knows(builtinConverter(), gvk) {
		return builtinConverter(), nil
	}
	if res.err != nil {
		return nil, fmt.Errorf("no schema for %s: %w", gvk, res.err)
	}
	return nil, fmt.Errorf("no schema for %s: the cluster's OpenAPI v3 document for %s does not describe it", gvk, gv)
}

// knows reports whether tc has a type for gvk.
func knows(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_, err := tc.ObjectToTyped(u)
	return err == nil || !strings.Contains(err.Error(), "no corresponding type")
}

// openAPIConverter reads the OpenAPI v3 document of gv and builds a type converter
// from its schemas. s.mu is held.
func (s *schemaCache) openAPIConverter(ctx context.Context, gv schema.GroupVersion) (managedfields.TypeConverter, error) {
	_, ok := s.paths[openAPIPath(gv)]
	if (s.paths == nil && s.pathsErr == nil) || (!ok && time.Since(s.pathsAt) > retryAfter) {
		s.paths, s.pathsErr = s.disc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
		s.pathsAt = time.Now()
		if s.pathsErr != nil {
			s.pathsErr = fmt.Errorf("reading the OpenAPI v3 index: %w", s.pathsErr)
		}
	}
	if s.pathsErr != nil {
		return nil, s.pathsErr
	}
	p, ok := s.paths[openAPIPath(gv)]
	if !ok {
		return nil, fmt.Errorf("the cluster publishes no OpenAPI v3 document for %s", gv)
	}
	raw, err := p.SchemaWithContext(ctx, "application/json")
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI v3 document for %s: %w", gv, err)
	}
	schemas, err := decodeSchemas(raw)
	if err != nil {
		return nil, fmt.Errorf("decoding the OpenAPI v3 document for %s: %w", gv, err)
	}
	if schemas == nil {
		return nil, fmt.Errorf("the OpenAPI v3 document for %s has no schemas", gv)
	}
	tc, err := managedfields.NewTypeConverter(*schemas, false)
	if err != nil {
		return nil, fmt.Errorf("building types from the OpenAPI v3 document for %s: %w", gv, err)
	}
	return tc, nil
}

// decodeSchemas returns components.schemas of an OpenAPI v3 document, nil when it
// has no components. Only the schemas are decoded: the paths, most of the
// document, are skipped (spec3.OpenAPI decodes every operation, two thirds of the
// time). Each schema is decoded as spec3.OpenAPI decodes it (spec.Schema's own
// decoder); TestDecodeSchemasAsOpenAPI compares both on every document the test
// apiserver serves.
func decodeSchemas(raw []byte) (*map[string]*spec.Schema, error) {
	var doc struct {
		Components *struct {
			Schemas map[string]*spec.Schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	if doc.Components == nil {
		return nil, nil
	}
	return &doc.Components.Schemas, nil
}

// sameVersion is the object converter of the field manager. Objects are read and
// applied in one version, so it converts nothing; managed-field entries recorded in
// another version are dropped by the merge, as for a version the server no longer
// serves.
type sameVersion struct{}

func (sameVersion) Convert(in, out, _ any) error {
	return fmt.Errorf("converting %T to %T is not supported", in, out)
}

func (sameVersion) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk}); ok && target == gvk {
		return in, nil
	}
	return nil, runtime.NewNotRegisteredGVKErrForTarget("driftpreview", gvk, gv)
}

func (sameVersion) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// noDefaults leaves objects as they are: live objects are already defaulted, and
// the apiserver defaults what head adds when it applies for real.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// creater makes empty unstructured objects, which the field manager needs for
// objects that have no managed fields yet.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
