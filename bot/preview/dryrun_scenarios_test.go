package preview

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// dryRunRules is the dry-run identity of deploy/chart (read-only plus patch), which
// holds no delete or escalate: enough to dry-run any object, not to grant RBAC.
var dryRunRules = append(slices.Clone(readOnlyRules),
	rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"patch"}})

// noSecretPatchRules may patch everything but Secrets.
var noSecretPatchRules = append(slices.Clone(readOnlyRules),
	rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps", "services", "persistentvolumeclaims"}, Verbs: []string{"patch"}},
	rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"*"}, Verbs: []string{"patch"}})

// dryRunScenarios are scenarios whose point is what the apiserver answers a
// dry-run: each names the findings dry-run must give ("rule key path manager"),
// findings it must not give, message fragments, and the identity it runs as (nil:
// admin). Each scenario also runs in TestScenarios (simulate), where admission and
// RBAC are invisible.
var dryRunScenarios = map[string]struct {
	rules    []rbacv1.PolicyRule
	findings []string
	not      []string
	messages []string
	notes    []string
	failing  bool
	ready    func(t *testing.T)
}{
	// A ValidatingAdmissionPolicy denies an update and a create: apply-error naming
	// the policy; the target's live-drift on another object is kept.
	"40-admission-policy": {
		findings: []string{
			"apply-error ConfigMap/s40/debug-tools",
			"apply-error ConfigMap/s40/settings",
			"live-drift ConfigMap/s40/flags /data/CHECKOUT_V2 kubectl-edit",
		},
		not:      []string{"live-unavailable"},
		messages: []string{"ValidatingAdmissionPolicy `s40-no-debug-logs` (binding `s40-no-debug-logs`) denies the update (debug logging is not allowed in this namespace)", "denies the create"},
		failing:  true,
		ready:    waitForPolicy,
	},
	// Escalation prevention refuses a Role update and a ClusterRole create for the
	// dry-run identity: its own message, never "missing patch permission".
	"41-rbac-escalation": {
		rules:    dryRunRules,
		findings: []string{"live-unavailable ClusterRole/s41-volume-janitor", "live-unavailable Role/s41/config-reader"},
		not:      []string{"apply-error"},
		messages: []string{"RBAC escalation prevention refused the dry-run create", "RBAC escalation prevention refused the dry-run update"},
		failing:  true,
	},
	// Creates are dry-run too: the server rejects a pull Secret whose
	// .dockerconfigjson is not JSON; a namespace head creates cannot be dry-run into.
	"42-create-rejected": {
		findings: []string{"apply-error Secret/s42/registry"},
		messages: []string{"data[.dockerconfigjson]"},
		notes:    []string{"Objects in namespace `team-s42` were not dry-run"},
		failing:  true,
	},
	// Without patch on Secrets, the Secret's live side is unavailable (not an
	// apply-error blaming the manifest); the ConfigMap's drift is still found.
	"43-secret-rbac-forbidden": {
		rules: noSecretPatchRules,
		findings: []string{
			"live-unavailable Secret/s43/api-creds",
			"live-drift ConfigMap/s43/settings /data/LOG_LEVEL kubectl-edit",
			"secret-change Secret/s43/api-creds",
		},
		not:      []string{"apply-error"},
		messages: []string{"RBAC refused the dry-run update of this object"},
		notes:    []string{"Dry-run mode needs `patch` permission"},
		// The identity lacks patch at base as much as at head: the missing live
		// side is pre-existing, not the PR's, and does not fail the check.
		failing: false,
	},
	// The apiserver refuses each update once: one immutable-field per object, no
	// apply-error beside it (a Job's refusal quotes its whole pod template).
	"45-immutable-kinds": {
		findings: []string{
			"immutable-field ConfigMap/s45/settings /data",
			"immutable-field Job/s45/migrate /spec/template",
			"immutable-field PriorityClass/s45-critical /value",
			"immutable-field Secret/s45/smtp /type",
			"immutable-field StorageClass/s45-fast /parameters",
		},
		not:      []string{"apply-error", "live-unavailable"},
		messages: []string{"`parameters`: field is immutable", "`type`: field is immutable"},
		failing:  true,
	},
	// The PersistentVolumeClaimResize admission plugin refuses to grow a statically
	// provisioned claim: an apply-error naming the plugin, the stateful-change kept.
	"44-pvc-resize-admission": {
		findings: []string{"apply-error PersistentVolumeClaim/s44/data", "stateful-change PersistentVolumeClaim/s44/data"},
		not:      []string{"live-unavailable"},
		messages: []string{"Admission plugin `PersistentVolumeClaimResize` denies the update (only dynamically provisioned pvc can be resized"},
		failing:  true,
	},
}

