package live

// SetWideMaxItems sets the cap of a cluster-wide LIST for a test, which restores
// it with the returned func.
func SetWideMaxItems(n int) (restore func()) {
	old := wideMaxItems
	wideMaxItems = n
	return func() { wideMaxItems = old }
}

// SetSkipNoops turns simulate's no-op shortcut on or off for a test, which
// restores it with the returned func.
func SetSkipNoops(on bool) (restore func()) {
	old := skipNoops
	skipNoops = on
	return func() { skipNoops = old }
}

// Simulations returns how many applies simulate was asked for and how many of them
// it found to be no-ops, since the process started.
func Simulations() (simulated, noop int64) { return simulations.Load(), noops.Load() }
