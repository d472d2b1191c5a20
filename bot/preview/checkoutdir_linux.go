package preview

import "golang.org/x/sys/unix"

// statfsTmpfs is tmpfsFree on Linux: the free bytes (for an unprivileged
// user) of dir's file system, and whether it is a tmpfs.
func statfsTmpfs(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
