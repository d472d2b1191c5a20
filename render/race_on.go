//go:build race

package render

// raceMemoryFactor scales a render process's memory limit when the binary is
// built with the race detector (go test -race re-executes the test binary as
// its render processes): the detector's shadow memory and its own allocator
// take several times the program's memory, so a render that fits its limit
// would otherwise die at startup or midway with the detector's exit status 66.
// Memory-limit tests run without the race detector (make test's plain set).
const raceMemoryFactor = 8
