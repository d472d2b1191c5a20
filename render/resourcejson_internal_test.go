package render

import (
	"bytes"
	"strings"
	"testing"

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
	rs = append(rs, a)
	for _, r := range rs {
		want, werr := r.MarshalJSON()
		got, gerr := resourceJSON(r)
		if (werr == nil) != (gerr == nil) || !bytes.Equal(got, want) {
			s := r.String()
			t.Errorf("resource\n%s\nresourceJSON: %s (%v)\nMarshalJSON:  %s (%v)", s, got, gerr, want, werr)
		}
	}
}
