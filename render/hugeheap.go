package render

import (
	"os"
	"strconv"

	"github.com/driftpreview/driftpreview/render/internal/hugeheap"
)

// Huge pages for the heap (render/internal/hugeheap): where the kernel gives
// transparent huge pages only to memory that asks (THP "madvise", Debian's and
// Ubuntu's default), every process of a preview has its heap's first
// heapReserve bytes mapped at once and advised for them (a render process:
// childHeapReserve). On make bench's cold PR-wide at T=200 that took the page
// faults of each of the three processes from about 38,000 to 6,000 and the
// run's CPU from 10.05 to 9.66 s (means of 8 alternating pairs; switching the
// whole machine to THP "always" saved 7.1% in the same test), issue 25.
const heapReserve = 256 << 20

// heapReserveEnv tells a render process how much heap to reserve.
const heapReserveEnv = "DRIFTPREVIEW_RENDER_HEAP"

// ReserveHeap reserves the calling process's heap for huge pages (see
// heapReserve); the CLI calls it first thing. Render processes reserve their
// own (childHeapReserve). It runs one collection.
func ReserveHeap() {
	_, _ = hugeheap.Reserve(heapReserve)
}

// childHeapReserve is the heap a render process with a memory limit of mem
// bytes (0: none) reserves. RLIMIT_DATA counts the reserved region whether the
// heap uses it or not, and what the heap cannot place in it (a goroutine
// stack that doubles, a string bigger than what is free there) is mapped past
// it. A render process idles at about 90 MiB of the limit (the binary's data,
// the runtime, the heap after init), so a reservation under a small limit
// leaves too little to grow into: at 256 MiB, with 42 MiB reserved, a
// template that calls itself ran out of memory before it reached
// text/template's depth limit, and at 128 MiB a list that doubles crashed the
// runtime in a collection instead of failing a heap mapping (an error that
// names no limit). So a render process reserves only under the default limit
// (512 MiB) or more: a quarter of it, at most childHeapReserveMax, which
// render's hostile tests at 512 MiB check still ends every bomb as before.
// None under the race detector, whose shadow memory for the region would
// count too.
func childHeapReserve(mem int64) int64 {
	if raceMemoryFactor != 1 {
		return 0
	}
	if mem <= 0 {
		return childHeapReserveMax
	}
	if mem < 512<<20 {
		return 0
	}
	return min(childHeapReserveMax, mem/4)
}

// childHeapReserveMax is the most a render process reserves: a render
// process's heap stays near childGCSoftCap (160 MiB), and 128 MiB reserved
// took its page faults on make bench's PR-wide from about 33,000 to 6,000,
// as 256 MiB did (64 MiB: 18,000).
const childHeapReserveMax = 128 << 20

// reserveChildHeap is the render process's reservation, from the parent's
// word (heapReserveEnv); it runs in the child's init, before the collector is
// back on (initgc).
func reserveChildHeap() {
	n, err := strconv.ParseInt(os.Getenv(heapReserveEnv), 10, 64)
	if err != nil || n <= 0 {
		return
	}
	_, _ = hugeheap.Reserve(int(min(n, heapReserve)))
}
