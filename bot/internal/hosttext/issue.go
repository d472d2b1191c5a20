package hosttext

import (
	"context"
	"fmt"
	"strings"

	"github.com/driftpreview/driftpreview/bot"
)

// DriftMarker is the hidden first line of a repository's drift issue: the
// adapters find the issue again by it, among the issues their own bot user
// created (open and closed), as the sticky comment is found by Marker.
const DriftMarker = "<!-- driftpreview:drift v1 -->"

// Issue is an existing issue created by the bot's own user, in the order the host
// lists them (oldest first).
type Issue struct {
	Number int64
	Title  string
	Body   string
	Open   bool
	URL    string
}

// Issue states an IssueOp sets.
const (
	IssueOpen   = "open"
	IssueClosed = "closed"
)

// IssueOp is one host call on the drift issue: Create makes a new open issue
// with Title and Body; otherwise it edits issue Number, changing Title and Body
// when not empty and State when not empty.
type IssueOp struct {
	Create bool
	Number int64
	Title  string
	Body   string
	State  string
}

// IssueTracker is one repository's issues as a host adapter sees them: the
// drift issues its own bot user created (marker first line), oldest first, and
// the calls that carry out a plan. UpsertIssue is the one algorithm both
// adapters run on it; the caller holds the repository's lock around it.
type IssueTracker interface {
	List(ctx context.Context) ([]Issue, error)
	// Apply makes one call; a create returns the new issue.
	Apply(ctx context.Context, op IssueOp) (Issue, error)
}

// IsDriftIssue says whether body is a drift issue's (its first line is
// DriftMarker).
func IsDriftIssue(body string) bool { return firstLine(body) == DriftMarker }

// DriftBody is want's body as posted: the marker line, then the text, cut to
// limit bytes.
func DriftBody(body string, limit int) string {
	return Truncate(DriftMarker+"\n"+strings.TrimLeft(body, "\r\n"), limit)
}

// PlanIssue computes the calls that make the repository's one drift issue say
// want: the oldest issue carrying the marker is the one kept, edited in place
// (title, body) and reopened when want is drift, or edited and closed when it
// is not; without one, an issue is created only for drift. Every other open
// issue carrying the marker (left by a race of two runs) is closed, so never
// two are open. existing holds only the bot's own issues.
func PlanIssue(existing []Issue, want bot.DriftIssue, limit int) []IssueOp {
	var mine []Issue
	for _, is := range existing {
		if IsDriftIssue(is.Body) {
			mine = append(mine, is)
		}
	}
	body := DriftBody(want.Body, limit)
	var ops []IssueOp
	switch {
	case len(mine) == 0:
		if want.Drift {
			ops = append(ops, IssueOp{Create: true, Title: want.Title, Body: body})
		}
	default:
		keep := mine[0]
		op := IssueOp{Number: keep.Number}
		switch {
		case want.Drift:
			if keep.Title != want.Title {
				op.Title = want.Title
			}
			if keep.Body != body {
				op.Body = body
			}
			if !keep.Open {
				op.State = IssueOpen
			}
		case keep.Open:
			// The cluster matches git again: say so and close. A closed issue is
			// left as it is.
			if keep.Title != want.Title {
				op.Title = want.Title
			}
			if keep.Body != body {
				op.Body = body
			}
			op.State = IssueClosed
		}
		if op.Title != "" || op.Body != "" || op.State != "" {
			ops = append(ops, op)
		}
	}
	return append(ops, closeDuplicates(mine)...)
}

// closeDuplicates closes every open drift issue but the oldest.
func closeDuplicates(mine []Issue) []IssueOp {
	var ops []IssueOp
	for i, is := range mine {
		if i > 0 && is.Open {
			ops = append(ops, IssueOp{Number: is.Number, State: IssueClosed})
		}
	}
	return ops
}

// UpsertIssue makes the tracker's drift issue say want (see PlanIssue) and
// returns the issue kept. After creating one it lists again and closes every
// open drift issue but the oldest: two runs (replicas) that both found none and
// both created one leave one open, the same one whichever reconciles. where
// prefixes errors, e.g. "drift issue of acme/shop".
func UpsertIssue(ctx context.Context, t IssueTracker, where string, want bot.DriftIssue, limit int) (Issue, bool, error) {
	existing, err := t.List(ctx)
	if err != nil {
		return Issue{}, false, fmt.Errorf("%s: %w", where, err)
	}
	ops := PlanIssue(existing, want, limit)
	var kept Issue
	for _, is := range existing {
		if IsDriftIssue(is.Body) {
			kept = is
			break
		}
	}
	created := false
	for _, op := range ops {
		is, err := t.Apply(ctx, op)
		if err != nil {
			return Issue{}, false, fmt.Errorf("%s: %w", where, err)
		}
		switch {
		case op.Create:
			kept, created = is, true
		case op.Number == kept.Number:
			if op.State != "" {
				kept.Open = op.State == IssueOpen
			}
			if op.Title != "" {
				kept.Title = op.Title
			}
			if op.Body != "" {
				kept.Body = op.Body
			}
		}
	}
	if !created {
		return kept, false, nil
	}
	again, err := t.List(ctx)
	if err != nil {
		return kept, true, fmt.Errorf("%s: listing again after creating #%d: %w", where, kept.Number, err)
	}
	var mine []Issue
	for _, is := range again {
		if IsDriftIssue(is.Body) {
			mine = append(mine, is)
		}
	}
	for _, op := range closeDuplicates(mine) {
		if _, err := t.Apply(ctx, op); err != nil {
			return kept, true, fmt.Errorf("%s: closing duplicate #%d: %w", where, op.Number, err)
		}
		if op.Number == kept.Number {
			// Another run created the older one first: ours is the duplicate.
			kept.Open, created = false, false
		}
	}
	if !created && len(mine) > 0 {
		kept = mine[0]
	}
	return kept, created, nil
}
