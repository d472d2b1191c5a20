//go:build !race

package render

// raceMemoryFactor is 1 without the race detector (see race_on.go).
const raceMemoryFactor = 1
