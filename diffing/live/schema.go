package live

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
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
// manager per kind, from the cluster's OpenAPI v3 document. GroupVersions are
// built concurrently (a small pull request's simulation needs six or more, each
// a request and a parse), each once: a second use waits for the build under way.
type schemaCache struct {
	at   time.Time
	disc *discovery.DiscoveryClient

	// indexMu is held while the OpenAPI v3 index is read, and guards it.
	indexMu  sync.Mutex
	paths    map[string]openapi.GroupVersionWithContext
	pathsErr error
	pathsAt  time.Time

	mu         sync.Mutex // guards converters and managers
	converters map[schema.GroupVersion]*converterResult
	managers   map[schema.GroupVersionKind]*applier
}

// applier is the field manager of one kind and the type converter it was built
// from.
type applier struct {
	fm *managedfields.FieldManager
	tc managedfields.TypeConverter
}

// converterResult is one build of a GroupVersion's converter: tc, err and at
// are set before done is closed.
type converterResult struct {
	done chan struct{}
	tc   managedfields.TypeConverter
	err  error
	at   time.Time
}

// retryAfter is how soon a GroupVersion whose OpenAPI document lacked a kind is read
// again: the apiserver publishes a new CRD's schema a moment after serving it.
const retryAfter = 2 * time.Second

func newSchemaCache(disc *discovery.DiscoveryClient) *schemaCache {
	return &schemaCache{
		at:         time.Now(),
		disc:       disc,
		converters: map[schema.GroupVersion]*converterResult{},
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
	a := s.managers[gvk]
	s.mu.Unlock()
	if a != nil {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept := s.managers[gvk]; kept != nil {
		return kept, nil // built meanwhile by another simulation of the kind
	}
	a = &applier{fm: fm, tc: tc}
	s.managers[gvk] = a
	return a, nil
}

// PrepareSchemas builds the type converters of gvs from the cluster's OpenAPI v3
// documents before their first use, concurrently (at most one build per
// CPU): a preview starts it while it checks the pull request out, so the
// first simulation does not wait ~0.3 s for the documents of the core and
// apps groups with both cores otherwise idle, and a Read starts it for its
// objects' GroupVersions while it lists them. It keeps only what it built:
// an error (a cancelled ctx included) leaves the cache as it was, for the
// first real use to meet and report in its place.
func (r *Reader) PrepareSchemas(ctx context.Context, gvs ...schema.GroupVersion) {
	s := r.getSchemas()
	sem := make(chan struct{}, workers())
	var wg sync.WaitGroup
	for _, gv := range gvs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s.build(ctx, gv, func(*converterResult) bool { return false }, true)
		})
	}
	wg.Wait()
}

// build returns gv's converter: the one kept unless stale says it is to be
// built again, else one built now. A build of gv under way is waited for,
// not repeated. A tentative build that fails is not kept (what was kept
// before stays), so a cancelled preparation is not a later use's error.
func (s *schemaCache) build(ctx context.Context, gv schema.GroupVersion, stale func(*converterResult) bool, tentative bool) *converterResult {
	for {
		s.mu.Lock()
		kept := s.converters[gv]
		if kept != nil {
			select {
			case <-kept.done:
			default:
				s.mu.Unlock()
				select {
				case <-kept.done:
					continue // look again: a failed tentative build is not kept
				case <-ctx.Done():
					return &converterResult{err: ctx.Err(), at: time.Now()}
				}
			}
			if !stale(kept) {
				s.mu.Unlock()
				return kept
			}
		}
		res := &converterResult{done: make(chan struct{})}
		s.converters[gv] = res
		s.mu.Unlock()

		res.tc, res.err = s.openAPIConverter(ctx, gv, tentative)
		res.at = time.Now()
		s.mu.Lock()
		if res.err != nil && tentative {
			if kept != nil {
				s.converters[gv] = kept
			} else {
				delete(s.converters, gv)
			}
		}
		close(res.done)
		s.mu.Unlock()
		return res
	}
}

