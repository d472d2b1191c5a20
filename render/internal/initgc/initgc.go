// Package initgc turns the garbage collector off while the program's packages
// are initialized, and back on (to what GOGC asked) once they are.
//
// Every driftpreview process, the CLI and each render process alike, runs the
// package init of one big binary (client-go's schemes, Helm, kustomize,
// jsonschema's meta-schemas, …): about 6 MB allocated, most of it kept. With
// the default GOGC the collector runs during that, collecting almost nothing.
// A render process (GOGC 400 once it serves, see render's childMain) then
// starts without a collection: 24 → 20 ms of CPU per start (issue 25, median
// of 80 interleaved). The CLI itself only defers the collection: its heap
// passes the first goal soon after init either way.
//
// Its init runs early (it imports only runtime/debug, so Go's init order, by
// import path among the packages whose imports are initialized, takes it before
// the big dependencies). Package render imports it and calls Restore first
// thing in its own init, which runs after the dependencies that cost most and
// before anything else of driftpreview runs (in a render process, before the
// process serves any render; in every binary and test binary that imports
// render, before main or TestMain). Restore is idempotent.
package initgc

import (
	"runtime/debug"
	"sync"
)

// prev is the collector's setting before init: GOGC's, or 100.
var prev = debug.SetGCPercent(-1)

var restore sync.Once

// Restore gives the collector back the setting it had before init (GOGC). A
// later debug.SetGCPercent (a render process's own) is not undone: only the
// first call does anything.
func Restore() {
	restore.Do(func() { debug.SetGCPercent(prev) })
}
