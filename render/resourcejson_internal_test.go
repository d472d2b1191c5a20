package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestResourceJSON: resourceJSON gives what kyaml's RNode.MarshalJSON gives
// (the JSON `kustomize build` prints from), byte for byte, for scalars of every
// YAML type and style, tagged and untagged, the YAML 1.1 forms, nested
// mappings and sequences, and for nodes kustomize's transformers make
// (untagged scalars set in code).
func TestResourceJSON(t *testing.T) {
	for _, r := range resourceCases(t) {
		want, werr := r.MarshalJSON()
		got, gerr := resourceJSON(r)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			s := r.String()
			t.Errorf("resource\n%s\nresourceJSON: %s (%v)\nMarshalJSON:  %s (%v)", s, got, gerr, want, werr)
		}
	}
}

// resourceCases are resources whose values take every YAML type and style.
func resourceCases(t *testing.T) []*resource.Resource {
	t.Helper()
	docs := []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  x: \"1\"\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels: {a: \"true\", b: 'yes', c: on, d: \"0x1F\"}\ndata:\n  int: 12\n  oct: 0o17\n  hex: 0x1F\n  float: 1.0\n  exp: 1e21\n  small: 1e-7\n  neg: -0.0\n  inf: .inf\n  big: 123456789012345678901234567890\n  bool: true\n  yes: yes\n  null1: null\n  null2: ~\n  null3:\n  ts: 2001-12-14t21:59:43.10-05:00\n  date: 2002-12-14\n  str: !!str 123\n  tagint: !!int \"7\"\n  tagfloat: !!float 1\n  folded: >\n    a\n    b\n  literal: |\n    line1\n    line2\n  quoted: \"a\\tb\\u00e9\"\n  empty: \"\"\n  colon: \"a: b\"\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: c\nspec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n      - name: x\n        image: nginx:1.2\n        args: [\"--a=1\", 2, 3.5, true, null]\n        ports:\n        - containerPort: 8080\n          protocol: TCP\n        resources:\n          limits: {cpu: 500m, memory: 1Gi}\n      tolerations: []\n      nodeSelector: {}\n",
		"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: d\nspec:\n  nested:\n    - - 1\n      - [2, [3]]\n    - {k: [v, {w: x}]}\n  \"quoted key\": 1\n  '123': numeric key\n  true: bool key\n  1.5: float key\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\n  annotations:\n    merge: a\nbase: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
	}
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var rs []*resource.Resource
	for _, d := range docs {
		got, err := rf.SliceFromBytes([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		rs = append(rs, got...)
	}
	// Nodes made in code, as transformers make them: untagged, plain style.
	r, err := rf.FromBytes([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: f\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"123", "true", "1.5", "null", "", "yes", "0x10", "a b", "-", "2001-12-14"} {
		n := kyaml.NewScalarRNode(v)
		n.YNode().Tag = ""
		if err := r.PipeE(kyaml.LookupCreate(kyaml.MappingNode, "data"), kyaml.SetField("k"+strings.ReplaceAll(v, " ", "_"), n)); err != nil {
			t.Fatal(err)
		}
		s := kyaml.NewStringRNode(v)
		if err := r.PipeE(kyaml.LookupCreate(kyaml.MappingNode, "strings"), kyaml.SetField("k"+strings.ReplaceAll(v, " ", "_"), s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SetLabels(map[string]string{"n": "1", "b": "true", "e": ""}); err != nil {
		t.Fatal(err)
	}
	rs = append(rs, r)
	// An alias (kustomize's reader resolves those it reads; a node can still
	// hold one): kyaml's way.
	a, err := rf.FromBytes([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: g\ndata:\n  x: \"1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Pipe(kyaml.Lookup("data", "x"))
	if err != nil || x == nil {
		t.Fatal(x, err)
	}
	x.YNode().Anchor = "x"
	data, err := a.Pipe(kyaml.Lookup("data"))
	if err != nil {
		t.Fatal(err)
	}
	data.YNode().Content = append(data.YNode().Content,
		&kyaml.Node{Kind: kyaml.ScalarNode, Value: "y"}, &kyaml.Node{Kind: kyaml.AliasNode, Value: "x", Alias: x.YNode()})
	if !hasAlias(a.YNode()) {
		t.Fatal("no alias")
	}
	return append(rs, a)
}

// TestTypedObject: typedObject gives what the JSON way (resourceJSON, then
// jsonObject) gives, value for value and type for type, and counts the JSON's
// bytes; where it declines, the JSON way's answer stands, and it declines only
// for what it is meant to (a byte past ASCII, a NaN or infinity, keys that
// are not strings, an alias, a List).
func TestTypedObject(t *testing.T) {
	rs := resourceCases(t)
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	for _, d := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: esc\ndata:\n  html: \"<a href='x'>&amp;</a>\"\n  ctl: \"a\\x01b\\x1fc\\bd\\fe\\rf\\ng\\th\"\n  quote: 'say \"hi\" \\ back'\n  del: \"\\x7f\"\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nums\nspec:\n  a: [0, -1, 9223372036854775807, -9223372036854775808, 9223372036854775808, 18446744073709551615]\n  b: [1.0, -0.0, 0.5, 1e20, 1e21, 123456789e13, 1e-6, 1e-7, 2.5e-9, 9.223372036854775807e18, -9.3e18, 3.14159, .nan]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: floats\nspec:\n  b: [1.0, -0.0, 0.5, 1e20, 1e21, 123456789e13, 1e-6, 1e-7, 2.5e-9, 9.223372036854775807e18, -9.3e18, 3.14159, 1.7976931348623157e308]\n",
		"apiVersion: v1\nkind: List\nmetadata:\n  name: l\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: u\ndata:\n  x: \"caf\\u00e9\"\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bin\ndata:\n  b: !!binary aGVsbG8=\n",
	} {
		got, err := rf.SliceFromBytes([]byte(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		rs = append(rs, got...)
	}
	typedSome := 0
	for _, r := range rs {
		var size int64
		m, ok := typedObject(r, &size)
		j, jerr := resourceJSON(r)
		var want map[string]any
		wantOK := jerr == nil
		if wantOK {
			want, wantOK = jsonObject(j)
		}
		switch {
		case ok && !wantOK:
			t.Errorf("%s: typedObject answered what the JSON way refuses (%v)", r.GetName(), jerr)
		case ok && !reflect.DeepEqual(m, want):
			t.Errorf("%s: typedObject\n%#v\nthe JSON way\n%#v", r.GetName(), m, want)
		case ok && size != int64(len(j)):
			t.Errorf("%s: typedObject counted %d bytes, the JSON is %d", r.GetName(), size, len(j))
		case !ok && size != 0:
			t.Errorf("%s: typedObject declined but counted %d bytes", r.GetName(), size)
		case !ok && wantOK && bytes.IndexFunc(j, func(c rune) bool { return c >= 0x7f }) < 0 && !hasAlias(r.YNode()) && !decodesTime(r):
			t.Errorf("%s: typedObject declined an ASCII resource the JSON way reads", r.GetName())
		}
		if ok {
			typedSome++
		}
	}
	if typedSome < len(rs)/2 {
		t.Errorf("typedObject answered for %d of %d resources", typedSome, len(rs))
	}
}

// decodesTime says whether r's node decodes to a value holding a time.Time
// (an untagged timestamp scalar a transformer made): jsonTyped leaves those to
// the JSON way.
func decodesTime(r *resource.Resource) bool {
	m := map[string]any{}
	if r.YNode().Decode(&m) != nil {
		return false
	}
	var walk func(v any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case time.Time:
			return true
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(m)
}

// FuzzJSONTyped holds jsonTyped to json.Marshal then the renderers' JSON
// reader on any YAML document yaml.v3 decodes into a map.
func FuzzJSONTyped(f *testing.F) {
	for _, s := range []string{"a: 1\n", "a: [1.0, -0.0, 1e21, 1e-7, 18446744073709551615, .inf]\n", "a: {b: \"<&>\\\"\\t\\x01\"}\n", "1: x\n", "a: !!binary aGk=\n", "a: ~\nb: [true, false, null]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var m1, m2 map[string]any
		if yaml.Unmarshal([]byte(doc), &m1) != nil || m1 == nil {
			return
		}
		if err := yaml.Unmarshal([]byte(doc), &m2); err != nil {
			t.Fatal(err)
		}
		var size int64
		_, ok := jsonTyped(m2, &size)
		j, err := json.Marshal(m1)
		if err != nil {
			if ok {
				t.Fatalf("jsonTyped answered for %q, which json.Marshal refuses: %v", doc, err)
			}
			return
		}
		ascii := bytes.IndexFunc(j, func(c rune) bool { return c >= 0x7f }) < 0
		if !ok {
			if ascii {
				t.Fatalf("jsonTyped declined %q, ASCII JSON %s", doc, j)
			}
			return
		}
		if !ascii {
			t.Fatalf("jsonTyped answered for %q, whose JSON is past ASCII", doc)
		}
		var want map[string]any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(m2, want) {
			t.Fatalf("%q: jsonTyped %#v, JSON round trip %#v", doc, m2, want)
		}
		if size != int64(len(j)) {
			t.Fatalf("%q: jsonTyped counted %d bytes, json.Marshal wrote %d: %s", doc, size, len(j), j)
		}
	})
}
