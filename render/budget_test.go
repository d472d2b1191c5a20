package render_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// spin is a jsonnet file that evaluates for minutes without deep recursion.
const spin = `local n = std.length([1 for i in std.range(1, 30000) for j in std.range(1, 30000) if i == -j]);
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'spin' }, data: { n: std.toString(n) } }
`

// TestBudgetBoundsJsonnetSpins renders four directory apps whose jsonnet
// spins, one after another as a preview would, with a 2 s budget: the first
// stops when the budget is spent, the other three are not run at all, instead
// of each taking its 60 s CPU limit.
func TestBudgetBoundsJsonnetSpins(t *testing.T) {
	root := t.TempDir()
	for i := range 4 {
		dir := filepath.Join(root, fmt.Sprintf("app%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.jsonnet"), []byte(spin), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := render.NewBudget(2 * time.Second)
	opts := render.DefaultOptions()
	opts.Plain.Jsonnet = &render.JsonnetOptions{}
	opts.Budget = b
	start := time.Now()
	for i := range 4 {
		_, err := render.Render(t.Context(), root, fmt.Sprintf("app%d", i), opts)
		var re *render.Error
		if !render.IsBudgetExceeded(err) || !errors.As(err, &re) || re.File != fmt.Sprintf("app%d", i) {
			t.Errorf("app%d: %v, want the budget exceeded on the target", i, err)
		}
	}
	t.Logf("4 spins: %s, budget used %s", time.Since(start), b.Used())
	if b.Used() < time.Second {
		t.Errorf("the spin was charged %s", b.Used())
	}
	if b.Left() != 0 {
		t.Errorf("left %s", b.Left())
	}
}
