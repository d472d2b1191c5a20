package render

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// trickyStrings are values whose YAML form a printer must quote, fold, escape or
// block, or which YAML 1.1 and 1.2 read differently.
var trickyStrings = []string{
	"", " ", "  leading", "trailing ", "a\nb", "a\n", "\n", "a\n\n", "\na", "a\r\nb", "\r", "\t", "tab\tin",
	"#x", "x #y", "- x", ": x", "x: y", "x:y", "{a}", "[a]", "*a", "&a", "!a", "%a", "@a", "`a", "'a", "\"a", "a'b\"c",
	"yes", "no", "on", "off", "y", "n", "Y", "true", "True", "TRUE", "false", "null", "Null", "NULL", "~",
	"0x1F", "0o17", "017", "08", "1_000", "1e3", "1E3", ".5", "5.", "+1", "-1", "-0", "0", "1.0", "1e400",
	".inf", "-.Inf", ".nan", ".NaN", "1:20", "1:20:30", "2001-12-14", "2001-12-14T21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
	"<<", "=", "?", "? x", "|", ">", "--- x", "...", "a...", "---",
	"héllo", "日本語", "emoji 🚀", "\u0085", "\u2028", "\u2029", "\ufeff", "\x01", "\u00a0nbsp",
	strings.Repeat("word ", 40), strings.Repeat("x", 200), strings.Repeat("a  b ", 30), "line one\n  indented\nline three",
	"trailing spaces   \nnext", "a\n \nb", " \n", "\t\n", "key: value\nother: [1, 2]\n", "- a\n- b\n", "<html>&amp;</html>",
}

// TestKustomizeOutputAsYAML: reading kustomize's resources straight from their
// JSON gives exactly the objects that reading the YAML resmap.AsYaml prints
// gives (what `kustomize build` prints), or the same error, for values that YAML
// printers and readers treat specially, as values and as keys, and numbers of
// every kind.
func TestKustomizeOutputAsYAML(t *testing.T) {
	// Each string alone, as a value and as a key, written as a YAML
	// double-quoted scalar with only ASCII in it (Go's escapes are YAML's).
	for i, s := range trickyStrings {
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  v: %s\n  %s: \"key\"\n", strconv.QuoteToASCII(s), strconv.QuoteToASCII(s))
		compareOutput(t, fmt.Sprintf("string %d %q", i, s), map[string]string{"/app/cm.yaml": cm, "/app/kustomization.yaml": "resources: [cm.yaml]\n"})
	}
	// Raw YAML: numbers, timestamps, binary, anchors and merge keys, flow style,
	// block scalars, as people write them, through transformers and a generator.
	raw := `apiVersion: example.com/v1
kind: Widget
metadata:
  name: raw
  labels: {a: "1", b: 'x'}
spec:
  ints: [0, -0, 1, -1, 007, 0x1F, 0o17, 1_000, 9223372036854775807, 9223372036854775808, -9223372036854775809, 18446744073709551616, 123456789012345678901234567890]
  floats: [0.0, -0.0, 1.0, 2.5, 1e3, 1.5e-7, 1e21, 1e22, 6.02e23, .5, -.5, 3.0e+2, 0.1, 123456789.123456789]
  bools: [true, false, True, FALSE]
  yaml11: [yes, no, on, off, y, n]
  nulls: [null, ~, Null, ]
  time: 2001-12-14t21:59:43.10-05:00
  date: 2002-12-14
  bin: !!binary aGVsbG8gd29ybGQ=
  str: !!str 123
  base: &base {x: 1, y: [a, b]}
  merged:
    <<: *base
    y: override
  folded: >
    folded text
    more text

    para
  literal: |-
    keep
      indent
  keep: |+
    kept

  quoted: "tab\there \u00e9 \x41"
  ascii: "tab\there \x41"
  single: 'it''s'
  nested: [[[], {}], {a: {b: {c: [1, {d: null}]}}}]
  emptyStr: ""
  emptyMap: {}
  emptyList: []
`
	var all strings.Builder
	all.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strings\ndata:\n")
	for i, s := range trickyStrings {
		if strings.IndexFunc(s, func(r rune) bool { return r >= 0x7f }) < 0 {
			fmt.Fprintf(&all, "  v%03d: %s\n  %s: \"key %d\"\n", i, strconv.QuoteToASCII(s), strconv.QuoteToASCII(s), i)
		}
	}
	compareOutput(t, "together", map[string]string{
		"/app/kustomization.yaml": "resources: [strings.yaml, raw.yaml]\nnamePrefix: p-\nlabels: [{pairs: {team: shop}}]\nconfigMapGenerator:\n- name: gen\n  literals: [A=1, B=yes, C=0x1F, D=]\n",
		"/app/strings.yaml":       all.String(),
		"/app/raw.yaml":           raw,
	})
}

