package preview

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

// driftCase is one drift scenario of fixtures/gitops-scenarios (the live
// cluster seeded from live/steps.yaml) and every line of drift its report must
// hold, and nothing else: "target Kind/ns/name path manager outcome" per field,
// "target Kind/ns/name state outcome" per object without fields.
type driftCase struct {
	name    string
	lines   []string
	drifted bool
	// counts are the gauge's values: "target@cluster=n".
	counts []string
}

var driftCases = []driftCase{
	{
		// Hand edits, an HPA and a disabled self-heal (issue 26's second
		// "Done means").
		name: "115-drift-argo-hand-edits-hpa",
		lines: []string{
			"g115-api ConfigMap/g115a/api-settings /data/MODE kubectl-edit kept",
			"g115-web ConfigMap/g115/web-settings /data/LOG_LEVEL kubectl-edit reverted",
			"g115-web ConfigMap/g115/web-tuning /data/PROFILE tuning-operator ignored",
			"g115-web Deployment/g115/web /spec/replicas kube-controller-manager fights",
		},
		drifted: true,
		counts:  []string{"g115-api@test=1", "g115-web@test=2"},
	},
	{
		name: "116-drift-flux-suspended-warn",
		lines: []string{
			"g116-app ConfigMap/g116/flags missing reverted",
			"g116-app ConfigMap/g116/settings /data/LOG_LEVEL kubectl-edit reverted",
			"g116-paused ConfigMap/g116p/paused-settings /data/FEATURE_X kubectl-edit kept",
			"g116-web Deployment/g116h/web /spec/replicas kubectl-scale kept",
		},
		drifted: true,
		counts:  []string{"g116-app@test=2", "g116-paused@test=1", "g116-web@test=1"},
	},
	{
		name:   "117-drift-in-sync",
		counts: []string{"g117-app@test=0", "g117-web@test=0"},
	},
}

// testDrift runs Drift on each drift scenario against the test apiserver, at
// the repository's default branch (no --ref), and checks every drifted field
// with its manager and outcome, the gauge's counts, and the goldens of the
// three formats.
// It runs inside TestGitOpsScenarios (as its drift subtest), which installs
// the Argo CD and Flux CRDs once: they are deleted when a test ends, and one
// still terminating cannot be installed again by the next test.
func testDrift(t *testing.T) {
	t.Run("ref", testDriftRef)
	for _, tc := range driftCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "fixtures", "gitops-scenarios", tc.name)
			rep := runDrift(t, dir, "")
			if got := driftLines(rep); !slices.Equal(got, tc.lines) {
				t.Errorf("drift lines:\n got %q\nwant %q", got, tc.lines)
			}
			if rep.Drifted != tc.drifted {
				t.Errorf("Drifted = %v, want %v", rep.Drifted, tc.drifted)
			}
			var counts []string
			for _, c := range rep.Counts() {
				counts = append(counts, c.Target+"@"+c.Cluster+"="+strconv.Itoa(c.Objects))
			}
			slices.Sort(counts)
			if !slices.Equal(counts, tc.counts) {
				t.Errorf("counts %q, want %q", counts, tc.counts)
			}
			if compared, not := rep.Compared(); not != 0 || compared == 0 {
				t.Errorf("compared %d, not compared %d: every target must be compared; %+v", compared, not, rep.Targets)
			}
			md := report.DriftMarkdown(rep)
			if tc.drifted == strings.Contains(md, "no drift") {
				t.Errorf("markdown headline says no drift = %v, drifted %v:\n%s", !tc.drifted, tc.drifted, md)
			}
			js, err := report.DriftJSON(rep)
			if err != nil {
				t.Fatal(err)
			}
			txt := report.DriftText(rep, report.TextOptions{})
			base := filepath.Join("testdata", "drift", tc.name)
			golden.Check(t, base+".golden.md", []byte(stable(md)))
			golden.Check(t, base+".golden.json", []byte(stableJSON(stable(string(js)))))
			golden.Check(t, base+".golden.txt", []byte(stable(txt)))
		})
	}
}

