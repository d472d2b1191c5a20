package initgc

import (
	"runtime/debug"
	"testing"
)

// TestRestore: Restore gives back the setting init found (the test runs with
// the default GOGC or the one the environment sets; prev holds it), and a
// second call does not undo a setting made since.
func TestRestore(t *testing.T) {
	if prev < 0 {
		t.Skip("GOGC=off in the environment")
	}
	Restore()
	if got := debug.SetGCPercent(prev); got != prev {
		t.Fatalf("after Restore the GC percent is %d, want %d (what init found)", got, prev)
	}
	debug.SetGCPercent(prev + 7)
	Restore()
	if got := debug.SetGCPercent(prev); got != prev+7 {
		t.Errorf("a second Restore changed the GC percent to %d, want %d", got, prev+7)
	}
}
