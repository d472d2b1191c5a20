package hugeheap

import (
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// hugePage is the size of a transparent huge page on amd64 and arm64 (with
// 4 KiB base pages): what an advised range is aligned to.
const hugePage = 2 << 20

// modeFile is where Linux says which THP mode it runs.
const modeFile = "/sys/kernel/mm/transparent_hugepage/enabled"

// Mode is the kernel's THP mode: "always", "madvise", "never", or "" when it
// cannot be read.
func Mode() string {
	b, err := os.ReadFile(modeFile)
	if err != nil {
		return ""
	}
	return parseMode(string(b))
}

// parseMode reads the file's one line, which lists the modes with the one in
// force in brackets ("always [madvise] never").
func parseMode(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return f[1 : len(f)-1]
		}
	}
	return ""
}

// Reserve maps n bytes of heap in one piece and advises it for huge pages, in
// THP "madvise" mode (see the package comment); otherwise it does nothing. It
// returns the range it advised (empty when it did nothing) and the error of
// the advice. It runs one collection (which takes the allocation back), with
// the collector's setting unchanged after it.
func Reserve(n int) (Range, error) {
	if n < 2*hugePage || Mode() != "madvise" {
		return Range{}, nil
	}
	// Off while the allocation lives: a collection that started now would
	// count n bytes as live and set the next goal from them.
	prev := debug.SetGCPercent(-1)
	r, err := advise(n)
	runtime.GC()
	debug.SetGCPercent(prev)
	return r, err
}

// Range is an address range, [Start, End).
type Range struct{ Start, End uintptr }

// Len is the range's length in bytes.
func (r Range) Len() int { return int(r.End - r.Start) }
