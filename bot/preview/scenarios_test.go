package preview

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

// scenarioNow is the fixed "now" of every scenario, so the comment footer is stable.
var scenarioNow = time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC)

// must lists, per scenario, findings that have to be present whatever the golden files
// say ("rule key path manager", empty parts ignored), and whether the report fails.
// It keeps a careless -update from blessing a broken engine.
var must = map[string]struct {
	findings []string
	failing  bool
}{
	"01-hpa-owns-replicas":      {[]string{"field-conflict Deployment/s01/web /spec/replicas kube-controller-manager"}, false},
	"02-kubectl-edit-configmap": {[]string{"live-drift ConfigMap/s02/settings /data/LOG_LEVEL kubectl-edit"}, false},
	"03-kubectl-scale":          {[]string{"live-drift Deployment/s03/api /spec/replicas kubectl-scale"}, false},
	"04-pvc-data-loss": {[]string{
		"data-loss PersistentVolumeClaim/s04/cache",
		"prune-stateful PersistentVolumeClaim/s04/cache",
	}, true},
	"05-namespace-cascade": {[]string{"prune-cascade Namespace/s05-team", "prune-stateful Namespace/s05-team"}, true},
	"06-crd-cascade": {[]string{
		"prune-cascade CustomResourceDefinition/backups.s06.example.com",
		"prune-stateful CustomResourceDefinition/backups.s06.example.com",
	}, true},
	"07-nameprefix-rename": {[]string{
		"rename ConfigMap/s07/prod-shop-config", "rename Deployment/s07/prod-shop",
		"rename Service/s07/prod-shop", "rename ServiceAccount/s07/prod-shop",
	}, false},
	"08-statefulset-vct":     {[]string{"immutable-field StatefulSet/s08/db /spec/volumeClaimTemplates"}, true},
	"09-deployment-selector": {[]string{"immutable-field Deployment/s09/web /spec/selector"}, true},
	"10-secret-change":       {[]string{"secret-change Secret/s10/api-creds", "live-drift Secret/s10/api-creds /data/password kubectl-edit"}, false},
	"11-orphan":              {[]string{"orphan ConfigMap/s11/feature-flags", "orphan ConfigMap/s11/old-reports"}, false},
	// The config comes from the base and the cluster is not the PR's: neither
	// fails the check (the CLI still exits 2 on a config error).
	"12-bad-config":          {[]string{"config-error"}, false},
	"13-render-failure":      {[]string{"render-error"}, true},
	"14-cluster-unreachable": {[]string{"live-unavailable"}, false},
	"15-clean":               {nil, false},
	// Dry-run scenarios (TestDryRunScenarios): simulate cannot see admission or RBAC.
	"40-admission-policy":      {[]string{"live-drift ConfigMap/s40/flags /data/CHECKOUT_V2 kubectl-edit"}, false},
	"41-rbac-escalation":       {nil, false},
	"42-create-rejected":       {nil, false},
	"43-secret-rbac-forbidden": {[]string{"live-drift ConfigMap/s43/settings /data/LOG_LEVEL kubectl-edit", "secret-change Secret/s43/api-creds"}, false},
	"44-pvc-resize-admission":  {[]string{"stateful-change PersistentVolumeClaim/s44/data"}, false},
	"45-immutable-kinds": {[]string{
		"immutable-field ConfigMap/s45/settings /data",
		"immutable-field Job/s45/migrate /spec/template",
		"immutable-field PriorityClass/s45-critical /value",
		"immutable-field Secret/s45/smtp /type",
		"immutable-field StorageClass/s45-fast /parameters",
	}, true},
	"16-preexisting-render-error": {[]string{
		"render-error",
		"live-drift ConfigMap/s16/flags /data/LOG_LEVEL kubectl-edit",
	}, false},
	"17-nothing-rendered": {[]string{"render-error"}, false},
	// The PR adds namespace: {{ .Release.Namespace }} to every template of a
	// release installed in default: the same objects, so nothing at all.
	"18-namespace-field": {nil, false},
	// A configMapGenerator literal changes: a new hash name, references follow.
	"19-generator-hash-rotation": {[]string{"hash-rotation ConfigMap/s19/settings-6762bb9f2h"}, false},
	// A remote kustomize base bumped at head, with no remote policy: not
	// rendered, with the reason; nothing fails.
	"57-remote-base-refused": {[]string{"not-rendered"}, false},
}

// mustPreExisting lists, per scenario, findings ("rule key path manager" patterns)
// that must be marked pre-existing: the base has them already.
var mustPreExisting = map[string][]string{
	"02-kubectl-edit-configmap":   {"live-drift ConfigMap/s02/settings /data/LOG_LEVEL kubectl-edit"},
	"12-bad-config":               {"config-error"},
	"14-cluster-unreachable":      {"live-unavailable"},
	"16-preexisting-render-error": {"render-error", "live-drift ConfigMap/s16/flags /data/LOG_LEVEL kubectl-edit"},
	"17-nothing-rendered":         {"render-error"},
}

