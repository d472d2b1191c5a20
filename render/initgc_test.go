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

// TestChildGCPercent: a render process runs with GOGC childGCPercent while its
// live heap is small, and less as it grows, so the heap's goal (live ×
// (1 + GOGC/100)) stays at childGCSoftCap, never past it unless even the
// default 100 is more.
func TestChildGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, live := range []uint64{1 * mib, 9 * mib, 17 * mib, 20 * mib, 40 * mib, 79 * mib, 80 * mib, 500 * mib} {
		got := childGCPercentFor(live)
		if got < 100 || got > childGCPercent {
			t.Errorf("live %d MiB: GOGC %d, want within [100, %d]", live/mib, got, childGCPercent)
		}
		goal := live + live*uint64(got)/100
		switch {
		case got == childGCPercent && goal > childGCSoftCap:
			t.Errorf("live %d MiB: GOGC %d puts the heap goal at %d MiB, past %d MiB", live/mib, got, goal/mib, childGCSoftCap/mib)
		case got == 100 && live < childGCSoftCap/2:
			t.Errorf("live %d MiB: GOGC 100 though the goal at %d MiB would be under the cap", live/mib, 2*live/mib)
		case got > 100 && got < childGCPercent && (goal > childGCSoftCap || goal < childGCSoftCap-2*mib):
			t.Errorf("live %d MiB: GOGC %d puts the heap goal at %d MiB, want about %d MiB", live/mib, got, goal/mib, childGCSoftCap/mib)
		}
	}
	if got := childGCPercentFor(0); got != childGCPercent {
		t.Errorf("no collection yet: GOGC %d, want %d", got, childGCPercent)
	}
	if got := childGCPercentFor(9 << 20); got != childGCPercent {
		t.Errorf("live 9 MiB (the bench repository's renders): GOGC %d, want %d", got, childGCPercent)
	}
	if got := childGCPercentFor(40 << 20); got != 300 {
		t.Errorf("live 40 MiB: GOGC %d, want 300 (goal 160 MiB)", got)
	}
}
