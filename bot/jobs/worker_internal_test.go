package jobs

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/diffing"
)

func TestRepoURLs(t *testing.T) {
	tests := []struct {
		clone, web string
		want       []string
	}{
		{"https://github.com/acme/shop.git", "https://github.com/acme/shop",
			[]string{"https://github.com/acme/shop.git", "https://github.com/acme/shop"}},
		{"https://oauth2:tok@gitlab.example.com/g/sub/shop.git", "https://gitlab.example.com/g/sub/shop",
			[]string{"https://gitlab.example.com/g/sub/shop.git", "https://gitlab.example.com/g/sub/shop"}},
		{"file:///srv/git/shop.git", "", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, repoURLs(tt.clone, tt.web)); diff != "" {
			t.Errorf("repoURLs(%q, %q) (-want +got):\n%s", tt.clone, tt.web, diff)
		}
	}
}

func TestCheckState(t *testing.T) {
	notRendered := diffing.TargetReport{Name: "legacy", Error: "base and head: legacy/kustomization.yaml:7: remote resources are not allowed",
		Findings: []diffing.Finding{{Rule: diffing.RuleRenderError, Severity: diffing.SeverityError, PreExisting: true}}}
	compared := diffing.TargetReport{Name: "app"}
	badConfig := diffing.Finding{Rule: diffing.RuleConfigError, Severity: diffing.SeverityError, PreExisting: true}
	tests := []struct {
		name  string
		rep   diffing.Report
		state bot.State
	}{
		{"a compared target", diffing.Report{Targets: []diffing.TargetReport{compared}}, bot.StateSuccess},
		{"no targets at all", diffing.Report{}, bot.StateSuccess},
		{"one of two not rendered", diffing.Report{Targets: []diffing.TargetReport{notRendered, compared}}, bot.StateSuccess},
		{"nothing rendered", diffing.Report{Targets: []diffing.TargetReport{notRendered}}, bot.StateNeutral},
		{"invalid config", diffing.Report{Findings: []diffing.Finding{badConfig}}, bot.StateNeutral},
		{"an introduced failure wins", diffing.Report{Targets: []diffing.TargetReport{notRendered}, Failing: true}, bot.StateFailure},
	}
	for _, tt := range tests {
		if got, _ := checkState(&tt.rep); got != tt.state {
			t.Errorf("%s: state %s, want %s", tt.name, got, tt.state)
		}
	}
}
