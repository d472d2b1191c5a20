package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/render"
)

const budgetRepoURL = "https://github.com/example/budget.git"

// appSetTree writes an Argo CD repository whose ApplicationSet generates n
// Applications, apps/a0 … apps/a<n-1>, each a directory with one ConfigMap
// whose data is value.
func appSetTree(t *testing.T, n int, value string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(p, c string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var els strings.Builder
	for i := range n {
		fmt.Fprintf(&els, "      - {i: '%d'}\n", i)
		write(fmt.Sprintf("apps/a%d/cm.yaml", i), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns%d}\ndata: {v: %q}\n", i, value))
	}
	write("argocd/set.yaml", `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: apps, namespace: argocd}
spec:
  generators:
  - list:
      elements:
`+els.String()+`  template:
    metadata: {name: 'app-{{i}}'}
    spec:
      project: default
      source: {repoURL: `+budgetRepoURL+`, path: 'apps/a{{i}}', targetRevision: HEAD}
      destination: {server: https://kubernetes.default.svc, namespace: 'ns{{i}}'}
`)
	return dir
}

// TestRunPreviewBudget: once the preview's render budget is spent, the renders
// that follow are not run: their targets are listed as not rendered with
// "budget exceeded", and the preview ends.
func TestRunPreviewBudget(t *testing.T) {
	repo := gitfixture.BaseHead(t, appSetTree(t, 6, "a"), appSetTree(t, 6, "b"))
	for _, b := range []Budget{{RenderCPU: time.Nanosecond}, {RenderWall: time.Nanosecond}} {
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}, AllTargets: true, Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		over := 0
		for _, tr := range rep.Targets {
			if strings.Contains(tr.Skipped, "budget exceeded: ") {
				over++
				if len(tr.Findings) == 0 || tr.Findings[0].Rule != diffing.RuleNotRendered || !strings.Contains(tr.Findings[0].Message, "budget exceeded") {
					t.Errorf("target %s: findings %+v, want a not-rendered finding saying budget exceeded", tr.Name, tr.Findings)
				}
			}
		}
		if over == 0 {
			t.Errorf("budget %+v: no target says budget exceeded: %+v", b, rep.Targets)
		}
	}
	// The default budget renders them all.
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}, AllTargets: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range rep.Targets {
		if tr.Skipped != "" || tr.Error != "" {
			t.Errorf("target %s: skipped %q, error %q", tr.Name, tr.Skipped, tr.Error)
		}
	}
	if len(rep.Targets) != 6 {
		t.Errorf("%d targets, want 6", len(rep.Targets))
	}
}

// TestRenderCacheBudget: a render after the budget is spent is an Unavailable
// naming the budget, without a render process.
func TestRenderCacheBudget(t *testing.T) {
	dir := appSetTree(t, 2, "a")
	c := newRenderCache()
	c.content = nil
	c.spent = newSpending(Budget{RenderWall: time.Nanosecond})
	if _, err := c.render(t.Context(), dir, "apps/a0", render.Options{}); err != nil {
		t.Fatalf("first render: %v", err)
	}
	_, err := c.render(t.Context(), dir, "apps/a1", render.Options{})
	reason, ok := render.IsUnavailable(err)
	if !ok || !strings.Contains(reason, "budget exceeded: the preview's renders took") || !strings.Contains(reason, "the limit per preview is 1ns") {
		t.Fatalf("second render: %v, want budget exceeded", err)
	}
}

// TestRunPreviewMaxTargets: past Request.MaxTargets the targets are left out,
// and a not-rendered finding says how many.
func TestRunPreviewMaxTargets(t *testing.T) {
	repo := gitfixture.BaseHead(t, appSetTree(t, 10, "a"), appSetTree(t, 10, "b"))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}, AllTargets: true, MaxTargets: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 3 {
		t.Errorf("%d targets, want 3", len(rep.Targets))
	}
	found := false
	for _, f := range rep.Findings {
		if f.Rule == diffing.RuleNotRendered && strings.Contains(f.Message, "7 targets are not previewed: a preview renders at most 3 targets") {
			found = true
		}
	}
	if !found {
		t.Errorf("no finding says 7 targets were left out: %+v", rep.Findings)
	}
}

// jsonnetSpin evaluates for minutes, producing nothing (the hostile sweep's
// CPU spin).
const jsonnetSpin = `local n = std.length([1 for i in std.range(1, 30000) for j in std.range(1, 30000) if i == -j]);
{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'spin' }, data: { n: std.toString(n) } }
`

// TestRunPreviewRenderBudgetCutsSpins: four Applications whose jsonnet spins
// share the preview's render CPU budget (render.Options.Budget): each render's
// timeout is cut to what is left, so the spins end with "budget exceeded"
// (a render error for the one that was cut, not rendered for those after it)
// instead of each running to its 60 s limit, one after another.
func TestRunPreviewRenderBudgetCutsSpins(t *testing.T) {
	tree := func(value string) string {
		dir := appSetTree(t, 4, value)
		for i := range 4 {
			app := filepath.Join(dir, "apps", fmt.Sprintf("a%d", i))
			if err := os.Remove(filepath.Join(app, "cm.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(app, "main.jsonnet"), []byte("// "+value+"\n"+jsonnetSpin), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	repo := gitfixture.BaseHead(t, tree("a"), tree("b"))
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}, AllTargets: true,
		Budget: Budget{RenderCPU: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	apps := 0
	// Without the cut, the first spin runs to its own 60 s CPU limit and the
	// budget's message says so ("used 1m0.4s of CPU time"); with it, a render
	// is stopped at what is left (a render error "render budget exceeded",
	// in a target or in discovery's render of it) and the budget's count stays
	// near its 2 s (two renders run at once, each cut to what was left when
	// it started).
	var used time.Duration
	usedRE := regexp.MustCompile(`used ([0-9.]+(?:ms|s|m[0-9.]+s)) of CPU time`)
	for _, tr := range rep.Targets {
		for _, m := range usedRE.FindAllStringSubmatch(tr.Error+" "+tr.Skipped, -1) {
			if d, err := time.ParseDuration(m[1]); err == nil && d > used {
				used = d
			}
		}
		if !strings.HasPrefix(tr.Name, "app-") {
			continue
		}
		apps++
		if !strings.Contains(tr.Error+tr.Skipped, "budget exceeded") {
			t.Errorf("target %s: error %q, skipped %q; want budget exceeded", tr.Name, tr.Error, tr.Skipped)
		}
	}
	if apps != 4 {
		t.Errorf("%d Applications, want 4: %+v", apps, rep.Targets)
	}
	if used > 30*time.Second {
		t.Errorf("the renders used %s of the 2 s budget: a spin ran to its own limit instead of being cut", used)
	}
}
