package render

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestCollectorOnAfterInit: initgc turns the collector off for the packages'
// init; render's init must turn it back on, or every program and test binary
// that imports render would run without a collector.
func TestCollectorOnAfterInit(t *testing.T) {
	if os.Getenv("GOGC") == "off" {
		t.Skip("GOGC=off in the environment")
	}
	got := debug.SetGCPercent(100)
	debug.SetGCPercent(got)
	if got < 0 {
		t.Fatalf("the collector is off after render's init (GC percent %d)", got)
	}
}
