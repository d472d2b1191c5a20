package jobs

import (
	"os"
	"path/filepath"
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

// TestHidePaths: the error a status shows after the last attempt (a git error
// naming the mirror, a checkout under the checkout dir or the temp dir) names
// the service's directories symbolically, never where it keeps its files.
func TestHidePaths(t *testing.T) {
	w := &Worker{mirror: NewMirror("/srv/driftpreview/mirror"), opts: Options{CheckoutDir: "/dev/shm/dp"}}
	tmp := filepath.Join(os.TempDir(), "driftpreview-head-123")
	for _, tc := range []struct{ in, want string }{
		{`resolving "eeeeeee" in /srv/driftpreview/mirror/github.com/acme/shop.git: not a commit (fetch it first?)`,
			`resolving "eeeeeee" in (repository mirror)/github.com/acme/shop.git: not a commit (fetch it first?)`},
		{"checking out head into /dev/shm/dp/co-1: no space left on device", "checking out head into (checkout dir)/co-1: no space left on device"},
		{"reading " + tmp + "/apps/x.yaml: permission denied", "reading (temp dir)/driftpreview-head-123/apps/x.yaml: permission denied"},
		{"apps/shop: /spec/replicas is owned by kube-controller-manager", "apps/shop: /spec/replicas is owned by kube-controller-manager"},
	} {
		if got := w.hidePaths(tc.in); got != tc.want {
			t.Errorf("hidePaths(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
