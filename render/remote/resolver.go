package remote

import (
	"context"
	"net/netip"
)

// SetResolver replaces how f looks up host names (net.DefaultResolver by
// default). Tests use it to make a public-looking name resolve to a private
// address without DNS; every address it returns is still checked against the
// policy when f dials. Call it before f is used.
func (f *Fetcher) SetResolver(lookup func(ctx context.Context, host string) ([]netip.Addr, error)) {
	f.resolve = lookup
}
