package render

import (
	"fmt"
	"testing"

	"sigs.k8s.io/kustomize/api/resource"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestOriginMemo holds the memo of origin annotations to parseOrigin: the same
// answer for every kind of origin kustomize writes (and for ones it refuses),
// each text parsed once, and texts that differ in one character parsed on
// their own.
func TestOriginMemo(t *testing.T) {
	str := func(o resource.Origin) string {
		s, err := o.String()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	gen := func(in, kind string) resource.Origin {
		return resource.Origin{ConfiguredIn: in, ConfiguredBy: kyaml.ResourceIdentifier{TypeMeta: kyaml.TypeMeta{APIVersion: "builtin", Kind: kind}}}
	}
	cases := []struct {
		raw             string
		path, generator string
		ok              bool
	}{
		{str(resource.Origin{Path: "../checkout/apps/a/base/workloads.yaml"}), "../checkout/apps/a/base/workloads.yaml", "", true},
		{str(resource.Origin{Path: "../checkout/apps/b/base/workloads.yaml"}), "../checkout/apps/b/base/workloads.yaml", "", true},
		{str(gen("../checkout/apps/a/overlays/dev/kustomization.yaml", "ConfigMapGenerator")), "../checkout/apps/a/overlays/dev/kustomization.yaml", "ConfigMapGenerator", true},
		{str(gen("../checkout/apps/a/overlays/dev/kustomization.yaml", "SecretGenerator")), "../checkout/apps/a/overlays/dev/kustomization.yaml", "SecretGenerator", true},
		{str(resource.Origin{Path: "x.yaml", Repo: "https://example.com/r"}), "", "", false},
		{"configuredBy:\n  apiVersion: example.com/v1\n  kind: Gen\nconfiguredIn: k.yaml\n", "k.yaml", "", true},
		{"path: [unclosed\n", "", "", false},
		{"", "", "", true},
	}
	for _, round := range []string{"first", "again"} {
		for _, c := range cases {
			before := originParses.Load()
			p, g, ok := origins.parse(c.raw)
			if p != c.path || g != c.generator || ok != c.ok {
				t.Errorf("%s: parse(%q) = %q, %q, %v; want %q, %q, %v", round, c.raw, p, g, ok, c.path, c.generator, c.ok)
			}
			if want := parseOrigin(c.raw); want != (originParse{p, g, ok}) {
				t.Errorf("%s: memo %v, parseOrigin %v for %q", round, originParse{p, g, ok}, want, c.raw)
			}
			if n := originParses.Load() - before - 1; round == "again" && n != 0 {
				t.Errorf("%q parsed again (%d times)", c.raw, n)
			}
		}
	}
}

// TestOriginMemoBounded: past maxOriginMemo texts the memo starts again, and
// still answers right.
func TestOriginMemoBounded(t *testing.T) {
	for i := range maxOriginMemo + 10 {
		raw := fmt.Sprintf("path: f%d.yaml\n", i)
		if p, _, ok := origins.parse(raw); !ok || p != fmt.Sprintf("f%d.yaml", i) {
			t.Fatalf("parse(%q) = %q, %v", raw, p, ok)
		}
	}
	origins.mu.Lock()
	n := len(origins.m)
	origins.mu.Unlock()
	if n > maxOriginMemo {
		t.Errorf("memo holds %d texts, more than %d", n, maxOriginMemo)
	}
}
