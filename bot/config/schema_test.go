package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/driftpreview/driftpreview/fixtures/golden"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		t.Fatalf("reading schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatalf("adding schema: %v", err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("compiling schema.json: %v", err)
	}
	return s
}

// validateYAML checks a YAML document against the schema the way an editor does:
// YAML → JSON value → schema.
func validateYAML(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return err
	}
	// YAML 1.2, which editors speak, has no timestamp type: 2027-03-01 is a string.
	var plain func(*yaml.Node)
	plain = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!timestamp" {
			n.Tag = "!!str"
		}
		for _, c := range n.Content {
			plain(c)
		}
	}
	plain(&n)
	var v any
	if err := n.Decode(&v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("converting to JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("reading JSON: %v", err)
	}
	return s.Validate(inst)
}

// TestSchemaExamples keeps schema.json and Parse in step: every valid example passes
// both, every invalid example fails both, and Parse's errors match the golden text.
func TestSchemaExamples(t *testing.T) {
	s := compileSchema(t)
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in testdata: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		valid := strings.HasSuffix(name, ".valid.yaml")
		if !valid && !strings.HasSuffix(name, ".invalid.yaml") {
			t.Errorf("%s: name it *.valid.yaml or *.invalid.yaml", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			schemaErr := validateYAML(t, s, data)
			_, parseErr := Parse(data, FileName)
			if valid {
				if schemaErr != nil {
					t.Errorf("schema rejects a valid example: %v", schemaErr)
				}
				if parseErr != nil {
					t.Errorf("Parse rejects a valid example: %v", parseErr)
				}
				return
			}
			if schemaErr == nil {
				t.Errorf("schema accepts an invalid example")
			}
			if parseErr == nil {
				t.Fatalf("Parse accepts an invalid example")
			}
			if n := len(Errors(parseErr)); n == 0 {
				t.Errorf("Parse error holds no *Error: %v", parseErr)
			}
			golden.Check(t, strings.TrimSuffix(file, ".yaml")+".err", []byte(parseErr.Error()+"\n"))
		})
	}
}

// TestSchemaKeys checks that each object in the schema allows exactly the keys Parse
// allows, and that the rule enum lists exactly the rule IDs diffing defines.
func TestSchemaKeys(t *testing.T) {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Enum       []string                   `json:"enum"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(Schema, &doc); err != nil {
		t.Fatal(err)
	}
	keys := func(m map[string]json.RawMessage) []string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	tests := []struct {
		def  string
		want []string
	}{
		{"", keysTop},
		{"target", keysTarget},
		{"helm", keysHelm},
		{"kustomize", keysKustomize},
		{"directory", keysDirectory},
		{"sync", keysSync},
		{"policy", keysPolicy},
		{"argocd", keysArgoCD},
		{"noise", keysNoise},
		{"statefulKind", keysStatefulKind},
		{"ignoreRule", keysIgnore},
	}
	for _, tt := range tests {
		got := keys(doc.Properties)
		if tt.def != "" {
			got = keys(doc.Defs[tt.def].Properties)
		}
		if diff := cmp.Diff(sorted(tt.want), got); diff != "" {
			t.Errorf("schema %q keys differ from Parse (-want +got):\n%s", tt.def, diff)
		}
	}
	if diff := cmp.Diff(ruleNames(), sorted(doc.Defs["rule"].Enum)); diff != "" {
		t.Errorf("schema.json $defs.rule.enum differs from diffing's rules; edit it to match (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sorted(severities), sorted(doc.Defs["severity"].Enum)); diff != "" {
		t.Errorf("schema severity enum differs (-want +got):\n%s", diff)
	}
}
