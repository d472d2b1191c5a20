package render

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
)

// childProfileEnv carries ProfileRenders' directory to the render processes.
const childProfileEnv = "DRIFTPREVIEW_RENDER_CPUPROFILE"

// childProfileDir is the directory set by ProfileRenders ("" when off).
var childProfileDir atomic.Pointer[string]

// ProfileRenders has every render process started from now on write a pprof
// CPU profile of its whole life to dir (render-PID.cpu.pprof; `go tool pprof
// -top BINARY DIR/*.pprof` merges them). It is a diagnostic: the processes it
// starts may write that one file (the file-size limit of setChildLimits is not
// set on them), and a process leaving the pool is asked to end (its input
// closed) and given a few seconds to write its profile before it is killed.
// dir must exist. An empty dir turns it off.
func ProfileRenders(dir string) error {
	if dir == "" {
		childProfileDir.Store(nil)
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", abs)
	}
	childProfileDir.Store(&abs)
	return nil
}

// profiling reports the directory of ProfileRenders, if on.
func profiling() string {
	if p := childProfileDir.Load(); p != nil {
		return *p
	}
	return ""
}

// startChildProfile starts the CPU profile of a render process when its parent
// asked for one (childProfileEnv); the returned stop writes it.
func startChildProfile() (stop func()) {
	dir := os.Getenv(childProfileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("render-%d.cpu.pprof", os.Getpid())))
	if err != nil {
		fmt.Fprintf(os.Stderr, "render child: profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "render child: profile: %v\n", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
