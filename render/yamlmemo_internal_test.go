package render

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
)

// TestCheckYAMLRemembersPasses holds checkYAML's memo to what it may skip: a
// content that passed is not read again, under any file name; a refused one is
// refused every time, naming its own file; and a content one byte away from a
// passed one is checked on its own.
func TestCheckYAMLRemembersPasses(t *testing.T) {
	good := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n")
	if err := checkYAML(good, "a.yaml"); err != nil {
		t.Fatal(err)
	}
	before := yamlChecks.Load()
	if err := checkYAML(good, "b.yaml"); err != nil {
		t.Fatal(err)
	}
	if n := yamlChecks.Load() - before; n != 0 {
		t.Errorf("a content that passed was read again (%d reads)", n)
	}

	// Deeper than MaxDepth, and otherwise the same bytes as a passing one.
	deep := []byte(strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2) + "\n")
	shallow := []byte(strings.Repeat("[", 3) + strings.Repeat("]", 3) + "\n")
	if err := checkYAML(shallow, "same.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"same.yaml", "other.yaml", "same.yaml"} {
		err := checkYAML(deep, file)
		var re *Error
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "levels deep") {
			t.Fatalf("%s: deep document: %v, want refused as too deep", file, err)
		}
		if re.File != file {
			t.Errorf("refusal names %q, want %q", re.File, file)
		}
	}

	bomb := []byte("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n")
	near := []byte(strings.Replace(string(bomb), "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]", "f: &f [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]", 1))
	if err := checkYAML(near, "near.yaml"); err != nil {
		t.Fatalf("near-bomb of 10^5 nodes: %v", err)
	}
	if err := checkYAML(bomb, "near.yaml"); err == nil || !strings.Contains(err.Error(), "alias bomb") {
		t.Errorf("bomb after a passing file of the same name and length: %v, want refused", err)
	}
}

// TestCheckYAMLMemoBounded: past maxPassedYAML contents the memo starts again
// empty, and still answers right.
func TestCheckYAMLMemoBounded(t *testing.T) {
	for i := range maxPassedYAML {
		passedYAML.add(sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)}))
	}
	passedYAML.mu.Lock()
	n := len(passedYAML.sums)
	passedYAML.mu.Unlock()
	if n > maxPassedYAML {
		t.Fatalf("memo holds %d sums, more than %d", n, maxPassedYAML)
	}
	doc := []byte("k: fresh-after-bound\n")
	if err := checkYAML(doc, "x.yaml"); err != nil {
		t.Fatal(err)
	}
	passedYAML.mu.Lock()
	n = len(passedYAML.sums)
	passedYAML.mu.Unlock()
	if n > maxPassedYAML {
		t.Errorf("memo holds %d sums after one more, more than %d", n, maxPassedYAML)
	}
	if !passedYAML.has(sha256.Sum256(doc)) {
		t.Error("the content passed after the bound is not remembered")
	}
}
