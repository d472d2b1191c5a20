package preview

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
)

// modeDifference is a line of the report that only one live mode may give, with
// the reason. Lines are those of modeView: "change <target> <key> <action>
// live=<liveAction>" and "finding <target> <rule> <key> <path> <manager>
// <severity>".
type modeDifference struct {
	mode   string // the mode that reports the line: "simulate" or "dry-run"
	line   string
	reason string
}

// allowedModeDifferences lists, per scenario folder ("scenarios/NAME" or
// "gitops-scenarios/NAME"), every line on which simulate and dry-run may
// disagree, and why. Anything else that differs fails TestLiveModesAgree.
var allowedModeDifferences = map[string][]modeDifference{
	// Simulate runs no admission and no server validation (README: Live
	// comparison); only the apiserver, asked by dry-run, refuses these objects.
	// The sync then fails and leaves the live objects as they are.
	"scenarios/40-admission-policy": serverOnlyRefusal(
		"a ValidatingAdmissionPolicy installed on the cluster denies them; simulate cannot run admission policies",
		"app ConfigMap/s40/debug-tools created live=created", "app ConfigMap/s40/settings modified live=modified"),
	"scenarios/42-create-rejected": serverOnlyRefusal(
		"the apiserver's validation refuses a .dockerconfigjson that is not JSON; simulate runs no validation",
		"app Secret/s42/registry created live=created"),
	"scenarios/44-pvc-resize-admission": serverOnlyRefusal(
		"the PersistentVolumeClaimResize admission plugin refuses to grow a statically provisioned claim; simulate runs no admission plugins",
		"app PersistentVolumeClaim/s44/data modified live=modified"),
}

// serverOnlyRefusal lists what differs when only the apiserver refuses objects:
// each change ("<target> <key> <action> live=<liveAction>" as simulate reports it)
// is unchanged live in dry-run, which reports an apply-error for it instead.
func serverOnlyRefusal(reason string, changes ...string) []modeDifference {
	var out []modeDifference
	for _, c := range changes {
		f := strings.Fields(c)
		target, key, action := f[0], f[1], f[2]
		out = append(out,
			modeDifference{"simulate", "change " + c, reason},
			modeDifference{"dry-run", fmt.Sprintf("change %s %s %s live=unchanged", target, key, action), reason + "; the sync fails, so the object stays as it is"},
			modeDifference{"dry-run", fmt.Sprintf("finding %s apply-error %s error", target, key), reason})
	}
	return out
}

