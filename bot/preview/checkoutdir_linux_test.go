package preview

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestStatfsTmpfs: the real statfs tells a tmpfs (/dev/shm where it is one)
// from another file system (/proc).
func TestStatfsTmpfs(t *testing.T) {
	if _, ok := statfsTmpfs("/proc"); ok {
		t.Error("/proc is a tmpfs, says statfsTmpfs")
	}
	if _, ok := statfsTmpfs("/no/such/dir"); ok {
		t.Error("a missing dir is a tmpfs, says statfsTmpfs")
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a tmpfs here")
	}
	free, ok := statfsTmpfs("/dev/shm")
	if !ok || free != int64(st.Bavail)*st.Bsize {
		t.Errorf("statfsTmpfs(/dev/shm) = %d, %v; want %d, true", free, ok, int64(st.Bavail)*st.Bsize)
	}
}
