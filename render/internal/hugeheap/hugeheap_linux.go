package hugeheap

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// advise allocates n bytes (a fresh region the runtime maps for it and does
// not touch) and advises the huge pages wholly inside it. The allocation is
// garbage once advise returns.
func advise(n int) (Range, error) {
	b := make([]byte, n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r := Range{Start: (p + hugePage - 1) &^ (hugePage - 1), End: (p + uintptr(n)) &^ (hugePage - 1)}
	if r.End <= r.Start {
		return Range{}, nil
	}
	off := r.Start - p
	err := unix.Madvise(b[off:off+uintptr(r.Len())], unix.MADV_HUGEPAGE)
	runtime.KeepAlive(b)
	if err != nil {
		return Range{}, err
	}
	return r, nil
}