// TestLiveModesAgree is the differential test of the two live modes (issue 8):
// every scenario folder of fixtures/scenarios and fixtures/gitops-scenarios,
// found by globbing so new ones join by themselves, is seeded on the test cluster
// and previewed in simulate and in dry-run mode. Both must give the same changes,
// the same liveActions and the same findings, except the lines
// allowedModeDifferences lists with a reason. It also measures, over all
// scenarios, the precision and recall of warning and error findings against each
// scenario's hand-written must list plus its expected.json, and the phantom
// liveAction modified of the no-op scenarios (logged; the no-op scenarios also
// fail on any in TestGitOpsScenarios).
func TestLiveModesAgree(t *testing.T) {
	installControllerCRDs(t)
	var dirs []string
	for _, pattern := range []string{"../../fixtures/scenarios/[0-9]*", "../../fixtures/gitops-scenarios/[0-9]*"} {
		d, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d...)
	}
	if len(dirs) == 0 {
		t.Fatal("no scenarios found")
	}
	seen := map[string]bool{}
	stats := map[string]*findingStats{"simulate": {}, "dry-run": {}}
	// mustStats counts against the hand-written must lists alone (no golden).
	mustStats := map[string]*findingStats{"simulate": {}, "dry-run": {}}
	phantoms := map[string]int{}
	for _, dir := range dirs {
		name := filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			reports := map[string]*diffing.Report{}
			for _, mode := range []string{"simulate", "dry-run"} {
				reports[mode] = previewScenario(t, dir, mode)
			}
			sim, dry := modeView(reports["simulate"]), modeView(reports["dry-run"])
			allowed := allowedModeDifferences[name]
			check := func(mode string, only []string) {
				for _, l := range only {
					if !slices.ContainsFunc(allowed, func(a modeDifference) bool { return a.mode == mode && a.line == l }) {
						t.Errorf("only %s reports: %s", mode, l)
					}
				}
			}
			check("simulate", missingFrom(dry, sim))
			check("dry-run", missingFrom(sim, dry))
			for _, a := range allowed {
				if !slices.Contains(map[string][]string{"simulate": sim, "dry-run": dry}[a.mode], a.line) {
					t.Errorf("allowed difference %q (%s) no longer occurs in %s: remove it", a.line, a.reason, a.mode)
				}
			}
			expected, mustOnly := expectedFor(t, dir)
			if hasRemoteFolders(dir) {
				// The remote sources are served and allowed: both modes render
				// them and give every finding of the must list.
				for mode, rep := range reports {
					got := findingLines(rep)
					for _, want := range mustOnly {
						if !slices.ContainsFunc(got, func(g string) bool { return matches(want, g) }) {
							t.Errorf("%s: missing finding %q; got:\n  %s", mode, want, strings.Join(got, "\n  "))
						}
					}
				}
			}
			for mode, rep := range reports {
				// A finding the list allows only this mode is expected in it.
				exp := slices.Clone(expected)
				for _, a := range allowed {
					if f, ok := strings.CutPrefix(a.line, "finding "); ok && a.mode == mode {
						parts := strings.Fields(f)[1:]                             // without the target
						exp = append(exp, strings.Join(parts[:len(parts)-1], " ")) // nor the severity
					}
				}
				stats[mode].add(name, exp, rep)
				mustStats[mode].add(name, append(slices.Clone(mustOnly), exp[len(expected):]...), rep)
				if strings.Contains(name, "noop") {
					for _, tr := range rep.Targets {
						for _, c := range tr.Changes {
							if c.LiveAction == diffing.ActionModified {
								phantoms[mode]++
							}
						}
					}
				}
			}
		})
	}
	for name := range allowedModeDifferences {
		if !seen[name] {
			t.Errorf("allowedModeDifferences names %s, which has no folder", name)
		}
	}
	for _, mode := range []string{"simulate", "dry-run"} {
		s := stats[mode]
		t.Logf("%s: warning+error findings: %d reported, %d expected (must lists + expected.json); precision %d/%d = %.3f, recall %d/%d = %.3f; phantom liveAction modified on no-op scenarios: %d",
			mode, s.reported, s.expected, s.truePos, s.reported, ratio(s.truePos, s.reported), s.found, s.expected, ratio(s.found, s.expected), phantoms[mode])
		// Precision and recall of warning+error findings are 1.00 in both
		// modes (issue 24): every miss and every extra is an error.
		for _, l := range s.unexpected {
			t.Errorf("%s: reported, not expected: %s", mode, l)
		}
		for _, l := range s.missed {
			t.Errorf("%s: expected, not reported: %s", mode, l)
		}
		m := mustStats[mode]
		t.Logf("%s: against the must lists alone: precision %d/%d = %.3f, recall %d/%d = %.3f",
			mode, m.truePos, m.reported, ratio(m.truePos, m.reported), m.found, m.expected, ratio(m.found, m.expected))
		for _, l := range m.unexpected {
			t.Logf("%s: reported, not in a must list: %s", mode, l)
		}
		// Precision and recall of warning+error findings are 1.00 in both
		// modes (issue 24): every miss and every extra is an error.
		for _, l := range s.unexpected {
			t.Errorf("%s: reported, not expected: %s", mode, l)
		}
		for _, l := range s.missed {
			t.Errorf("%s: expected, not reported: %s", mode, l)
		}
	}
}

// installControllerCRDs installs the Argo CD and Flux CRDs of fixtures/crds for
// the duration of t.
func installControllerCRDs(t *testing.T) {
	t.Helper()
	crds, err := filepath.Glob("../../fixtures/crds/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in fixtures/crds: %v", err)
	}
	for _, f := range crds {
		for _, crd := range docs(t, f) {
			cluster.InstallCRD(t.Context(), t, crd)
		}
	}
}

// previewScenario seeds the cluster from a scenario folder of either kind and
// previews it in one live mode.
func previewScenario(t *testing.T, dir, mode string) *diffing.Report {
	t.Helper()
	ctx := t.Context()
	// A scenario with repo/, oci/ or git/ folders is previewed with its servers
	// running and allowed, as in TestGitOpsScenarios.
	var fetcher *remote.Fetcher
	gitopsScenario, name := filepath.Base(filepath.Dir(dir)) == "gitops-scenarios", filepath.Base(dir)
	if hasRemoteFolders(dir) {
		sf := remoteFixture(t, dir)
		dir, fetcher = sf.Dir, sf.Fetcher
	}
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	cfg := cluster.Config()
	// Every target is compared (AllTargets), as in runScenario and
	// TestGitOpsScenarios: a pre-existing render error of a target the PR does
	// not touch is part of what the scenario expects.
	req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, Remote: fetcher, AllTargets: true}
	if gitopsScenario {
		gitopsNamespaces(t, dir)
		for _, s := range gitopsSteps(t, dir) {
			seedGitOps(t, dir, s)
		}
		req.RepoURLs = []string{gitopsRepoURL}
	} else {
		createNamespaces(ctx, t, dir)
		for _, s := range readSteps(t, dir) {
			if s.Unreachable {
				cfg = &rest.Config{Host: "https://127.0.0.1:1", Timeout: 2 * time.Second}
				continue
			}
			seed(ctx, t, dir, s)
		}
		// Some scenarios install objects the apiserver loads asynchronously (an
		// admission policy): wait until they take effect, as TestDryRunScenarios does.
		if sc, ok := dryRunScenarios[name]; ok && sc.ready != nil {
			sc.ready(t)
		}
	}
	req.DefaultCluster = &Cluster{Name: "test", Config: cfg, LiveMode: diffing.LiveMode(mode)}
	rep, err := Run(ctx, req)
	if err != nil {
		t.Fatalf("%s: preview: %v", mode, err)
	}
	return rep
}