// TestDryRunScenarios runs the dry-run scenarios in dry-run mode and checks that
// every server answer is classified per object: one finding per refusal, the
// right rule, and who refused.
func TestDryRunScenarios(t *testing.T) {
	for name, sc := range dryRunScenarios {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../../fixtures/scenarios", name)
			repoDir := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
			createNamespaces(t.Context(), t, dir)
			for _, s := range readSteps(t, dir) {
				seed(t.Context(), t, dir, s)
			}
			if sc.ready != nil {
				sc.ready(t)
			}
			cfg := cluster.Config()
			if sc.rules != nil {
				cfg = cluster.UserConfig(t, "dryrun-"+name[:2], sc.rules)
			}
			rep := runMode(t, repoDir, "dry-run", cfg)
			got := findingLines(rep)
			t.Logf("dry-run findings:\n  %s\nnotes: %q", strings.Join(got, "\n  "), rep.Targets[0].Notes)
			for _, want := range sc.findings {
				if !slices.ContainsFunc(got, func(g string) bool { return matches(want, g) }) {
					t.Errorf("missing finding %q; got:\n  %s", want, strings.Join(got, "\n  "))
				}
			}
			// One refusal gives one finding: no key has two findings of one rule.
			seen := map[string]bool{}
			for _, g := range got {
				f := strings.Fields(g)
				id := strings.Join(f[:min(2, len(f))], " ")
				if seen[id] {
					t.Errorf("finding %q is reported twice; got:\n  %s", id, strings.Join(got, "\n  "))
				}
				seen[id] = true
				for _, n := range sc.not {
					if f[0] == n {
						t.Errorf("unexpected %s finding %q", n, g)
					}
				}
			}
			md := report.Markdown(rep, report.DefaultOptions())
			for _, f := range rep.Targets[0].Findings {
				t.Logf("%s %s: %s", f.Rule, f.Key, f.Message)
			}
			for _, m := range sc.messages {
				if !strings.Contains(md, m) {
					t.Errorf("comment does not say %q:\n%s", m, md)
				}
			}
			for _, n := range sc.notes {
				if !slices.ContainsFunc(rep.Targets[0].Notes, func(s string) bool { return strings.Contains(s, n) }) {
					t.Errorf("notes %q do not say %q", rep.Targets[0].Notes, n)
				}
			}
			js, err := report.JSON(rep)
			if err != nil {
				t.Fatal(err)
			}
			for _, out := range []string{md, string(js)} {
				if strings.Contains(out, "SECRET-VALUE") || strings.Contains(out, "U0VDUkVULVZBTFVF") {
					t.Errorf("a Secret value leaked into the output")
				}
				if strings.Contains(out, "needs patch permission") {
					t.Errorf("the report blames a missing patch permission:\n%s", out)
				}
			}
			if rep.Failing != sc.failing {
				t.Errorf("failing = %v, want %v; findings:\n  %s", rep.Failing, sc.failing, strings.Join(got, "\n  "))
			}
		})
	}
}

func runMode(t *testing.T, repoDir string, mode diffing.LiveMode, cfg *rest.Config) *diffing.Report {
	t.Helper()
	rep, err := Run(t.Context(), Request{
		RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow,
		DefaultCluster: &Cluster{Name: "test", Config: cfg, LiveMode: mode},
	})
	if err != nil {
		t.Fatalf("%s: %v", mode, err)
	}
	return rep
}

// waitForPolicy waits until scenario 40's ValidatingAdmissionPolicy is enforced
// (the apiserver loads policies asynchronously).
func waitForPolicy(t *testing.T) {
	t.Helper()
	cm := testcluster.FromYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: policy-probe, namespace: s40}
data: {LOG_LEVEL: debug}
`)
	ri := cluster.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("s40")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		_, err := ri.Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the ValidatingAdmissionPolicy of s40 is not enforced after 30s (last answer: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