// compareOutput builds /app from files and compares kustomizeOutput with
// parsing what resmap.AsYaml prints.
func compareOutput(t *testing.T, name string, files map[string]string) {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	for p, c := range files {
		if err := fsys.WriteFile(p, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/app")
	if err != nil {
		t.Logf("%s: kustomize refuses it: %v", name, err)
		return
	}
	const file = "app/kustomization.yaml"
	sb := &sandbox{}
	got, gotNotes, gotErr := kustomizeOutput(sb, file, rm)
	var want []parsedObject
	var wantNotes []string
	yml, wantErr := rm.AsYaml()
	if wantErr != nil {
		wantErr = &Error{File: file, Err: fmt.Errorf("kustomize output: %w", wantErr)}
	} else if want, wantNotes, wantErr = parse(yml, file); wantErr != nil {
		wantErr = &Error{File: file, Err: fmt.Errorf("reading kustomize output: %w", wantErr)}
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(gotNotes, wantNotes) {
		t.Errorf("%s: error %v, notes %q; want error %v, notes %q", name, gotErr, gotNotes, wantErr, wantNotes)
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d objects, want %d", name, len(got), len(want))
	}
	for i := range want {
		g, w := got[i].Obj.Object, want[i].Obj.Object
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: %s read from JSON differs from the YAML kustomize prints:\n%s", name, want[i].Key, valueDiff("", g, w))
		}
		if got[i].Key != want[i].Key {
			t.Errorf("%s: key %v, want %v", name, got[i].Key, want[i].Key)
		}
	}
	if wantErr == nil && (sb.out <= 0 || sb.read != sb.out) {
		t.Errorf("%s: output counted %d (read %d), want the size of the output", name, sb.out, sb.read)
	}
}

// valueDiff lists where two decoded values differ, with their Go types.
func valueDiff(at string, g, w any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %T %#v, want %T %#v\n", at, g, g, w, w)
		}
		var b strings.Builder
		for k := range wv {
			if _, ok := gv[k]; !ok {
				fmt.Fprintf(&b, "%s.%q: missing\n", at, k)
				continue
			}
			b.WriteString(valueDiff(fmt.Sprintf("%s.%q", at, k), gv[k], wv[k]))
		}
		for k := range gv {
			if _, ok := wv[k]; !ok {
				fmt.Fprintf(&b, "%s.%q: extra\n", at, k)
			}
		}
		return b.String()
	case []any:
		gv, ok := g.([]any)
		if !ok || len(gv) != len(wv) {
			return fmt.Sprintf("%s: %T %#v, want %T %#v\n", at, g, g, w, w)
		}
		var b strings.Builder
		for i := range wv {
			b.WriteString(valueDiff(fmt.Sprintf("%s[%d]", at, i), gv[i], wv[i]))
		}
		return b.String()
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("%s: %T %#v, want %T %#v\n", at, g, g, w, w)
	}
	return ""
}

// TestTransformationsSkipped: kustomize's transformer list is written empty in
// this process (and, set by a variable's initializer, in a render process before
// it serves); other values are encoded as kyaml always does.
func TestTransformationsSkipped(t *testing.T) {
	b, err := kyaml.Marshal(&resource.Transformations{{Path: "base/deploy.yaml"}})
	if err != nil || len(b) != 0 {
		t.Errorf("transformations encoded as %q, %v; want nothing", b, err)
	}
	b, err = kyaml.Marshal(&resource.Origin{Path: "base/deploy.yaml"})
	if err != nil || string(b) != "path: base/deploy.yaml\n" {
		t.Errorf("origin encoded as %q, %v", b, err)
	}
}
