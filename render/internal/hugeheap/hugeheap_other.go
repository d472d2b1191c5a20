//go:build !linux

package hugeheap

// advise does nothing off Linux (Mode is "" there, so Reserve never calls it).
func advise(int) (Range, error) { return Range{}, nil }
