package main

import (
	"bufio"
	"io"
	"os"
	"strings"
	"sync"
)

// kustomizeWarning starts the deprecation warnings that kustomize's library prints
// with fmt.Fprintf(os.Stderr, …) each time it loads a kustomization using a
// deprecated field (sigs.k8s.io/kustomize/api/internal/target.KustTarget.Load).
// driftpreview renders every kustomization at base and head, and discovery renders
// some again, so the same warning would be printed many times per run. The report
// already names each file in its notes.
const kustomizeWarning = "# Warning: "

// onceWarnings copies lines to dst, dropping a kustomize deprecation warning that
// was already written once; every other line passes through as it is. Close
// flushes the last partial line.
type onceWarnings struct {
	dst  io.Writer
	mu   sync.Mutex
	seen map[string]bool
	buf  []byte
}

func newOnceWarnings(dst io.Writer) *onceWarnings {
	return &onceWarnings{dst: dst, seen: map[string]bool{}}
}

func (w *onceWarnings) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i+1]
		if err := w.emit(line); err != nil {
			return len(p), err
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 0 && !strings.HasPrefix(kustomizeWarning, string(w.buf)) && !strings.HasPrefix(string(w.buf), kustomizeWarning) {
		// Not a warning in the making: pass it on now rather than hold it back.
		err := w.emit(w.buf)
		w.buf = w.buf[:0]
		return len(p), err
	}
	return len(p), nil
}

func (w *onceWarnings) emit(b []byte) error {
	if s := string(b); strings.HasPrefix(s, kustomizeWarning) {
		if w.seen[s] {
			return nil
		}
		w.seen[s] = true
	}
	_, err := w.dst.Write(b)
	return err
}

// Close writes what is left of an unfinished line.
func (w *onceWarnings) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	err := w.emit(w.buf)
	w.buf = nil
	return err
}

// dedupeStderr points os.Stderr at a pipe that filters through onceWarnings into
// the real stderr, since kustomize writes to os.Stderr itself. The returned func
// puts os.Stderr back and waits until everything written was copied; call it
// before os.Exit. The Go runtime's own crash output goes to file descriptor 2
// directly and is never filtered.
func dedupeStderr() (restore func()) {
	real := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		return func() {} // unfiltered, but working
	}
	filter := newOnceWarnings(real)
	done := make(chan struct{})
	go func() {
		defer close(done)
		br := bufio.NewReader(r)
		buf := make([]byte, 32*1024)
		for {
			n, err := br.Read(buf)
			if n > 0 {
				filter.Write(buf[:n])
			}
			if err != nil {
				filter.Close()
				return
			}
		}
	}()
	os.Stderr = w
	return func() {
		os.Stderr = real
		w.Close()
		<-done
		r.Close()
	}
}
