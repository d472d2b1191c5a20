package report

import (
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

func TestCommentSaysWhatChangedSinceThePreviousPreview(t *testing.T) {
	opts := DefaultOptions()
	opts.LiveSince = &LiveSince{At: time.Date(2026, 12, 2, 10, 42, 0, 0, time.UTC), Changes: []diffing.LiveChange{{
		Key: render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}, What: "changed",
		Path: "/data/LOG_LEVEL", Manager: "kubectl-edit",
	}}}
	md := Markdown(&diffing.Report{Base: "a", Head: "b"}, opts)
	want := "Since the preview at 10:42 UTC, `kubectl-edit` changed `/data/LOG_LEVEL` of ConfigMap `shop/settings`."
	if !strings.Contains(md, want) {
		t.Errorf("comment lacks %q:\n%s", want, md)
	}
	opts.LiveSince = nil
	if md := Markdown(&diffing.Report{Base: "a", Head: "b"}, opts); strings.Contains(md, "Since the preview") {
		t.Errorf("comment without changes says some:\n%s", md)
	}
}
