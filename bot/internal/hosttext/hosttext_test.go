package hosttext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

const (
	m  = "<!-- driftpreview:sticky v1 -->"
	p2 = "<!-- driftpreview:sticky v1 page 2 -->"
	p3 = "<!-- driftpreview:sticky v1 page 3 -->"
)

func TestPlan(t *testing.T) {
	tests := []struct {
		name     string
		key      string
		existing []hosttext.Comment
		pages    []string
		want     []hosttext.Op
	}{
		{
			name:  "first run creates main and follow-ups, adding markers",
			pages: []string{"main", p2 + "\nsecond"},
			want: []hosttext.Op{
				{Kind: hosttext.OpCreate, Page: 1, Body: m + "\nmain"},
				{Kind: hosttext.OpCreate, Page: 2, Body: p2 + "\nsecond"},
			},
		},
		{
			name:     "unchanged comment is left alone, changed one updated in place",
			existing: []hosttext.Comment{{ID: 1, Body: m + "\nmain"}, {ID: 2, Body: p2 + "\nold"}},
			pages:    []string{m + "\nmain", "new"},
			want:     []hosttext.Op{{Kind: hosttext.OpUpdate, ID: 2, Page: 2, Body: p2 + "\nnew"}},
		},
		{
			name: "stale follow-ups are deleted, highest first; duplicates removed",
			existing: []hosttext.Comment{
				{ID: 1, Body: m + "\nold"}, {ID: 2, Body: p2 + "\nx"}, {ID: 3, Body: p3 + "\ny"},
				{ID: 4, Body: m + "\nracing duplicate"}, {ID: 5, Body: "<!-- other-bot -->\nkeep"},
				{ID: 6, Body: "a human comment quoting " + m},
			},
			pages: []string{"new"},
			want: []hosttext.Op{
				{Kind: hosttext.OpUpdate, ID: 1, Page: 1, Body: m + "\nnew"},
				{Kind: hosttext.OpDelete, ID: 3, Page: 3},
				{Kind: hosttext.OpDelete, ID: 2, Page: 2},
				{Kind: hosttext.OpDelete, ID: 4},
			},
		},
		{
			name:     "key varies the marker and ignores the default one",
			key:      "other",
			existing: []hosttext.Comment{{ID: 1, Body: m + "\nmain"}},
			pages:    []string{"x"},
			want:     []hosttext.Op{{Kind: hosttext.OpCreate, Page: 1, Body: "<!-- other -->\nx"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hosttext.Plan(tt.key, tt.existing, tt.pages, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := hosttext.Plan("", nil, nil, 10); err == nil {
		t.Error("Plan with no pages: want an error")
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("🔴", 100) // 4 bytes each
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"short stays", "abc", 10, "abc"},
		{"no limit", long, 0, long},
		{"cuts on a rune boundary and notes it", long, 30 + len(hosttext.TruncatedNote), strings.Repeat("🔴", 7) + hosttext.TruncatedNote},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := hosttext.Truncate(tt.in, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Truncate (-want +got):\n%s", diff)
			}
			if tt.max > 0 && len(got) > tt.max || !utf8.ValidString(got) {
				t.Errorf("Truncate gave %d bytes (max %d), valid UTF-8 %v", len(got), tt.max, utf8.ValidString(got))
			}
		})
	}
	if got := hosttext.TruncateLine("héllo wörld", 8); got != "héll…" || len(got) > 8 {
		t.Errorf("TruncateLine = %q", got)
	}
}

func TestReconcile(t *testing.T) {
	const head, old = "bbbb", "aaaa"
	m, p2 := hosttext.Marker(""), hosttext.PageMarker("", 2)
	page := func(marker, h, text string) string { return marker + "\n" + hosttext.HeadMarker(h) + "\n" + text }
	existing := []hosttext.Comment{
		{ID: 1, Body: "unrelated"},
		{ID: 2, Body: page(m, old, "late sticky of the older head")},
		{ID: 3, Body: page(m, head, "ours")},
		{ID: 4, Body: page(p2, old, "older follow-up")},
		{ID: 5, Body: page(p2, head, "our follow-up")},
		{ID: 6, Body: m + "\nposted before head markers"},
		{ID: 7, Body: page(m, head, "duplicate of ours")},
	}
	got := hosttext.Reconcile("", head, existing)
	var deleted []int64
	for _, op := range got {
		if op.Kind != hosttext.OpDelete {
			t.Errorf("Reconcile planned a %s", op.Kind)
		}
		deleted = append(deleted, op.ID)
	}
	if diff := cmp.Diff([]int64{2, 4, 6, 7}, deleted); diff != "" {
		t.Errorf("deleted (-want +got):\n%s", diff)
	}
	// Without our own sticky comment (the post did not land) nothing is deleted.
	if ops := hosttext.Reconcile("", head, existing[:2]); len(ops) != 0 {
		t.Errorf("Reconcile without our sticky comment = %v, want nothing", ops)
	}
}

// TestCheckKey: the default check name keeps today's marker; other names get
// their own, escaped so that no name closes the marker early or makes it equal
// to another key's page marker; the renderer's default marker lines are replaced
// by the key's, so a page carries one marker.
func TestCheckKey(t *testing.T) {
	if k := hosttext.CheckKey("driftpreview"); k != "" || hosttext.Marker(k) != "<!-- driftpreview:sticky v1 -->" {
		t.Errorf("default check name: key %q, marker %q", k, hosttext.Marker(k))
	}
	if k := hosttext.CheckKey(""); k != "" {
		t.Errorf("empty check name: key %q", k)
	}
	prod := hosttext.CheckKey("prod --> eu")
	if got, want := hosttext.Marker(prod), "<!-- driftpreview:sticky v1 check=prod+--%3E+eu -->"; got != want {
		t.Errorf("marker %q, want %q", got, want)
	}
	if hosttext.KeyOverhead(prod) != len(prod)-len(hosttext.DefaultKey) || hosttext.KeyOverhead("") != 0 {
		t.Errorf("KeyOverhead(%q) = %d", prod, hosttext.KeyOverhead(prod))
	}
	// A check named "x page 2" is not check "x"'s second page.
	if hosttext.Marker(hosttext.CheckKey("x page 2")) == hosttext.PageMarker(hosttext.CheckKey("x"), 2) {
		t.Error("check name \"x page 2\" collides with page 2 of check \"x\"")
	}
	existing := []hosttext.Comment{
		{ID: 1, Body: hosttext.Marker("") + "\nthe default check's"},
		{ID: 2, Body: hosttext.PageMarker("", 2) + "\nthe default check's page 2"},
	}
	pages := []string{hosttext.Marker("") + "\nprod page 1", hosttext.PageMarker("", 2) + "\nprod page 2"}
	ops, err := hosttext.PlanHead(prod, "abc", existing, pages, 1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []hosttext.Op{
		{Kind: hosttext.OpCreate, Page: 1, Body: hosttext.Marker(prod) + "\n" + hosttext.HeadMarker("abc") + "\nprod page 1"},
		{Kind: hosttext.OpCreate, Page: 2, Body: hosttext.PageMarker(prod, 2) + "\n" + hosttext.HeadMarker("abc") + "\nprod page 2"},
	}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("plan for check prod next to the default check's comments (-want +got):\n%s", diff)
	}
}
