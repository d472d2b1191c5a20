package render

import "testing"

// TestChildHeapReserve: a render process reserves a quarter of a memory limit
// of 512 MiB or more, at most 128 MiB, and nothing under a smaller limit (see
// childHeapReserve; the hostile tests at 128, 256 and 512 MiB check what the
// limits still stop).
func TestChildHeapReserve(t *testing.T) {
	if raceMemoryFactor != 1 {
		if got := childHeapReserve(512 << 20); got != 0 {
			t.Errorf("under the race detector: %d, want 0", got)
		}
		return
	}
	for _, c := range []struct{ mem, want int64 }{
		{0, 128 << 20},
		{512 << 20, 128 << 20},
		{2 << 30, 128 << 20},
		{1 << 30, 128 << 20},
		{511 << 20, 0},
		{256 << 20, 0},
		{128 << 20, 0},
		{64 << 20, 0},
	} {
		if got := childHeapReserve(c.mem); got != c.want {
			t.Errorf("childHeapReserve(%d MiB) = %d, want %d", c.mem>>20, got, c.want)
		}
	}
}
