package diffing

import (
	"math/rand/v2"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// checkAppendYAML compares appendYAML with yaml/v2's Marshal on obj; it reports
// whether appendYAML wrote it (rather than leaving it to yaml/v2).
func checkAppendYAML(t *testing.T, name string, obj map[string]any) bool {
	t.Helper()
	got, ok := appendYAML(nil, obj)
	if !ok {
		return false
	}
	want, err := yamlv2.Marshal(obj)
	if err != nil {
		t.Fatalf("%s: yaml/v2: %v", name, err)
	}
	if string(got) != string(want) {
		t.Errorf("%s: appendYAML writes\n%s\nyaml/v2 writes\n%s", name, got, want)
	}
	return true
}

// TestAppendYAMLMatchesYAMLv2 proves appendYAML byte-identical to yaml/v2 on the
// tricky values (as values, list items, nested values and keys), and that it
// takes those of printable ASCII itself (most tricky values are other
// characters, which it leaves to yaml/v2).
func TestAppendYAMLMatchesYAMLv2(t *testing.T) {
	written, total := 0, 0
	for i, v := range trickyValues() {
		fields := map[string]any{"v": v, "list": []any{v, "x"}, "nested": map[string]any{"deeper": map[string]any{"v": v}},
			"seqs": []any{[]any{v, []any{v}}, map[string]any{"a": v, "b": []any{v}}}}
		if s, ok := v.(string); ok {
			fields[s] = "as key"
			fields["m"] = map[string]any{s: v}
			fields["l"] = []any{map[string]any{s: []any{v}}}
		}
		if !plainYAML(fields) {
			continue
		}
		total++
		if checkAppendYAML(t, "tricky value "+string(rune('0'+i%10)), fields) {
			written++
		}
	}
	t.Logf("%d of %d plain documents written by appendYAML", written, total)
	if written < 250 {
		t.Errorf("appendYAML wrote only %d of %d documents", written, total)
	}
}

// TestAppendYAMLRandomDocuments compares appendYAML with yaml/v2 on random
// nested documents whose strings mix letters, digits, spaces and the
// characters YAML gives a meaning, with keys that sort by their digit runs,
// and lengths around the 80-column folding width.
func TestAppendYAMLRandomDocuments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aAzZyYnNtTfFoO0123456789 -_.:/#'\"\\,[]{}?&*!|>%@`~+=<e"
	str := func() string {
		n := r.IntN(12)
		if r.IntN(8) == 0 {
			n = 40 + r.IntN(80)
		}
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	words := []string{"", "true", "no", "80", "0x1F", "1_000", "1e3", "1.5", "2026-12-01", "12:30", "-", "--flag=x", "a: b", "x #y", "<<", "~", ".5", "app.kubernetes.io/name", "a10", "a9", "a09", "a010"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(10); {
		case k < 2 && depth < 5:
			m := map[string]any{}
			for range r.IntN(5) {
				key := str()
				if r.IntN(3) == 0 {
					key = words[r.IntN(len(words))]
				}
				m[key] = gen(depth + 1)
			}
			return m
		case k < 4 && depth < 5:
			l := []any{}
			for range r.IntN(4) {
				l = append(l, gen(depth+1))
			}
			return l
		case k == 4:
			return int64(r.IntN(2000) - 1000)
		case k == 5:
			return []any{nil, true, false, 0.25, 1.5e-7, 1e21}[r.IntN(6)]
		case k == 6:
			return words[r.IntN(len(words))]
		}
		return str()
	}
	written := 0
	for i := range 3000 {
		doc := map[string]any{}
		for range 1 + r.IntN(6) {
			doc[str()] = gen(0)
		}
		if !plainYAML(doc) || !keysOrdered(doc) {
			continue
		}
		if checkAppendYAML(t, "random document "+strings.Repeat("#", i%3), doc) {
			written++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of 3000 random documents written by appendYAML", written)
	if written < 1000 {
		t.Errorf("appendYAML wrote only %d random documents", written)
	}
}

// keysOrdered reports whether yamlKeyLess orders the keys of every map in v
// totally. It does not always ("12:30" < "1e3" < "4x" < "12:30": digit runs
// compare as numbers, a letter after a non-letter): yaml/v2 sorts such keys in
// an order that depends on the map's iteration order, so no text is the right
// one to compare with.
func keysOrdered(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for a, av := range x {
			for b := range x {
				if a != b && yamlKeyLess(a, b) == yamlKeyLess(b, a) {
					return false
				}
				for c := range x {
					if yamlKeyLess(a, b) && yamlKeyLess(b, c) && !yamlKeyLess(a, c) {
						return false
					}
				}
			}
			if !keysOrdered(av) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !keysOrdered(e) {
				return false
			}
		}
	}
	return true
}

// TestToYAMLTakesAppendYAML: a typical Deployment is written by appendYAML, and
// toYAML gives the same text as yaml/v2.
func TestToYAMLTakesAppendYAML(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "labels": map[string]any{"app.kubernetes.io/name": "web", "tier": "1"}},
		"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "web", "image": "registry.example.com/web:1.25.3", "args": []any{"--port=8080", "-v", "2"},
				"ports":     []any{map[string]any{"containerPort": int64(8080), "name": "http"}},
				"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "1Gi"}, "requests": map[string]any{}}},
		}}}},
	}
	if !checkAppendYAML(t, "deployment", obj) {
		t.Fatal("appendYAML left a plain Deployment to yaml/v2")
	}
	want, _ := yamlv2.Marshal(obj)
	if got := toYAML(&unstructured.Unstructured{Object: obj}); got != string(want) {
		t.Errorf("toYAML:\n%s\nwant\n%s", got, want)
	}
}

// FuzzAppendYAML: any string as a key and a value, alone, nested and in lists.
func FuzzAppendYAML(f *testing.F) {
	for _, v := range trickyValues() {
		if s, ok := v.(string); ok {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		doc := map[string]any{s: s, "k": []any{s, map[string]any{s: []any{s}}}, "n": map[string]any{"m": map[string]any{"v": s}}}
		if plainYAML(doc) {
			checkAppendYAML(t, "fuzz", doc)
		}
	})
}
