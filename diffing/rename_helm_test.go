package diffing

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestDiffHelmReleaseRename renders the same chart under two release names with the
// real Helm renderer: every object is deleted and recreated under a new name, which
// the file diff shows as a one-line change of releaseName.
func TestDiffHelmReleaseRename(t *testing.T) {
	renderAs := func(release string) render.ObjectSet {
		opts := render.DefaultOptions()
		opts.Helm.ReleaseName = release
		opts.Namespace = "shop"
		opts.Helm.SkipCRDs = true
		set, err := render.Render(t.Context(), "../render/testdata/helm", "chart", opts)
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	base, head := renderAs("shop"), renderAs("shop-v2")
	got := Diff(Input{Name: "shop", Path: "chart", Base: base, Head: head}, testOptions())

	var renames []string
	for _, f := range got.Findings {
		if f.Rule == RuleRename {
			renames = append(renames, f.Key.String())
			if !strings.Contains(f.Message, "shop-v2") {
				t.Errorf("rename of %s does not name the new object: %s", f.Key, f.Message)
			}
		}
	}
	t.Logf("renames: %v", renames)
	if len(renames) == 0 {
		t.Fatalf("a release rename must be reported as renames; findings: %v", brief(got.Findings))
	}
	// Every object whose name carries the release name is renamed, none is missed.
	for _, o := range base.Objects {
		if strings.HasPrefix(o.Key.Name, "shop-") && !slices.Contains(renames, o.Key.String()) {
			t.Errorf("%s was renamed by the release rename but not reported; renames: %v", o.Key, renames)
		}
	}
}