// mustNothingCompared names the scenarios where no target could be compared: the
// report says so and the bot's check is neutral.
var mustNothingCompared = map[string]bool{"12-bad-config": true, "17-nothing-rendered": true, "57-remote-base-refused": true}

func TestScenarios(t *testing.T) {
	dirs, err := filepath.Glob("../../fixtures/scenarios/[0-9]*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) { runScenario(t, dir) })
	}
	for name := range must {
		if !slices.ContainsFunc(dirs, func(d string) bool { return filepath.Base(d) == name }) {
			t.Errorf("scenario %s is listed in must but has no folder", name)
		}
	}
}

// step is one line of a scenario's live/steps.yaml: how the live cluster got its state.
type step struct {
	Apply       string `json:"apply"`
	Render      string `json:"render"` // a target path in base/, rendered and applied
	Update      string `json:"update"`
	Manager     string `json:"manager"`
	Scale       *ref   `json:"scale"`
	Replicas    int32  `json:"replicas"`
	Status      *ref   `json:"status"`
	Phase       string `json:"phase"`
	Unreachable bool   `json:"unreachable"`
}

type ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

var kindAPI = map[string]string{
	"Deployment": "apps/v1", "StatefulSet": "apps/v1",
	"PersistentVolumeClaim": "v1", "PersistentVolume": "v1", "ConfigMap": "v1",
}

func (r ref) object() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(kindAPI[r.Kind])
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return u
}

func runScenario(t *testing.T, dir string) {
	ctx := t.Context()
	name := filepath.Base(dir)
	repoDir := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))

	cfg := cluster.Config()
	steps := readSteps(t, dir)
	createNamespaces(ctx, t, dir)
	for _, s := range steps {
		if s.Unreachable {
			cfg = &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second}
			continue
		}
		seed(ctx, t, dir, s)
	}

	// Every target is compared (AllTargets): a scenario judges what the preview
	// reports for a target, live comparison included, even where the PR does
	// not touch it (15-clean); which targets a PR affects is
	// TestIncrementalTargets'.
	rep, err := Run(ctx, Request{
		RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow, AllTargets: true,
		DefaultCluster: &Cluster{Name: "test", Config: cfg, LiveMode: "simulate"},
	})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	opts := report.DefaultOptions()
	md := stable(report.Markdown(rep, opts))
	js, err := report.JSON(rep)
	if err != nil {
		t.Fatal(err)
	}

	// Secret values never leave the pipeline, in any output.
	for _, out := range []string{md, string(js)} {
		if strings.Contains(out, "SECRET-VALUE") {
			t.Errorf("a Secret value leaked into the output:\n%s", out)
		}
	}
	got := findingLines(rep)
	m := must[name]
	for _, want := range m.findings {
		if !slices.ContainsFunc(got, func(g string) bool { return matches(want, g) }) {
			t.Errorf("missing finding %q; got:\n  %s", want, strings.Join(got, "\n  "))
		}
	}
	if m.findings == nil && len(got) > 0 {
		t.Errorf("clean scenario has findings:\n  %s", strings.Join(got, "\n  "))
	}
	if rep.Failing != m.failing {
		t.Errorf("report failing = %v, want %v (exit code %d)", rep.Failing, m.failing, map[bool]int{false: 0, true: 1}[m.failing])
	}
	var pre []string
	for _, f := range allFindings(rep) {
		if f.PreExisting {
			pre = append(pre, scenarioLine(f))
		}
	}
	for _, want := range mustPreExisting[name] {
		if !slices.ContainsFunc(pre, func(g string) bool { return matches(want, g) }) {
			t.Errorf("finding %q is not marked pre-existing; pre-existing:\n  %s", want, strings.Join(pre, "\n  "))
		}
	}
	if got, want := rep.NothingCompared(), mustNothingCompared[name]; got != want {
		t.Errorf("NothingCompared = %v, want %v", got, want)
	}

	expected := expectedFindings(rep)
	golden.Check(t, filepath.Join(dir, "expected.json"), expected)
	golden.Check(t, filepath.Join(dir, "comment.golden.md"), []byte(md))
}

// matches compares "rule key path manager" patterns with a finding line; the pattern
// may stop early.
func matches(want, got string) bool {
	w, g := strings.Fields(want), strings.Fields(got)
	if len(w) > len(g) {
		return false
	}
	for i := range w {
		if w[i] != g[i] {
			return false
		}
	}
	return true
}

func findingLines(rep *diffing.Report) []string {
	var lines []string
	for _, f := range allFindings(rep) {
		lines = append(lines, scenarioLine(f))
	}
	return lines
}

