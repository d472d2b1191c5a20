package remote

import "testing"

// PublicLoopbackForTests makes f count loopback addresses as public, so that
// in a test the in-process servers on 127.0.0.1 stand in for public ones in
// public mode; call it before f is used. It panics outside a test binary
// (testing.Testing): no config key, flag or build of driftpreview reaches it.
func (f *Fetcher) PublicLoopbackForTests() *Fetcher {
	if !testing.Testing() {
		panic("remote: PublicLoopbackForTests called outside a test")
	}
	f.loopbackPublic = true
	return f
}
