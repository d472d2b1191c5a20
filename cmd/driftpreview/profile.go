package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// startProfiles starts `preview --cpuprofile` and arranges `--memprofile` (either
// path may be empty). The returned stop ends the CPU profile and writes the heap
// profile (after a GC, so in-use figures are live objects; `go tool pprof
// -sample_index=alloc_space` shows all allocations of the run). Both profile this
// process only: render children are separate processes (render/child.go).
// `--trace` writes Go's execution tracer output (`go tool trace FILE`), which
// shows when each goroutine runs and so whether both cores are busy.
func startProfiles(cpuPath, memPath, tracePath string) (stop func() error, err error) {
	var cpu *os.File
	if cpuPath != "" {
		if cpu, err = os.Create(cpuPath); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("--cpuprofile %s: %w", cpuPath, err)
		}
	}
	if memPath != "" {
		// Fail now rather than after a long preview when the file cannot be written.
		f, err := os.Create(memPath)
		if err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, fmt.Errorf("--memprofile: %w", err)
		}
		f.Close()
	}
	var tr *os.File
	if tracePath != "" {
		tr, err = os.Create(tracePath)
		if err == nil {
			if err = trace.Start(tr); err != nil {
				tr.Close()
			}
		}
		if err != nil {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
			}
			return nil, fmt.Errorf("--trace: %w", err)
		}
	}
	return func() error {
		var errs []error
		if tr != nil {
			trace.Stop()
			if err := tr.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--trace %s: %w", tracePath, err))
			}
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				errs = append(errs, fmt.Errorf("--cpuprofile %s: %w", cpuPath, err))
			}
		}
		if memPath != "" {
			runtime.GC()
			f, err := os.Create(memPath)
			if err == nil {
				err = pprof.WriteHeapProfile(f)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("--memprofile %s: %w", memPath, err))
			}
		}
		return errors.Join(errs...)
	}, nil
}