// scenarioLine writes a finding as "rule key path manager", empty parts left out.
func scenarioLine(f diffing.Finding) string {
	parts := []string{string(f.Rule)}
	if f.Key != (render.ObjectKey{}) {
		parts = append(parts, f.Key.String())
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	if f.Manager != "" {
		parts = append(parts, f.Manager)
	}
	return strings.Join(parts, " ")
}

// allFindings is the report's findings, then each target's.
func allFindings(rep *diffing.Report) []diffing.Finding {
	out := slices.Clone(rep.Findings)
	for _, tr := range rep.Targets {
		out = append(out, tr.Findings...)
	}
	return out
}

// expectedFindings is the scenario's expected.json: every finding without its
// free-text message (the comment golden holds that), plus the verdict.
func expectedFindings(rep *diffing.Report) []byte {
	type finding struct {
		Target   string `json:"target,omitempty"`
		Rule     string `json:"rule"`
		Severity string `json:"severity"`
		Key      string `json:"key,omitempty"`
		Path     string `json:"path,omitempty"`
		Manager  string `json:"manager,omitempty"`
		Failing  bool   `json:"failing,omitempty"`
		// PreExisting marks findings the base has too.
		PreExisting bool `json:"preExisting,omitempty"`
	}
	out := struct {
		Failing  bool      `json:"failing"`
		Worst    string    `json:"worst"`
		Findings []finding `json:"findings"`
	}{Failing: rep.Failing, Worst: rep.Worst.String(), Findings: []finding{}}
	add := func(target string, f diffing.Finding) {
		k := ""
		if f.Key != (render.ObjectKey{}) {
			k = f.Key.String()
		}
		out.Findings = append(out.Findings, finding{target, string(f.Rule), f.Severity.String(), k, f.Path, f.Manager, f.Failing, f.PreExisting})
	}
	for _, f := range rep.Findings {
		add("", f)
	}
	for _, tr := range rep.Targets {
		for _, f := range tr.Findings {
			add(tr.Name, f)
		}
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	return append(b, '\n')
}

// stable replaces what differs between runs (managedFields times of live edits) so the
// comment golden is byte-stable, and Service cluster IPs, which the apiserver picks. The footer's time is the fixed scenarioNow.
var liveTime = regexp.MustCompile(`20\d\d-\d\d-\d\d \d\d:\d\d UTC`)

// clusterIP matches addresses the apiserver allocates to Services at random.
var clusterIP = regexp.MustCompile(`\b10\.0\.0\.\d+\b`)

func stable(md string) string {
	md = clusterIP.ReplaceAllString(md, "<cluster-ip>")
	return liveTime.ReplaceAllStringFunc(md, func(s string) string {
		if s == scenarioNow.Format("2006-01-02 15:04 UTC") {
			return s
		}
		return "<time>"
	})
}

func readSteps(t *testing.T, dir string) []step {
	b, err := os.ReadFile(filepath.Join(dir, "live", "steps.yaml"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	if err := yaml.UnmarshalStrict(b, &steps); err != nil {
		t.Fatalf("%s/live/steps.yaml: %v", dir, err)
	}
	return steps
}

func docs(t *testing.T, file string) []*unstructured.Unstructured {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out = append(out, testcluster.FromYAML(t, doc))
	}
	return out
}

// createNamespaces creates every namespace the scenario's objects use.
func createNamespaces(ctx context.Context, t *testing.T, dir string) {
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, "steps.yaml") || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, m := range regexp.MustCompile(`(?m)^\s*namespace: (s\d\d[\w-]*)$`).FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ns := range seen {
		_, err := cluster.Kube().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

func seed(ctx context.Context, t *testing.T, dir string, s step) {
	switch {
	case s.Apply != "":
		for _, obj := range docs(t, filepath.Join(dir, s.Apply)) {
			cluster.ApplyAs(ctx, t, obj, s.Manager)
			if obj.GetKind() == "CustomResourceDefinition" {
				waitServed(t, obj)
			}
		}
	case s.Render != "":
		set, err := render.Render(ctx, filepath.Join(dir, "base"), s.Render, render.DefaultOptions())
		if err != nil {
			t.Fatalf("rendering %s for the live state: %v", s.Render, err)
		}
		for _, o := range set.Objects {
			cluster.ApplyAs(ctx, t, o.Obj, s.Manager)
		}
	case s.Update != "":
		for _, obj := range docs(t, filepath.Join(dir, s.Update)) {
			cluster.EditAs(ctx, t, obj, s.Manager, func(live *unstructured.Unstructured) {
				for k, v := range obj.Object {
					if k != "metadata" && k != "apiVersion" && k != "kind" {
						live.Object[k] = v
					}
				}
			})
		}
	case s.Scale != nil:
		cluster.ScaleAs(ctx, t, s.Scale.object(), s.Replicas, s.Manager)
	case s.Status != nil:
		cluster.SetStatusAs(ctx, t, s.Status.object(), map[string]any{"phase": s.Phase}, "kube-controller-manager")
	default:
		t.Fatalf("empty step in %s/live/steps.yaml", dir)
	}
}

func waitServed(t *testing.T, crd *unstructured.Unstructured) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := versions[0].(map[string]any)["name"].(string)
	deadline := time.Now().Add(30 * time.Second)
	for {
		cluster.ResetMapper()
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/" + version)
		u.SetKind(kind)
		if _, err := cluster.Mapping(u.GroupVersionKind()); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("CRD %s not served: %v", crd.GetName(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// gitRepo makes a real git repository with two commits, tagged base and head.
func gitRepo(t *testing.T, base, head string) string {
	t.Helper()
	return gitfixture.BaseHead(t, base, head)
}