// converter returns a type converter that knows gvk: from the cluster's OpenAPI v3
// document for its GroupVersion, else client-go's built-in schemas.
func (s *schemaCache) converter(ctx context.Context, gvk schema.GroupVersionKind) (managedfields.TypeConverter, error) {
	res := s.build(ctx, gvk.GroupVersion(), func(r *converterResult) bool {
		return (r.err != nil || !knows(r.tc, gvk)) && time.Since(r.at) > retryAfter
	}, false)
	if res.err == nil && knows(res.tc, gvk) {
		return res.tc, nil
	}
	if scheme.Scheme.Recognizes(gvk) && knows(builtinConverter(), gvk) {
		return builtinConverter(), nil
	}
	if res.err != nil {
		return nil, fmt.Errorf("no schema for %s: %w", gvk, res.err)
	}
	return nil, fmt.Errorf("no schema for %s: the cluster's OpenAPI v3 document for %s does not describe it", gvk, gvk.GroupVersion())
}

// knows reports whether tc has a type for gvk.
func knows(tc managedfields.TypeConverter, gvk schema.GroupVersionKind) bool {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	_, err := tc.ObjectToTyped(u)
	return err == nil || !strings.Contains(err.Error(), "no corresponding type")
}

// openAPIConverter reads the OpenAPI v3 document of gv and builds a type converter
// from its schemas. A tentative build keeps no failed read of the index.
func (s *schemaCache) openAPIConverter(ctx context.Context, gv schema.GroupVersion, tentative bool) (managedfields.TypeConverter, error) {
	p, err := s.document(ctx, gv, tentative)
	if err != nil {
		return nil, err
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

// document is gv's entry in the OpenAPI v3 index, read once (again when gv is
// missing from an index older than retryAfter, or after a failed read).
func (s *schemaCache) document(ctx context.Context, gv schema.GroupVersion, tentative bool) (openapi.GroupVersionWithContext, error) {
	s.indexMu.Lock()
	defer s.indexMu.Unlock()
	_, ok := s.paths[openAPIPath(gv)]
	if (s.paths == nil && s.pathsErr == nil) || (!ok && time.Since(s.pathsAt) > retryAfter) {
		paths, err := s.disc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
		if err != nil {
			err = fmt.Errorf("reading the OpenAPI v3 index: %w", err)
			if tentative {
				return nil, err
			}
		}
		s.paths, s.pathsErr, s.pathsAt = paths, err, time.Now()
	}
	if s.pathsErr != nil {
		return nil, s.pathsErr
	}
	p, ok := s.paths[openAPIPath(gv)]
	if !ok {
		return nil, fmt.Errorf("the cluster publishes no OpenAPI v3 document for %s", gv)
	}
	return p, nil
}

// decodeSchemas returns components.schemas of an OpenAPI v3 document, nil when it
// has no components. Only the schemas are decoded: the paths, most of the
// document, are skipped (spec3.OpenAPI decodes every operation, two thirds of the
// time), by one pass of a streaming reader (go-json-experiment's jsontext,
// the encoding/json/v2 to be) that validates what it skips without decoding
// it; encoding/json scanned the whole document twice before decoding the
// schemas (checkValid, skip). Each schema is decoded as spec3.OpenAPI decodes
// it (spec.Schema's own decoder); TestDecodeSchemasAsOpenAPI compares both on
// every document the test apiserver serves.
func decodeSchemas(raw []byte) (*map[string]*spec.Schema, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var schemas *map[string]*spec.Schema
	err := readObject(dec, func(name string) error {
		if name != "components" {
			return dec.SkipValue()
		}
		if dec.PeekKind() == 'n' {
			_, err := dec.ReadToken()
			return err
		}
		if schemas == nil {
			schemas = new(map[string]*spec.Schema)
		}
		return readObject(dec, func(name string) error {
			if name != "schemas" {
				return dec.SkipValue()
			}
			if dec.PeekKind() == 'n' {
				_, err := dec.ReadToken()
				*schemas = nil
				return err
			}
			m := map[string]*spec.Schema{}
			*schemas = m
			return readObject(dec, func(name string) error {
				v, err := dec.ReadValue()
				if err != nil {
					return err
				}
				if v.Kind() == 'n' {
					m[name] = nil
					return nil
				}
				sc := new(spec.Schema)
				if err := sc.UnmarshalJSON(bytes.Clone(v)); err != nil {
					return fmt.Errorf("schema %s: %w", name, err)
				}
				m[name] = sc
				return nil
			})
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, fmt.Errorf("the document does not end after its object")
	}
	return schemas, nil
}

// readObject reads one JSON object from dec, calling member for each name
// with dec before the member's value, which member must read.
func readObject(dec *jsontext.Decoder, member func(name string) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("at offset %d: want an object, got %s", dec.InputOffset(), tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := member(name.String()); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
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
