package render

// RenderInProcess renders without a child process, for the benchmark that
// measures what the child costs.
var RenderInProcess = renderLocal

// NewUnsharedInputFinder is a finder that shares nothing between lookups and
// looks every path up through os.Root, as FindInputs did for one target on its
// own: the reference the shared finder must agree with.
func NewUnsharedInputFinder(root string) *InputFinder {
	f := NewInputFinder(root)
	f.unshared = true
	return f
}

// KernelReads counts the files render processes of this process (renders in
// process) opened from the file system.
func KernelReads() int64 { return kernelReads.Load() }

// DropCheckouts forgets the checkouts this process keeps.
func DropCheckouts() { dropCheckouts() }

// CheckoutsKept names the checkouts this process keeps, most recently used
// first, and the bytes each counts.
func CheckoutsKept() (ids []string, sizes []int64) {
	checkouts.mu.Lock()
	defer checkouts.mu.Unlock()
	for _, c := range checkouts.list {
		ids = append(ids, c.id)
		sizes = append(sizes, c.bytes())
	}
	return ids, sizes
}

// CheckoutCacheBytes is what a process keeps of one checkout under a memory
// limit.
var CheckoutCacheBytes = checkoutCacheBytes

// NoSourceMarkerCheck turns off, until the test ends, the second build that
// DRIFTPREVIEW_CHECK_SOURCE_MARKERS asks of every kustomize build with source
// markers, for tests that count what a build reads.
func NoSourceMarkerCheck(t interface{ Cleanup(func()) }) {
	was := checkSourceMarkers
	checkSourceMarkers = false
	t.Cleanup(func() { checkSourceMarkers = was })
}
