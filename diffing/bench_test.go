package diffing

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDiffRename measures a kustomize namePrefix change over 200 ConfigMaps,
// the worst case of rename pairing (every deleted object against every created one).
func BenchmarkDiffRename(b *testing.B) {
	var base, head strings.Builder
	for i := range 200 {
		doc := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, namespace: shop}\ndata: {A: 'value-%d', B: b, C: c, D: d}\n---\n", i, i)
		base.WriteString(doc)
		head.WriteString(strings.Replace(doc, "name: cm-", "name: v2-cm-", 1))
	}
	in := Input{Name: "bench", Base: set(b, base.String()), Head: set(b, head.String())}
	opts := testOptions()
	b.ResetTimer()
	for b.Loop() {
		tr := Diff(in, opts)
		if len(tr.Findings) != 400 {
			b.Fatalf("got %d findings, want 400", len(tr.Findings))
		}
	}
}
