package live_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// TestDecodeSchemasAsOpenAPI: the schemas Read decodes from an OpenAPI v3
// document (components.schemas only) are the ones of the whole document decoded
// as spec3.OpenAPI, for every GroupVersion the test apiserver publishes (a CRD's
// included); a document without components has none.
func TestDecodeSchemasAsOpenAPI(t *testing.T) {
	ctx := t.Context()
	cluster.InstallCRD(ctx, t, testcluster.FromYAML(t, widgetCRD))
	disc, err := discovery.NewDiscoveryClientForConfig(cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	paths, err := disc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, gv := range paths {
		raw, err := gv.Schema("application/json")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var doc spec3.OpenAPI
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := live.DecodeSchemas(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if doc.Components == nil {
			if got != nil {
				t.Errorf("%s: schemas %v from a document without components", name, got)
			}
			continue
		}
		if got == nil {
			t.Fatalf("%s: no schemas, want %d", name, len(doc.Components.Schemas))
		}
		if !reflect.DeepEqual(*got, doc.Components.Schemas) {
			t.Errorf("%s: schemas differ from spec3.OpenAPI's", name)
		}
		n += len(*got)
	}
	if n < 100 {
		t.Errorf("%d schemas in %d documents: too few to compare", n, len(paths))
	}
	if got, err := live.DecodeSchemas([]byte(`{"openapi":"3.0.0","paths":{}}`)); err != nil || got != nil {
		t.Errorf("document without components: %v, %v", got, err)
	}
	if _, err := live.DecodeSchemas([]byte(`{"components":{"schemas":{"x":{"type":7}}}}`)); err == nil {
		t.Errorf("a bad schema decoded without error")
	}
}
