package keylock_test

import (
	"testing"

	"github.com/driftpreview/driftpreview/bot/internal/keylock"
)

func TestLocks(t *testing.T) {
	var l keylock.Locks
	a, b := l.For("acme/gitops#17"), l.For("acme/gitops#18")
	if a == b {
		t.Error("two requests share one lock")
	}
	if l.For("acme/gitops#17") != a {
		t.Error("one request got two locks")
	}
}
