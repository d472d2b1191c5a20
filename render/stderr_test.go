package render

import (
	"strings"
	"testing"
)

// TestChildFailureSeesTheFirstLine feeds the stderr buffer what a render
// process prints when it runs out of memory: the cause on the first line, then
// every goroutine's stack, more than the tail keeps. Under load the runtime
// printed 16 KiB of stacks after "fatal error: runtime: out of memory" and a
// buffer that kept only the tail called it a crash (CI, stop 18).
func TestChildFailureSeesTheFirstLine(t *testing.T) {
	b := newStderrBuffer(4<<10, 16<<10)
	b.Write([]byte("fatal error: runtime: out of memory\n\nruntime stack:\n"))
	for range 2000 {
		b.Write([]byte("runtime.sysMap(0x34faaf000000, 0x400000, 0x0?, {0x2b5df33, 0x4})\n"))
	}
	b.Write([]byte("goroutine 24 [stopping the world]:\n"))
	got := b.String()
	if !strings.HasPrefix(got, "fatal error: runtime: out of memory\n") || !strings.HasSuffix(got, "goroutine 24 [stopping the world]:\n") {
		t.Fatalf("kept %d bytes: %.80q … %.80q", len(got), got, got[max(0, len(got)-80):])
	}
	if len(got) > 4<<10+16<<10+16 {
		t.Errorf("kept %d bytes, want at most head + tail", len(got))
	}
	if !strings.Contains(got, "\n[…]\n") {
		t.Error("no mark where bytes were dropped")
	}
	opts := DefaultOptions()
	opts.MaxMemoryBytes = 256 << 20
	err := childFailure("chart", nil, got, opts)
	if err == nil || !strings.Contains(err.Error(), "256 MiB memory limit") {
		t.Fatalf("childFailure: %v, want the memory limit", err)
	}

	// A thread that could not start is the memory limit only for a process
	// that grew near it (the bomb test covers that with a real process); here
	// there is no process state, so it stays a crash.
	err = childFailure("chart", nil, "runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n", opts)
	if err == nil || strings.Contains(err.Error(), "memory limit") {
		t.Errorf("a failed thread without the process's memory use: %v", err)
	}

	b.Reset()
	b.Write([]byte("short"))
	if got := b.String(); got != "short" {
		t.Errorf("after Reset: %q", got)
	}
}
