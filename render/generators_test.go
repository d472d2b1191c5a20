package render_test

import (
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestGeneratedHashSuffix: the render step marks the names whose hash suffix
// kustomize's configMapGenerator/secretGenerator wrote (also under a nameSuffix the
// target adds on top), and nothing else: not a generator with
// disableNameSuffixHash, not a committed object whose name merely looks hashed.
func TestGeneratedHashSuffix(t *testing.T) {
	for _, suffix := range []string{"", "-prod"} {
		opts := render.DefaultOptions()
		opts.Kustomize.NameSuffix = suffix
		set, err := render.Render(t.Context(), "testdata/generators", ".", opts)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, o := range set.Objects {
			got[o.Key.Kind+"/"+o.Key.Name] = o.HashSuffix
		}
		var settings, creds string
		for k, h := range got {
			switch {
			case strings.HasPrefix(k, "ConfigMap/shop-settings"+suffix+"-"):
				settings = h
			case strings.HasPrefix(k, "Secret/shop-creds"+suffix+"-"):
				creds = h
			}
		}
		if len(settings) != 10 || len(creds) != 10 {
			t.Errorf("nameSuffix %q: generated ConfigMap and Secret must carry their 10-character hash suffix; got %v", suffix, got)
		}
		for _, k := range []string{"ConfigMap/shop-fixed" + suffix, "ConfigMap/shop-lookalike-5tb7hg2c8f" + suffix} {
			if h, ok := got[k]; !ok || h != "" {
				t.Errorf("nameSuffix %q: %s must be rendered without a hash suffix mark; got %v", suffix, k, got)
			}
		}
		for k, h := range got {
			if h != "" && !strings.HasSuffix(k, "-"+h) {
				t.Errorf("%s: the mark %q is not the end of its name", k, h)
			}
		}
	}
}
