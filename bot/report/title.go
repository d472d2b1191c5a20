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
// the errors and warnings the PR introduces (notes only when there is nothing
// worse) and names the rules that fail the policy, or else the rules of the worst
// findings; pre-existing findings and targets that were not rendered are counted
// after it. When nothing was compared it says so instead.
func Title(r *diffing.Report) string {
	l := newLayout(r, DefaultOptions())
	r = l.r // never nil
	var extra []string
	if l.preExisting > 0 {
		extra = append(extra, thousands(l.preExisting)+" pre-existing")
	}
	compared, notCompared := r.Coverage()
	if notCompared > 0 && compared > 0 {
		extra = append(extra, plural(notCompared, "target", "targets")+" not rendered")
	}
	rows := slices.DeleteFunc(slices.Clone(l.rows), func(rw row) bool { return rw.f.PreExisting })
	var title string
	switch {
	case r.NothingCompared() && !r.Failing:
		title = strings.TrimPrefix(l.coverage(), "nothing compared: ")
		title = "Nothing compared: " + strings.ReplaceAll(title, "`", "")
	case len(rows) == 0 && len(l.rows) > 0:
		title = "No new findings"
	case len(rows) == 0 && l.anyChange():
		title = "No findings"
	case len(rows) == 0:
		title = "No changes"
	default:
		title = findingsTitle(r, rows)
	}
	if len(extra) > 0 {
		title += " (" + strings.Join(extra, ", ") + ")"
	}
	return title
}

// findingsTitle counts rows by severity and names their rules.
func findingsTitle(r *diffing.Report, rows []row) string {
	var errs, warns, notes int
	for _, rw := range rows {
		switch rw.f.Severity {
		case diffing.SeverityError:
			errs++
		case diffing.SeverityWarning:
			warns++
		default:
			notes++
		}
	}
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

	worst := rows[0].f.Severity // rows are sorted worst first
	failing := r.Failing && slices.ContainsFunc(rows, func(rw row) bool { return rw.f.Failing })
	var rules []string
	for _, rw := range rows {
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
