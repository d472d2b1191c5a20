package diffing

import "slices"

// Finish applies policy p to a whole report: it sets each finding's severity from
// p.Severity overrides, marks Failing (every error-severity finding fails, and so do
// the rules in p.Fail whatever their severity, unless the finding is PreExisting:
// the check judges what the PR changes, not the repository), re-sorts the
// findings, and computes each target's Worst and the report's Worst and Failing.
// The comment and the exit code read only what Finish computed.
func Finish(r *Report, p Policy) {
	r.Worst = SeverityNone
	r.Failing = false
	apply := func(fs []Finding) {
		for i := range fs {
			f := &fs[i]
			if s, ok := p.Severity[f.Rule]; ok {
				f.Severity = s
			}
			f.Failing = !f.PreExisting && (f.Severity == SeverityError || slices.Contains(p.Fail, f.Rule))
			r.Failing = r.Failing || f.Failing
		}
		SortFindings(fs)
	}
	for i := range r.Targets {
		t := &r.Targets[i]
		apply(t.Findings)
		t.Worst = worst(t.Findings)
		r.Worst = max(r.Worst, t.Worst)
	}
	apply(r.Findings)
	r.Worst = max(r.Worst, worst(r.Findings))
}
