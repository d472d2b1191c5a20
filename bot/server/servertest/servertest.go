package servertest

import (
	"context"
	"net"
	"testing"

	"github.com/driftpreview/driftpreview/bot/server"
)

// Serve serves s on a free port of 127.0.0.1 until the test ends, then stops it and
// fails the test if Serve returned an error. It returns the server's base URL.
func Serve(t testing.TB, s *server.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}
