package preview

import (
	"fmt"
	"os"
)

// shmDir is where checkouts go when it is a tmpfs with room for them: writing
// 566 files there takes git a quarter of the CPU it takes on ext4 (most of a
// checkout is the kernel creating files), and the preview reads them back
// from memory. A variable for tests.
var shmDir = "/dev/shm"

// tmpfsFree says how many bytes are free for this user in dir, and whether
// dir is a tmpfs (statfs); a variable for tests.
var tmpfsFree = statfsTmpfs

// shmMargin is how many times the checkouts must fit in the tmpfs's free
// space for them to go there: a tmpfs is memory (in a container, /dev/shm is
// 64 MiB by default and counts against the memory limit), and other programs
// use it too, so the checkouts take at most a quarter of what is free.
const shmMargin = 4

// checkoutParent is the directory a run's checkouts go under: explicit when
// set (--checkout-dir, serve's checkoutDir), else shmDir when it is a tmpfs
// with room for need bytes shmMargin times over, else the temp dir (TMPDIR).
func checkoutParent(explicit string, need int64) string {
	if explicit != "" {
		return explicit
	}
	if free, ok := tmpfsFree(shmDir); ok && need >= 0 && free/shmMargin >= need {
		return shmDir
	}
	return os.TempDir()
}

// makeCheckoutDir makes the temp dir a run's checkouts go into, under
// checkoutParent. A tmpfs it cannot write to (mounted read-only, another
// user's) falls back to the temp dir.
func makeCheckoutDir(explicit string, need int64) (string, error) {
	parent := checkoutParent(explicit, need)
	tmp, err := os.MkdirTemp(parent, "driftpreview-")
	if err != nil && explicit == "" && parent != os.TempDir() {
		tmp, err = os.MkdirTemp("", "driftpreview-")
	}
	if err != nil {
		return "", fmt.Errorf("creating work dir: %w", err)
	}
	return tmp, nil
}
