package live

// SetWideMaxItems sets the cap of a cluster-wide LIST for a test, which restores
// it with the returned func.
func SetWideMaxItems(n int) (restore func()) {
	old := wideMaxItems
	wideMaxItems = n
	return func() { wideMaxItems = old }
}
