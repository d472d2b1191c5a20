package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFinish(t *testing.T) {
	findings := func() []Finding {
		return []Finding{
			{Rule: RulePrune, Severity: SeverityWarning, Key: key("", "ConfigMap", "shop", "a")},
			{Rule: RuleFieldConflict, Severity: SeverityWarning, Key: key("apps", "Deployment", "shop", "web")},
			{Rule: RuleLiveUnavailable, Severity: SeverityError},
		}
	}
	type result struct {
		Worst       Severity
		Failing     bool
		TargetWorst Severity
		Findings    []string
		Failing1    []bool
	}
	tests := []struct {
		name   string
		policy Policy
		want   result
	}{
		{
			name:   "default: every error fails",
			policy: DefaultPolicy(),
			want: result{
				Worst: SeverityError, Failing: true, TargetWorst: SeverityError,
				Findings: []string{"error live-unavailable /", "warning field-conflict Deployment/shop/web", "warning prune ConfigMap/shop/a"},
				Failing1: []bool{true, false, false},
			},
		},
		{
			name:   "severity override raises field-conflict to error",
			policy: Policy{Severity: map[Rule]Severity{RuleFieldConflict: SeverityError, RuleLiveUnavailable: SeverityInfo}},
			want: result{
				Worst: SeverityError, Failing: true, TargetWorst: SeverityError,
				Findings: []string{"error field-conflict Deployment/shop/web", "warning prune ConfigMap/shop/a", "info live-unavailable /"},
				Failing1: []bool{true, false, false},
			},
		},
		{
			name:   "fail list fails a warning, and an unlisted error still fails",
			policy: Policy{Fail: []Rule{RulePrune}},
			want: result{
				Worst: SeverityError, Failing: true, TargetWorst: SeverityError,
				Findings: []string{"error live-unavailable /", "warning field-conflict Deployment/shop/web", "warning prune ConfigMap/shop/a"},
				Failing1: []bool{true, false, true},
			},
		},
		{
			name:   "nothing fails once the error is lowered",
			policy: Policy{Fail: []Rule{RuleDataLoss}, Severity: map[Rule]Severity{RuleLiveUnavailable: SeverityWarning}},
			want: result{
				Worst: SeverityWarning, Failing: false, TargetWorst: SeverityWarning,
				Findings: []string{"warning field-conflict Deployment/shop/web", "warning live-unavailable /", "warning prune ConfigMap/shop/a"},
				Failing1: []bool{false, false, false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Targets: []TargetReport{{Name: "shop", Findings: findings()}, {Name: "empty"}}}
			Finish(r, tt.policy)
			got := result{Worst: r.Worst, Failing: r.Failing, TargetWorst: r.Targets[0].Worst, Findings: brief(r.Targets[0].Findings)}
			for _, f := range r.Targets[0].Findings {
				got.Failing1 = append(got.Failing1, f.Failing)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Finish (-want +got):\n%s", diff)
			}
			if r.Targets[1].Worst != SeverityNone {
				t.Errorf("empty target Worst = %v, want none", r.Targets[1].Worst)
			}
		})
	}
}

func TestFinishReportFindings(t *testing.T) {
	r := &Report{Findings: []Finding{{Rule: RuleConfigError, Severity: SeverityError}}}
	Finish(r, DefaultPolicy())
	if !r.Failing || r.Worst != SeverityError || !r.Findings[0].Failing {
		t.Errorf("a report-level config-error must fail: worst %v failing %v", r.Worst, r.Failing)
	}
}
