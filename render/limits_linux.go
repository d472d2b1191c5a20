package render

import (
	"fmt"
	"math"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// childSysProcAttr puts the render process in its own process group, so a
// timeout kills everything in it, and has the kernel kill it if we die.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// setChildLimits sets the kernel limits of the started render process (prlimit),
// before it is sent any work: memory, CPU time (SIGKILL one second past the
// limit: Go ignores the SIGXCPU warning), no core dumps, no files written.
//
// Memory is RLIMIT_DATA (private writable memory: the Go heap, C malloc), not
// RLIMIT_AS: a Go binary with cgo reserves about 1.7 GB of address space when
// idle (runtime reservations, C thread stacks and malloc arenas), so an
// address-space limit measures nothing useful. When a mapping would pass the
// limit the Go runtime dies with "out of memory", which the parent reports.
// The child also volunteers first for the kernel's OOM killer, so memory
// pressure in the container takes a render and not the service.
// profile leaves out the file-size limit, so the process can write its CPU
// profile (ProfileRenders).
func setChildLimits(pid int, opts Options, profile bool) error {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid), []byte("1000"), 0)
	cpu := uint64(math.Ceil(opts.MaxCPUTime.Seconds()))
	mem := uint64(opts.MaxMemoryBytes) * raceMemoryFactor
	limits := []struct {
		name     string
		resource int
		cur, max uint64
	}{
		{"memory", unix.RLIMIT_DATA, mem, mem},
		{"CPU time", unix.RLIMIT_CPU, cpu, cpu + 1},
		{"core size", unix.RLIMIT_CORE, 0, 0},
		{"file size", unix.RLIMIT_FSIZE, 0, 0},
	}
	if profile {
		limits = limits[:len(limits)-1]
	}
	for _, l := range limits {
		if err := unix.Prlimit(pid, l.resource, &unix.Rlimit{Cur: l.cur, Max: l.max}, nil); err != nil {
			return fmt.Errorf("setting the %s limit: %w", l.name, err)
		}
	}
	return nil
}

// killGroup kills the render process and anything it started.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// cpuSignalled reports whether the process died of SIGXCPU (RLIMIT_CPU's
// warning, fatal to a process that does not handle it).
func cpuSignalled(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGXCPU
}

// nearMemoryLimit reports whether the process's peak resident memory reached
// half its memory limit: enough to tell a render that grew into the limit from
// a thread limit of the machine hit by a small process.
func nearMemoryLimit(ps *os.ProcessState, opts Options) bool {
	if ps == nil {
		return false
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	return ok && ru.Maxrss*1024 >= opts.MaxMemoryBytes/2 // Linux counts Maxrss in KiB
}
