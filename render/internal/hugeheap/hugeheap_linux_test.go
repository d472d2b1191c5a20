package hugeheap

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// TestReserve: in "madvise" mode the reserved range is advised (the kernel
// lists "hg" among the flags of every mapping in it), the allocation that
// mapped it is collected, and the collector's setting is what it was.
func TestReserve(t *testing.T) {
	if m := Mode(); m != "madvise" {
		t.Skipf("THP mode is %q here; Reserve acts only in madvise mode", m)
	}
	const n = 64 << 20
	debug.SetGCPercent(123)
	defer debug.SetGCPercent(100)
	r, err := Reserve(n)
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() < n-2*hugePage || r.Start%hugePage != 0 || r.End%hugePage != 0 {
		t.Fatalf("advised %#x-%#x (%d bytes), want at least %d bytes aligned to %d", r.Start, r.End, r.Len(), n-2*hugePage, hugePage)
	}
	if got := debug.SetGCPercent(100); got != 123 {
		t.Errorf("GC percent after Reserve = %d, want 123", got)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= n/2 {
		t.Errorf("the heap holds %d bytes after Reserve: the reserving allocation was not collected", ms.HeapAlloc)
	}
	covered := uintptr(0)
	for _, m := range mappings(t) {
		lo, hi := max(m.start, r.Start), min(m.end, r.End)
		if lo >= hi {
			continue
		}
		if !m.hg {
			t.Errorf("mapping %#x-%#x inside the advised range is not advised (no hg in VmFlags)", m.start, m.end)
		}
		covered += hi - lo
	}
	if covered != uintptr(r.Len()) {
		t.Errorf("mappings cover %d of the %d advised bytes", covered, r.Len())
	}
}

// TestReserveSmall: a reservation under two huge pages does nothing.
func TestReserveSmall(t *testing.T) {
	r, err := Reserve(hugePage)
	if err != nil || r.Len() != 0 {
		t.Errorf("Reserve(%d) = %v, %v; want nothing advised", hugePage, r, err)
	}
}

type mapping struct {
	start, end uintptr
	hg         bool
}

// mappings reads /proc/self/smaps: each mapping's range and whether it is
// advised for huge pages.
func mappings(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ms []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if flags, ok := strings.CutPrefix(line, "VmFlags:"); ok && len(ms) > 0 {
			ms[len(ms)-1].hg = strings.Contains(" "+flags+" ", " hg ")
			continue
		}
		rng, _, _ := strings.Cut(line, " ")
		lo, hi, ok := strings.Cut(rng, "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ms = append(ms, mapping{start: uintptr(start), end: uintptr(end)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ms
}
