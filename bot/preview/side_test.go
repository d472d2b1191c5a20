package preview

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
)

// TestRenderAtNamesTheSideItIsGiven: the note on a target missing at one side
// names the side the pipeline passes, whatever the checkout directory is called
// (a head checkout in a directory named "base", a base checkout named otherwise);
// renderAt once guessed the side from the directory name.
func TestRenderAtNamesTheSideItIsGiven(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		c    checkout
		want string
	}{
		{checkout{side: "head", dir: filepath.Join(tmp, "base")}, "apps/web does not exist at head."},
		{checkout{side: "base", dir: filepath.Join(tmp, "checkout-1")}, "apps/web does not exist at base."},
	} {
		if err := os.MkdirAll(tc.c.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var p pipeline
		set, note, err := p.renderAt(t.Context(), tc.c, config.Target{Name: "web", Path: "apps/web"})
		if err != nil || len(set.Objects) != 0 || note != tc.want {
			t.Errorf("renderAt(%s in %s) = %d objects, %q, %v; want no objects and %q", tc.c.side, filepath.Base(tc.c.dir), len(set.Objects), note, err, tc.want)
		}
	}
}
