package preview

import (
	"runtime"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestRunHoldsTargetsInFlight: a preview holds the rendered objects of the
// targets in flight only, not of every target it has compared (issue 25). As
// each target's report section is made, the render cache holds at most the
// base and head renders of the targets still in flight (one per CPU), and the
// live heap after a collection, less the encoded renders of the content cache
// (bounded on its own), grows with the number of targets by no more than what
// the report keeps of each (diffs, findings, notes): compared between fleets of
// 40 and 160 targets.
func TestRunHoldsTargetsInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 400 targets")
	}
	peak := func(n int) (held int, heap uint64) {
		base, head := t.TempDir(), t.TempDir()
		writeFleet(t, base, n, "nginx:1.25")
		writeFleet(t, head, n, "nginx:1.27")
		repo := gitfixture.BaseHead(t, base, head)
		req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow}
		var ms runtime.MemStats
		req.afterTarget = func(c *renderCache) {
			held = max(held, c.held())
			runtime.GC()
			runtime.ReadMemStats(&ms)
			// The process-wide content cache is bounded on its own
			// (maxSharedRenderBytes), by the size of its encodings.
			c.content.mu.Lock()
			cached := uint64(c.content.size)
			c.content.mu.Unlock()
			heap = max(heap, ms.HeapAlloc-min(cached, ms.HeapAlloc))
		}
		rep, err := Run(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Targets) != n || rep.Targets[n-1].Summary.Modified != 1 {
			t.Fatalf("unexpected report: %d targets, %+v", len(rep.Targets), rep.Targets[n-1].Summary)
		}
		return held, heap
	}
	inFlight := 2 * runtime.GOMAXPROCS(0) // base and head of each target in flight
	held40, heap40 := peak(40)
	held160, heap160 := peak(160)
	t.Logf("renders held: %d (40 targets), %d (160 targets); live heap %d KiB, %d KiB", held40, held160, heap40>>10, heap160>>10)
	if held160 > inFlight {
		t.Errorf("after a target's report section is made the render cache holds %d renders of 160 targets, want at most %d (base and head of the targets in flight)", held160, inFlight)
	}
	// What the report keeps of one target of four objects is about 10 KiB;
	// its objects at base and head, held for the whole run, were about 20
	// KiB more.
	const perTarget = 20 << 10
	if heap160 > heap40 && (heap160-heap40)/120 > perTarget {
		t.Errorf("the live heap grows by %d KiB per target from 40 to 160 targets, want at most %d KiB: a holder keeps every target's objects", (heap160-heap40)/120>>10, perTarget>>10)
	}
}
