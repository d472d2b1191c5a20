package main

import (
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, gcMaxPercent},
		{10 << 20, gcMaxPercent},
		{gcSoftCap / 5, gcMaxPercent},
		{gcSoftCap / 4, 300},
		{gcSoftCap / 3, 200},
		{gcSoftCap/2 - 1, 100},
		{gcSoftCap / 2, 100},
		{gcSoftCap, 100},
		{4 << 30, 100},
	} {
		if got := gcPercent(c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

// TestTuneGC checks that the tuning sets GOGC from the live heap and keeps doing
// so after collections.
//
// It runs in a fresh process (this test binary again): the tuning reads the live
// heap, and the heap the package's other tests leave behind may be over half of
// gcSoftCap, where the tuning rightly keeps the default.
func TestTuneGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the tuning is off")
	}
	if os.Getenv("DRIFTPREVIEW_TUNEGC_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestTuneGC$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DRIFTPREVIEW_TUNEGC_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("TestTuneGC in a fresh process: %v\n%s", err, out)
		}
		return
	}
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	tuneGC()
	if got := debug.SetGCPercent(7); got <= 100 {
		t.Fatalf("GOGC after tuneGC is %d, want more than the default for a small heap", got)
	}
	// A collection runs the sentinel's cleanup, which sets GOGC again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		p := debug.SetGCPercent(7)
		if p != 7 {
			if p <= 100 {
				t.Fatalf("GOGC after a collection is %d, want more than the default", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("GOGC was not set again after collections")
		}
	}
}
