package diffing

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

// judged writes each finding as "rule pre-existing|introduced failing?" after Finish.
func judged(t *testing.T, tr TargetReport, p Policy) ([]string, bool) {
	t.Helper()
	r := &Report{Targets: []TargetReport{tr}}
	Finish(r, p)
	var out []string
	for _, f := range r.Targets[0].Findings {
		s := string(f.Rule)
		if f.PreExisting {
			s += " pre-existing"
		}
		if f.Failing {
			s += " failing"
		}
		out = append(out, s)
	}
	return out, r.Failing
}

func TestRenderErrorsPreExisting(t *testing.T) {
	missing := &render.Error{File: "apps/shop/kustomization.yaml", Line: 3, Err: errors.New("accumulating resources: 'deploy.yaml' doesn't exist")}
	other := &render.Error{File: "apps/shop/kustomization.yaml", Line: 4, Err: errors.New("invalid YAML")}
	tests := []struct {
		name        string
		base, head  error
		want        []string
		failing     bool
		errorPrefix string
	}{
		{"same error at base and head", missing, missing, []string{"render-error pre-existing"}, false, "base and head: "},
		// Whitespace is not a difference (errors are folded onto one line).
		{"same error, other line breaks", missing, errors.New("apps/shop/kustomization.yaml:3:\n  accumulating resources: 'deploy.yaml' doesn't exist"), []string{"render-error pre-existing"}, false, "base and head: "},
		{"head breaks", nil, missing, []string{"render-error failing"}, true, "head: "},
		{"head breaks differently", other, missing, []string{"render-error failing", "render-error pre-existing"}, true, "head: "},
		{"the PR fixes the base", missing, nil, []string{"render-error pre-existing"}, false, "base: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Diff(Input{Name: "shop", Path: "apps/shop", BaseErr: tt.base, HeadErr: tt.head}, testOptions())
			got, failing := judged(t, tr, Policy{})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if failing != tt.failing {
				t.Errorf("failing = %v, want %v", failing, tt.failing)
			}
			if !strings.HasPrefix(tr.Error, tt.errorPrefix) {
				t.Errorf("Error = %q, want prefix %q", tr.Error, tt.errorPrefix)
			}
		})
	}
}

func TestMarkPreExisting(t *testing.T) {
	cm := render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	web := render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	atBase := []Finding{
		{Rule: RuleLiveDrift, Severity: SeverityWarning, Key: cm, Path: "/data/LOG_LEVEL"},
		{Rule: RuleFieldConflict, Severity: SeverityWarning, Key: web, Path: "/spec/replicas"},
		{Rule: RuleRename, Severity: SeverityWarning, Key: web},
	}
	head := []Finding{
		{Rule: RuleLiveDrift, Severity: SeverityWarning, Key: cm, Path: "/data/LOG_LEVEL", Message: "other value"}, // same finding
		{Rule: RuleLiveDrift, Severity: SeverityWarning, Key: cm, Path: "/data/REGION"},                            // another path
		{Rule: RuleFieldConflict, Severity: SeverityWarning, Key: web, Path: "/spec/replicas"},                     // same
		{Rule: RuleImmutableField, Severity: SeverityError, Key: web, Path: "/spec/selector"},                      // new
		{Rule: RuleRename, Severity: SeverityError, Key: web},                                                      // worse than at base
	}
	MarkPreExisting(head, atBase)
	var got []bool
	for _, f := range head {
		got = append(got, f.PreExisting)
	}
	if diff := cmp.Diff([]bool{true, false, true, false, false}, got); diff != "" {
		t.Errorf("pre-existing (-want +got):\n%s", diff)
	}
	// policy.fail and error severity never fail a pre-existing finding.
	out, failing := judged(t, TargetReport{Findings: head}, Policy{Fail: []Rule{RuleFieldConflict, RuleLiveDrift}})
	want := []string{"immutable-field failing", "rename failing", "field-conflict pre-existing", "live-drift pre-existing", "live-drift failing"}
	if diff := cmp.Diff(want, out); diff != "" || !failing {
		t.Errorf("judged (-want +got):\n%s\nfailing = %v", diff, failing)
	}
}

func TestLiveDriftSelfHeal(t *testing.T) {
	settingsPredicted := strings.Replace(settingsLive, "LOG_LEVEL: debug", "LOG_LEVEL: info", 1)
	edit := Conflict{Path: "/data/LOG_LEVEL", Manager: "kubectl-edit", Operation: "Update", Time: ts("2026-11-02T03:14:00Z"), Live: "debug", Head: "info"}
	tests := []struct {
		name     string
		head     string
		selfHeal bool
		want     string
	}{
		{"untouched object with self-heal", settingsBase, true,
			"`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-02 03:14 UTC. This PR does not change the object; self-heal reverts it to `info` anyway."},
		{"untouched object without self-heal", settingsBase, false,
			"`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-02 03:14 UTC. This merge reverts it to `info`."},
		{"object the PR changes, with self-heal", strings.Replace(settingsBase, "REGION: eu", "REGION: us", 1), true,
			"`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-02 03:14 UTC. This merge reverts it to `info`."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ls := liveState(t, settingsLive)
			pred := settingsPredicted
			if tt.head != settingsBase {
				pred = strings.Replace(pred, "REGION: eu", "REGION: us", 1)
			}
			predict(t, ls, pred, edit)
			opts := testOptions()
			opts.SelfHeal = tt.selfHeal
			got := Diff(Input{Name: "shop", Base: set(t, settingsBase), Head: set(t, tt.head), Live: ls}, opts)
			var msgs []string
			for _, f := range got.Findings {
				if f.Rule == RuleLiveDrift {
					msgs = append(msgs, f.Message)
				}
			}
			if diff := cmp.Diff([]string{tt.want}, msgs); diff != "" {
				t.Errorf("live-drift messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOneLineCutsBetweenWords(t *testing.T) {
	long := strings.Repeat("accumulating resources from 'overlays/prod': ", 10) + "évènement"
	got := oneLine(long)
	if len(got) > 300 || !strings.HasSuffix(got, "…") {
		t.Fatalf("oneLine gave %d bytes ending %q", len(got), got[max(0, len(got)-10):])
	}
	body := strings.TrimSuffix(got, "…")
	if !strings.HasPrefix(long, body) || (long[len(body)] != ' ' && long[len(body)] != ':') {
		t.Errorf("cut inside a word: %q", got[len(got)-30:])
	}
}
