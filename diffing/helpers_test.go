package diffing

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

// testNow is the clock every test judges ignore-rule expiry against.
var testNow = time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC)

// obj parses one YAML manifest.
func obj(t testing.TB, y string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("parsing test manifest: %v\n%s", err, y)
	}
	return &unstructured.Unstructured{Object: m}
}

// objs parses a multi-document YAML string into objects.
func objs(t testing.TB, y string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(y, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out = append(out, obj(t, doc))
	}
	return out
}

// set builds a sorted ObjectSet from YAML documents.
func set(t testing.TB, y string) render.ObjectSet {
	t.Helper()
	var s render.ObjectSet
	for _, u := range objs(t, y) {
		s.Objects = append(s.Objects, render.Object{Key: render.KeyOf(u), Obj: u, Source: "manifests.yaml"})
	}
	s.Sort()
	return s
}

// fixture reads a file under testdata.
func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading fixture: %v", err)
	}
	return string(b)
}

// liveState builds a LiveState whose objects are the given YAML documents, all
// tracked, with predictions filled by predict (nil: none).
func liveState(t testing.TB, y string) *LiveState {
	t.Helper()
	ls := &LiveState{
		Mode:        "simulate",
		Cluster:     "prod",
		Objects:     map[render.ObjectKey]*unstructured.Unstructured{},
		Tracked:     map[render.ObjectKey]bool{},
		Predictions: map[render.ObjectKey]Prediction{},
		Children:    map[render.ObjectKey]Children{},
		Volumes:     map[render.ObjectKey]*unstructured.Unstructured{},
	}
	for _, u := range objs(t, y) {
		k := render.KeyOf(u)
		ls.Objects[k] = u
		ls.Tracked[k] = true
	}
	return ls
}

// key is shorthand for an ObjectKey.
func key(group, kind, ns, name string) render.ObjectKey {
	return render.ObjectKey{Group: group, Kind: kind, Namespace: ns, Name: name}
}

// brief writes findings as "severity rule key path" lines, the part most tests
// assert on exactly; messages are checked through the golden files.
func brief(fs []Finding) []string {
	out := []string{}
	for _, f := range fs {
		s := fmt.Sprintf("%s %s %s", f.Severity, f.Rule, f.Key)
		if f.Path != "" {
			s += " " + f.Path
		}
		if f.Manager != "" {
			s += " by " + f.Manager
		}
		out = append(out, s)
	}
	return out
}

// goldenJSON compares got, as indented JSON, with testdata/golden/<name>.json, or
// rewrites it with -update.
func goldenJSON(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshalling %s: %v", name, err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "golden", strings.NewReplacer(" ", "-", "/", "-").Replace(name)+".json")
	golden.Check(t, path, b)
}

// testOptions are the options most cases start from.
func testOptions() Options {
	o := DefaultOptions()
	o.Manager = "kustomize-controller"
	return o
}

func gkOf(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
