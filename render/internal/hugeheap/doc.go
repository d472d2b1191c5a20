// Package hugeheap backs the Go heap with transparent huge pages where the
// kernel gives them only to memory that asks for them.
//
// Linux's transparent huge pages (THP) have three modes
// (/sys/kernel/mm/transparent_hugepage/enabled): "always", "madvise" and
// "never". Debian and Ubuntu ship "madvise", where only a region advised with
// madvise(MADV_HUGEPAGE) gets 2 MiB pages. Since Go 1.21.1 the runtime no
// longer advises its heap, so there every page of a Go heap is 4 KiB and is
// faulted in one by one the first time it is touched. A cold PR-wide preview
// at T=200 touched about 38,000 pages in each of its three processes (the CLI
// and two render processes), and every fault is a trip through the kernel
// (about 3 µs on the bench's 2-core VM), with 512 times as many TLB entries
// to cover the heap as huge pages would need (issue 25).
//
// Reserve has the runtime map n bytes of heap in one piece (one allocation of
// n bytes, which the runtime maps as a single region and never touches,
// since fresh memory is already zero), advises that region MADV_HUGEPAGE, and
// lets the collector take the allocation back. The region stays mapped and
// advised: the runtime allocates from it as the heap grows, and the kernel
// fills it with huge pages. Heap the process uses past it is mapped later in
// small pieces the runtime does not advise, so it gets 4 KiB pages as before.
//
// In "always" mode the kernel already does this for every region; in "never"
// mode (or where the file is missing: another kernel, another OS) it would do
// nothing. Reserve only acts in "madvise" mode.
//
// The reserved region counts as mapped (RLIMIT_DATA counts it whether it is
// touched or not), so a caller under a memory limit reserves only part of it:
// a render process reserves a quarter of a limit of 512 MiB or more, and
// nothing under a smaller one (render's childHeapReserve says why).
package hugeheap
