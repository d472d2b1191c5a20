package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// JSON renders r as the indented JSON contract of DESIGN.md that CI jobs script
// against. It is stable: times are UTC, changes are sorted by object key, findings
// by severity (worst first), rule and key, and empty lists are [] rather than null.
// r itself is not modified. The output ends with a newline.
func JSON(r *diffing.Report) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("rendering report JSON: no report")
	}
	out := *r
	out.GeneratedAt = r.GeneratedAt.UTC()
	out.Findings = stableFindings(r.Findings)
	if len(out.Findings) == 0 {
		out.Findings = nil // omitted: report-level findings are the exception
	}
	out.Targets = make([]diffing.TargetReport, len(r.Targets))
	for i, t := range r.Targets {
		t.Changes = slices.Clone(t.Changes)
		if t.Changes == nil {
			t.Changes = []diffing.Change{}
		}
		slices.SortStableFunc(t.Changes, func(a, b diffing.Change) int { return a.Key.Compare(b.Key) })
		t.Findings = stableFindings(t.Findings)
		if t.Controller != nil {
			c := *t.Controller
			t.Controller = &c
		}
		t.Notes = slices.Clone(t.Notes)
		out.Targets[i] = t
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering report JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// stableFindings copies fs in table order with times in UTC; never nil.
func stableFindings(fs []diffing.Finding) []diffing.Finding {
	out := make([]diffing.Finding, len(fs))
	copy(out, fs)
	for i := range out {
		if out[i].Since != nil {
			t := out[i].Since.UTC()
			out[i].Since = &t
		}
	}
	slices.SortStableFunc(out, func(a, b diffing.Finding) int {
		return cmp.Or(
			-cmp.Compare(a.Severity, b.Severity),
			strings.Compare(string(a.Rule), string(b.Rule)),
			a.Key.Compare(b.Key),
			strings.Compare(a.Path, b.Path),
			strings.Compare(a.Message, b.Message),
		)
	})
	return out
}