// modeView is what must agree between the modes: each change with its actions
// and each finding, as sorted lines.
func modeView(rep *diffing.Report) []string {
	var out []string
	finding := func(target string, f diffing.Finding) string {
		parts := []string{"finding", target, string(f.Rule), keyOrEmpty(f), f.Path, f.Manager, f.Severity.String()}
		return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
	}
	for _, f := range rep.Findings {
		out = append(out, finding("-", f))
	}
	for _, tr := range rep.Targets {
		for _, c := range tr.Changes {
			out = append(out, fmt.Sprintf("change %s %s %s live=%s", tr.Name, c.Key, c.Action, c.LiveAction))
		}
		for _, f := range tr.Findings {
			out = append(out, finding(tr.Name, f))
		}
	}
	slices.Sort(out)
	return out
}

// missingFrom lists the lines of b that a lacks.
func missingFrom(a, b []string) []string {
	var out []string
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, l)
		}
	}
	return out
}

// expectedFor is a scenario's expected warning and error findings (all), and
// those of its must list alone (mustOnly) as "rule key
// path manager" patterns (which may stop early): its hand-written must list
// (must for fixtures/scenarios, gitopsCases for fixtures/gitops-scenarios), plus
// the warning and error entries of its expected.json when it has one. The test
// adds the findings allowedModeDifferences allows one mode (an admission denial
// only dry-run sees) to that mode's expectation.
func expectedFor(t *testing.T, dir string) (all, mustOnly []string) {
	t.Helper()
	name := filepath.Base(dir)
	var pats []string
	if filepath.Base(filepath.Dir(dir)) == "gitops-scenarios" {
		if i := slices.IndexFunc(gitopsCases, func(c gitopsCase) bool { return c.name == name }); i >= 0 {
			pats = append(pats, gitopsCases[i].must...)
		}
	} else {
		pats = append(pats, must[name].findings...)
	}
	pats = slices.DeleteFunc(pats, func(p string) bool {
		rule := diffing.Rule(strings.Fields(p)[0])
		return diffing.DefaultSeverity[rule] < diffing.SeverityWarning
	})
	mustOnly = slices.Clone(pats)
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if os.IsNotExist(err) {
		return pats, mustOnly
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []struct{ Rule, Severity, Key, Path, Manager string } `json:"findings"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s/expected.json: %v", dir, err)
	}
	for _, f := range doc.Findings {
		if f.Severity != "warning" && f.Severity != "error" {
			continue
		}
		p := strings.Join(slices.DeleteFunc([]string{f.Rule, f.Key, f.Path, f.Manager}, func(s string) bool { return s == "" }), " ")
		if !slices.ContainsFunc(pats, func(q string) bool { return matches(q, p) || matches(p, q) }) {
			pats = append(pats, p)
		}
	}
	return pats, mustOnly
}

// findingStats counts warning and error findings against expected patterns:
// reported findings, those matching an expected pattern (true positives),
// expected patterns, and those some reported finding matches.
type findingStats struct {
	reported, truePos, expected, found int
	unexpected, missed                 []string
}

func (s *findingStats) add(name string, expected []string, rep *diffing.Report) {
	var got []string
	add := func(f diffing.Finding) {
		if f.Severity < diffing.SeverityWarning {
			return
		}
		got = append(got, strings.Join(slices.DeleteFunc([]string{string(f.Rule), keyOrEmpty(f), f.Path, f.Manager}, func(s string) bool { return s == "" }), " "))
	}
	for _, f := range rep.Findings {
		add(f)
	}
	for _, tr := range rep.Targets {
		for _, f := range tr.Findings {
			add(f)
		}
	}
	s.reported += len(got)
	s.expected += len(expected)
	for _, g := range got {
		if slices.ContainsFunc(expected, func(e string) bool { return matches(e, g) }) {
			s.truePos++
		} else {
			s.unexpected = append(s.unexpected, name+": "+g)
		}
	}
	for _, e := range expected {
		if slices.ContainsFunc(got, func(g string) bool { return matches(e, g) }) {
			s.found++
		} else {
			s.missed = append(s.missed, name+": "+e)
		}
	}
}

func keyOrEmpty(f diffing.Finding) string {
	if f.Key.Kind == "" && f.Key.Name == "" {
		return ""
	}
	return f.Key.String()
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
