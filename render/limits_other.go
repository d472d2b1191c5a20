//go:build unix && !linux

package render

import (
	"os"
	"syscall"
)

// On systems other than Linux the render process runs in its own process group,
// killed on timeout, but without kernel memory and CPU limits: only the Go
// memory limit and the wall-clock timeout apply. The service is meant for Linux.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func setChildLimits(int, Options, bool) error { return nil }

func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

func cpuSignalled(*os.ProcessState) bool { return false }

// nearMemoryLimit: without RLIMIT_DATA a failed thread is not the memory limit.
func nearMemoryLimit(*os.ProcessState, Options) bool { return false }