// testDriftRef checks --ref against the default branch. The cluster was synced
// from a commit (base) whose settings say LOG_LEVEL debug; the default branch's
// head says info. At base, nothing differs; at the head, the live value is
// argocd-controller's own last apply: git changed since the last sync, which
// git describes (pending), so nothing has drifted either.
func testDriftRef(t *testing.T) {
	dir := filepath.Join("..", "..", "fixtures", "gitops-scenarios", "117-drift-in-sync")
	src := copyTree(t, dir, map[string][2]string{"base/apps/g117-web/settings.yaml": {"LOG_LEVEL: info", "LOG_LEVEL: debug"}})
	rep := runDrift(t, src, "base")
	if got := driftLines(rep); len(got) != 0 || rep.Drifted || rep.Ref != "base" {
		t.Errorf("at base: drift lines %q, Drifted %v, Ref %q; want none, false, base", got, rep.Drifted, rep.Ref)
	}
	rep = runDrift(t, src, "")
	want := []string{"g117-web ConfigMap/g117/web-settings /data/LOG_LEVEL argocd-controller pending"}
	if got := driftLines(rep); !slices.Equal(got, want) {
		t.Errorf("at the default branch: drift lines\n got %q\nwant %q", got, want)
	}
	if rep.Drifted || rep.Ref != "HEAD" {
		t.Errorf("at the default branch: Drifted %v (want false: git describes it), Ref %q (want HEAD)", rep.Drifted, rep.Ref)
	}
}

// runDrift seeds the cluster from dir's live/steps.yaml and runs Drift on a
// repository of dir's base and head (HEAD: head) at ref.
func runDrift(t *testing.T, dir, ref string) *diffing.DriftReport {
	t.Helper()
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	gitopsNamespaces(t, dir)
	for _, s := range gitopsSteps(t, dir) {
		seedGitOps(t, dir, s)
	}
	rep, err := Drift(t.Context(), DriftRequest{Ref: ref, Request: Request{
		RepoDir: repo, Now: scenarioNow, RepoURLs: []string{gitopsRepoURL},
		DefaultCluster: &Cluster{Name: "test", Config: cluster.Config(), LiveMode: "simulate"},
	}})
	if err != nil {
		t.Fatalf("drift: %v", err)
	}
	return rep
}

// driftLines lists a report's drift, one line per field (or object without
// fields), sorted.
func driftLines(rep *diffing.DriftReport) []string {
	var out []string
	for _, t := range rep.Targets {
		for _, o := range t.Objects {
			k := o.Key.Kind + "/" + objectPath(o.Key.Namespace, o.Key.Name)
			if len(o.Fields) == 0 {
				out = append(out, strings.Join([]string{t.Name, k, string(o.State), string(o.Outcome)}, " "))
			}
			for _, f := range o.Fields {
				out = append(out, strings.Join([]string{t.Name, k, f.Path, f.Manager, string(f.Outcome)}, " "))
			}
		}
	}
	slices.Sort(out)
	return out
}

func objectPath(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// jsonTime is a managedFields time in the JSON: the test's wall clock.
var jsonTime = regexp.MustCompile(`"since": "20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

func stableJSON(s string) string { return jsonTime.ReplaceAllString(s, `"since": "<time>"`) }

// TestDefaultBranch: a clone's default branch is origin/HEAD's; a repository
// without origin uses HEAD and the branch it names.
func TestDefaultBranch(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "gitops-scenarios", "117-drift-in-sync")
	repo := gitRepo(t, filepath.Join(src, "base"), filepath.Join(src, "head"))
	r, err := openRepo(t.Context(), repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref, branch := r.defaultBranch(t.Context()); ref != "HEAD" || branch != "main" {
		t.Errorf("no origin: %q %q, want HEAD main", ref, branch)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "-q", repo, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v %s", err, out)
	}
	// A detached HEAD in the clone: the default branch still comes from origin.
	if out, err := exec.Command("git", "-C", clone, "checkout", "-q", "--detach", "base").CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v %s", err, out)
	}
	rc, err := openRepo(t.Context(), clone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref, branch := rc.defaultBranch(t.Context()); ref != "origin/main" || branch != "main" {
		t.Errorf("clone: %q %q, want origin/main main", ref, branch)
	}
}
