package hosttext

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
)

// memTracker is an IssueTracker in memory.
type memTracker struct {
	mu     sync.Mutex
	issues []Issue
	next   int64
	calls  []IssueOp
}

func (m *memTracker) List(context.Context) ([]Issue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Issue(nil), m.issues...), nil
}

func (m *memTracker) Apply(_ context.Context, op IssueOp) (Issue, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, op)
	if op.Create {
		m.next++
		is := Issue{Number: m.next, Title: op.Title, Body: op.Body, Open: true}
		m.issues = append(m.issues, is)
		return is, nil
	}
	for i := range m.issues {
		is := &m.issues[i]
		if is.Number != op.Number {
			continue
		}
		if op.Title != "" {
			is.Title = op.Title
		}
		if op.Body != "" {
			is.Body = op.Body
		}
		if op.State != "" {
			is.Open = op.State == IssueOpen
		}
		return *is, nil
	}
	return Issue{}, fmt.Errorf("no issue #%d", op.Number)
}

func (m *memTracker) open() []int64 {
	var out []int64
	for _, is := range m.issues {
		if is.Open {
			out = append(out, is.Number)
		}
	}
	return out
}

func TestUpsertIssueLifecycle(t *testing.T) {
	ctx := context.Background()
	m := &memTracker{}
	// A human's issue quoting nothing, and nothing else: no drift creates nothing.
	if _, _, err := UpsertIssue(ctx, m, "test", bot.DriftIssue{Title: "t", Body: "in sync"}, 1000); err != nil {
		t.Fatal(err)
	}
	if len(m.calls) != 0 {
		t.Fatalf("no drift and no issue must make no call, got %+v", m.calls)
	}
	want := bot.DriftIssue{Title: "driftpreview: live drift on main", Body: "2 objects drift", Drift: true}
	is, created, err := UpsertIssue(ctx, m, "test", want, 1000)
	if err != nil || !created || is.Number != 1 || !is.Open {
		t.Fatalf("create: %+v %v %v", is, created, err)
	}
	if !strings.HasPrefix(m.issues[0].Body, DriftMarker+"\n2 objects drift") {
		t.Fatalf("body %q lacks the marker", m.issues[0].Body)
	}
	// The same again: nothing to do.
	m.calls = nil
	if _, _, err := UpsertIssue(ctx, m, "test", want, 1000); err != nil || len(m.calls) != 0 {
		t.Fatalf("unchanged: calls %+v, %v", m.calls, err)
	}
	// Updated in place.
	want.Body = "3 objects drift"
	if is, created, err = UpsertIssue(ctx, m, "test", want, 1000); err != nil || created || is.Number != 1 {
		t.Fatalf("update: %+v %v %v", is, created, err)
	}
	if len(m.issues) != 1 || !strings.Contains(m.issues[0].Body, "3 objects") {
		t.Fatalf("update did not edit in place: %+v", m.issues)
	}
	// Closed when in sync, with the in-sync body.
	if is, _, err = UpsertIssue(ctx, m, "test", bot.DriftIssue{Title: want.Title, Body: "no drift"}, 1000); err != nil || is.Open {
		t.Fatalf("close: %+v %v", is, err)
	}
	if m.issues[0].Open || !strings.Contains(m.issues[0].Body, "no drift") {
		t.Fatalf("not closed: %+v", m.issues[0])
	}
	// Still in sync: a closed issue is left alone.
	m.calls = nil
	if _, _, err = UpsertIssue(ctx, m, "test", bot.DriftIssue{Title: want.Title, Body: "no drift, later"}, 1000); err != nil || len(m.calls) != 0 {
		t.Fatalf("closed issue touched: %+v %v", m.calls, err)
	}
	// Reopened on new drift, not recreated.
	want.Body = "1 object drifts"
	if is, created, err = UpsertIssue(ctx, m, "test", want, 1000); err != nil || created || !is.Open || is.Number != 1 {
		t.Fatalf("reopen: %+v %v %v", is, created, err)
	}
	if len(m.issues) != 1 || !m.issues[0].Open {
		t.Fatalf("reopen: %+v", m.issues)
	}
}

// Two runs that both found no issue both create one: the reconcile pass of
// each closes the newer, so one stays open whichever runs it.
func TestUpsertIssueRaceLeavesOneOpen(t *testing.T) {
	ctx := context.Background()
	m := &memTracker{}
	want := bot.DriftIssue{Title: "t", Body: "drift", Drift: true}
	// Simulate: our List sees nothing, then the other run creates #1, then we
	// create #2 and list again.
	existing, _ := m.List(ctx)
	ops := PlanIssue(existing, want, 1000)
	if len(ops) != 1 || !ops[0].Create {
		t.Fatalf("plan %+v", ops)
	}
	if _, err := m.Apply(ctx, IssueOp{Create: true, Title: "t", Body: DriftBody("drift", 1000)}); err != nil { // the other run
		t.Fatal(err)
	}
	// Our UpsertIssue from its listing on: wrap the tracker so its first List
	// returns the stale (empty) listing.
	stale := &staleOnce{memTracker: m}
	is, created, err := UpsertIssue(ctx, stale, "test", want, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.open(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("open issues %v, want only #1", got)
	}
	if created || is.Number != 1 || !is.Open {
		t.Fatalf("kept %+v created %v, want #1 open and ours closed as the duplicate", is, created)
	}
}

// staleOnce answers its first List with nothing, as a run that listed before
// another run's create landed.
type staleOnce struct {
	*memTracker
	listed bool
}

func (s *staleOnce) List(ctx context.Context) ([]Issue, error) {
	if !s.listed {
		s.listed = true
		return nil, nil
	}
	return s.memTracker.List(ctx)
}

func TestPlanIssueIgnoresOthersAndClosesDuplicates(t *testing.T) {
	body := DriftBody("x", 1000)
	existing := []Issue{
		{Number: 3, Title: "bug", Body: "not ours", Open: true},
		{Number: 5, Title: "t", Body: body, Open: false},
		{Number: 8, Title: "t", Body: body, Open: true},
	}
	ops := PlanIssue(existing, bot.DriftIssue{Title: "t", Body: "x", Drift: true}, 1000)
	want := []IssueOp{{Number: 5, State: IssueOpen}, {Number: 8, State: IssueClosed}}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Fatalf("ops %+v, want %+v", ops, want)
	}
}

func TestDriftBodyTruncates(t *testing.T) {
	b := DriftBody(strings.Repeat("é", 100), 50)
	if len(b) > 50 || !strings.HasPrefix(b, DriftMarker) || !IsDriftIssue(b) {
		t.Fatalf("body %q", b)
	}
}
