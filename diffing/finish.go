package diffing

import (
	"fmt"
	"slices"
)

// Finish applies policy p to a whole report: it sets each finding's severity from
// p.Severity overrides, marks Failing (every error-severity finding fails, and so do
// the rules in p.Fail whatever their severity, unless the finding is PreExisting:
// the check judges what the PR changes, not the repository), re-sorts the
// findings, and computes each target's Worst and the report's Worst and Failing.
// The comment and the exit code read only what Finish computed.
func Finish(r *Report, p Policy) {
	dedupe(r)
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

// dedupe lists each finding once. Within a target, a finding equal in rule, object,
// path and message to an earlier one goes. Across targets, a live-drift or
// field-conflict on the same live object and field of the same cluster goes from
// every target but the first: two targets that render one object (an app and the
// app built on top of it, an Application renamed in the same merge) read the same
// hand edit, and it is one edit to undo.
func dedupe(r *Report) {
	live := map[string]bool{}
	for i := range r.Targets {
		t := &r.Targets[i]
		local := map[string]bool{}
		t.Findings = slices.DeleteFunc(t.Findings, func(f Finding) bool {
			id := fmt.Sprintf("%s\x00%v\x00%s\x00%s", f.Rule, f.Key, f.Path, f.Message)
			if local[id] {
				return true
			}
			local[id] = true
			if (f.Rule != RuleLiveDrift && f.Rule != RuleFieldConflict) || t.Cluster == "" {
				return false
			}
			lid := fmt.Sprintf("%s\x00%s\x00%v\x00%s\x00%s", t.Cluster, f.Rule, f.Key, f.Path, f.Manager)
			if live[lid] {
				return true
			}
			live[lid] = true
			return false
		})
	}
}
