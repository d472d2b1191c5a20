package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The preview process allocates much and keeps little (decoded renders, live
// objects, YAML of diffs): with the default GOGC of 100 the collector ran for a
// sixth of a large preview's CPU. tuneGC lets the heap grow further while it is
// small, and falls back to the default as it grows, so a large repository's
// peak memory is no worse than with the default:
//
//   - after each collection, the next one is due at gcSoftCap of heap, but never
//     later than gcMaxPercent over the live heap, nor sooner than the default
//     (GOGC 100, twice the live heap);
//   - GOGC or GOMEMLIMIT set in the environment turn the tuning off.
//
// On make bench's PR-wide at T=200 (simulate) this took the collector's mark
// work from about 1.5 s to 0.45 s of the process's CPU, for a peak RSS of about
// 375 MiB instead of 320 MiB, with a cap of 256 MiB. Since a preview releases
// each target's renders once its report section is made (issue 25), the live
// heap of that run peaks at about 64 MiB instead of 119 MiB, and the cap is
// what sets its peak RSS: 160 MiB gives about 270 MiB instead of 350 MiB, for
// the same CPU time within the noise of a loaded machine. The cap complements
// that release, it does not replace it: with every target's objects held
// (119 MiB live) the heap goal stays at twice the live heap, near 240 MiB.
//
// A memory limit (debug.SetMemoryLimit) is not used: a live heap above it makes
// the collector run back to back, which is what a repository four times the
// bench size would get.
const (
	gcSoftCap    = 160 << 20
	gcMaxPercent = 400
)

var tuneOnce sync.Once

// tuneGC starts the tuning for the rest of the process (once; later calls do
// nothing).
func tuneGC() {
	tuneOnce.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		t.tune()
	})
}

// gcTuner sets GOGC after every collection. It learns of a collection by a
// sentinel object that becomes unreachable at once and is swept by it.
type gcTuner struct {
	sample []metrics.Sample
}

// gcSentinel is large enough not to be a tiny allocation, whose cleanups may
// never run.
type gcSentinel struct {
	_ *int
	_ [24]byte
}

func (t *gcTuner) tune() {
	metrics.Read(t.sample)
	live := uint64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(gcPercent(live))
	runtime.AddCleanup(new(gcSentinel), func(t *gcTuner) { t.tune() }, t)
}

// gcPercent is the GOGC for a live heap of live bytes: the next collection at
// gcSoftCap, within [100, gcMaxPercent].
func gcPercent(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	if live >= gcSoftCap/2 {
		return 100
	}
	return int(min(uint64(gcMaxPercent), (gcSoftCap-live)*100/live))
}
