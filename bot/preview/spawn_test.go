package preview

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/render"
)

// TestRenderProcessesOnDemand: a preview starts render processes only when it
// renders (issue 25: each costs about 20 ms of CPU to start). A PR whose
// renders are all cached starts none; one with a render to run starts them,
// and they render it (the change is in the report).
func TestRenderProcessesOnDemand(t *testing.T) {
	// Values no other test renders: the process-wide content cache is cold.
	// Applications, not an ApplicationSet: its templates run in a render
	// process at every preview.
	unique := filepath.Base(t.TempDir())
	tree := func(value string) string {
		dir := t.TempDir()
		files := map[string]string{}
		for i := range 2 {
			files[fmt.Sprintf("apps/a%d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns%d}\ndata: {v: %q}\n", i, unique+"-a")
			files[fmt.Sprintf("argocd/app%d.yaml", i)] = fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: app-%d, namespace: argocd}
spec:
  project: default
  source: {repoURL: %s, path: apps/a%d, targetRevision: HEAD}
  destination: {server: https://kubernetes.default.svc, namespace: ns%d}
`, i, budgetRepoURL, i, i)
		}
		files["apps/a0/cm.yaml"] = strings.Replace(files["apps/a0/cm.yaml"], unique+"-a", unique+"-"+value, 1)
		writeTree(t, dir, files)
		return dir
	}
	base, head := tree("a"), tree("b")
	repo := gitfixture.BaseHead(t, base, head)
	run := func() (*diffing.Report, int64) {
		t.Helper()
		before := render.ProcessesStarted()
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}})
		if err != nil {
			t.Fatal(err)
		}
		return rep, render.ProcessesStarted() - before
	}
	changed := func(rep *diffing.Report) string {
		for _, tr := range rep.Targets {
			for _, c := range tr.Changes {
				if c.Action != "" && c.Action != "unchanged" {
					return fmt.Sprintf("%s %s %s", tr.Name, c.Action, c.Key.Name)
				}
			}
		}
		return ""
	}
	// Render processes of earlier tests may be idle in the pool: ended, so
	// that this run must start its own.
	render.Shutdown()
	rep, started := run()
	if started == 0 {
		t.Errorf("the first preview started no render process")
	}
	if got := changed(rep); got != "app-0 modified c" {
		t.Errorf("first preview: changed %q, want app-0 modified c (the render processes rendered it)", got)
	}
	render.Shutdown()
	rep, started = run()
	if started != 0 {
		t.Errorf("a preview whose renders are all cached started %d render processes, want none", started)
	}
	if got := changed(rep); got != "app-0 modified c" {
		t.Errorf("cached preview: changed %q, want app-0 modified c", got)
	}
}
