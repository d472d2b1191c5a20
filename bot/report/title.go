package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// titleRules is how many rule names a title lists before "+N more".
const titleRules = 4

// Title is the one-line status title for a check run or commit status, such as
// "3 errors, 3 warnings: data-loss, immutable-field, prune-stateful". It counts
// errors and warnings (notes only when there is nothing worse) and names the rules
// that fail the policy, or else the rules of the worst findings.
func Title(r *diffing.Report) string {
	l := newLayout(r, DefaultOptions())
	if len(l.rows) == 0 {
		if l.anyChange() {
			return "No findings"
		}
		return "No changes"
	}
	errs, warns, notes := l.severityCounts()
	var counts []string
	if errs > 0 {
		counts = append(counts, plural(errs, "error", "errors"))
	}
	if warns > 0 {
		counts = append(counts, plural(warns, "warning", "warnings"))
	}
	if len(counts) == 0 {
		counts = append(counts, plural(notes, "note", "notes"))
	}

	worst := l.rows[0].f.Severity // rows are sorted worst first
	failing := l.r.Failing && slices.ContainsFunc(l.rows, func(rw row) bool { return rw.f.Failing })
	var rules []string
	for _, rw := range l.rows {
		pick := rw.f.Severity == worst
		if failing {
			pick = rw.f.Failing
		}
		if pick && !slices.Contains(rules, string(rw.f.Rule)) {
			rules = append(rules, string(rw.f.Rule))
		}
	}
	if len(rules) > titleRules {
		rules = append(rules[:titleRules], "+"+strconv.Itoa(len(rules)-titleRules)+" more")
	}
	return strings.Join(counts, ", ") + ": " + strings.Join(rules, ", ")
}
