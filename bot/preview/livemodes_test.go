package preview

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
)

// readOnlyRules is the RBAC of the bot in simulate mode (deploy/chart's ClusterRole):
// read everything and the OpenAPI document, write nothing.
var readOnlyRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version"}, Verbs: []string{"get"}},
}

// TestLiveModes runs live scenarios in both live modes and, for simulate, also as a
// user that may only get and list: every mode must find the scenario's risks, and
// the read-only simulation must see exactly what the admin one sees.
func TestLiveModes(t *testing.T) {
	readOnly := cluster.UserConfig(t, "driftpreview-readonly", readOnlyRules)
	for _, name := range []string{
		"01-hpa-owns-replicas", "02-kubectl-edit-configmap", "03-kubectl-scale",
		"04-pvc-data-loss", "06-crd-cascade", "08-statefulset-vct", "09-deployment-selector", "10-secret-change",
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../../fixtures/scenarios", name)
			repoDir := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
			createNamespaces(t.Context(), t, dir)
			for _, s := range readSteps(t, dir) {
				seed(t.Context(), t, dir, s)
			}
			run := func(mode diffing.LiveMode, cfg *rest.Config) []string {
				t.Helper()
				rep, err := Run(t.Context(), Request{
					RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow,
					DefaultCluster: &Cluster{Name: "test", Config: cfg, LiveMode: mode},
				})
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				for _, tr := range rep.Targets {
					if !tr.LiveChecked {
						t.Errorf("%s: target %s has no complete live comparison: %v", mode, tr.Name, findingLines(rep))
					}
					if tr.LiveMode != mode {
						t.Errorf("%s: report says live mode %q", mode, tr.LiveMode)
					}
				}
				got := findingLines(rep)
				for _, want := range must[name].findings {
					if !slices.ContainsFunc(got, func(g string) bool { return matches(want, g) }) {
						t.Errorf("%s: missing finding %q; got:\n  %s", mode, want, strings.Join(got, "\n  "))
					}
				}
				return got
			}
			admin := run("simulate", cluster.Config())
			if diff := cmp.Diff(admin, run("simulate", readOnly)); diff != "" {
				t.Errorf("read-only simulate differs from admin simulate (-admin +read-only):\n%s", diff)
			}
			run("dry-run", cluster.Config())
		})
	}
}

// TestDryRunNeedsPatch shows why simulate is the default: a read-only identity
// cannot dry-run. Each object it could not dry-run is live-unavailable with a note
// on the missing permission, never an apply-error blaming the manifest.
func TestDryRunNeedsPatch(t *testing.T) {
	readOnly := cluster.UserConfig(t, "driftpreview-readonly-dryrun", readOnlyRules)
	dir := "../../fixtures/scenarios/02-kubectl-edit-configmap"
	repoDir := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	createNamespaces(t.Context(), t, dir)
	for _, s := range readSteps(t, dir) {
		seed(t.Context(), t, dir, s)
	}
	rep, err := Run(t.Context(), Request{
		RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow,
		DefaultCluster: &Cluster{Name: "test", Config: readOnly, LiveMode: "dry-run"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := findingLines(rep)
	t.Logf("dry-run as a read-only user: %s", strings.Join(got, "; "))
	if diff := cmp.Diff([]string{"live-unavailable ConfigMap/s02/settings"}, got); diff != "" {
		t.Errorf("dry-run without patch RBAC must make the object's live side unavailable (-want +got):\n%s", diff)
	}
	tr := rep.Targets[0]
	if tr.LiveChecked || len(tr.Findings) != 1 || !strings.Contains(tr.Findings[0].Message, "RBAC refused the dry-run update") {
		t.Errorf("want one live-unavailable finding naming the RBAC refusal, got %+v", tr.Findings)
	}
	if !slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.Contains(n, "needs `patch` permission") }) {
		t.Errorf("notes %q do not name the missing patch permission", tr.Notes)
	}
}
