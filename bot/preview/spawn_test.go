package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/render"
)

// TestRenderProcessesOnDemand: a preview starts render processes when it may
// render (issue 25: each costs about 20 ms of CPU to start, and a first
// kustomize render 70 ms more). One with a render to run starts them, and
// they render it (the change is in the report); a PR whose renders are all
// cached sends them nothing and starts only the one started ahead of a
// change to a manifest (render.Prestart), warmed up; a PR that changes only
// documentation starts one that is not warmed up (render.PrestartCold).
func TestRenderProcessesOnDemand(t *testing.T) {
	// Values no other test renders: the process-wide content cache is cold.
	// Applications, not an ApplicationSet: its templates run in a render
	// process at every preview.
	unique := fmt.Sprintf("%s-%d", filepath.Base(t.TempDir()), time.Now().UnixNano())
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
	var warmUps int64
	run := func(repo string) (rep *diffing.Report, started, sent int64) {
		t.Helper()
		before, sentBefore, warmBefore := render.ProcessesStarted(), render.RequestsSent(), render.WarmUpsSent()
		defer func() { warmUps = render.WarmUpsSent() - warmBefore }()
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{budgetRepoURL}})
		if err != nil {
			t.Fatal(err)
		}
		// Shutdown waits for a process warming up (Prestart), so the count
		// is the run's.
		render.Shutdown()
		return rep, render.ProcessesStarted() - before, render.RequestsSent() - sentBefore
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
	rep, started, sent := run(repo)
	if started == 0 || sent == 0 {
		t.Errorf("the first preview started %d render processes and sent them %d renders, want some", started, sent)
	}
	if got := changed(rep); got != "app-0 modified c" {
		t.Errorf("first preview: changed %q, want app-0 modified c (the render processes rendered it)", got)
	}
	// Cached: nothing is rendered. One process is started ahead
	// (render.Prestart), as the pull request changes a manifest.
	rep, started, sent = run(repo)
	if sent != 0 || started != 1 || warmUps != 1 {
		t.Errorf("a preview whose renders are all cached sent %d renders to %d new render processes (%d warm-ups), want none to the one started ahead and warmed up", sent, started, warmUps)
	}
	if got := changed(rep); got != "app-0 modified c" {
		t.Errorf("cached preview: changed %q, want app-0 modified c", got)
	}

	// A pull request that changes only documentation starts one ahead
	// (render.PrestartCold: its discovery may render), which nothing warms
	// up and nothing uses here.
	docs := func(text string) string {
		dir := base
		out := t.TempDir()
		if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		writeTree(t, out, map[string]string{"README.md": text})
		return out
	}
	rep, started, sent = run(gitfixture.BaseHead(t, docs("# a\n"), docs("# b\n")))
	if started != 1 || sent != 0 || warmUps != 0 {
		t.Errorf("a README-only preview started %d render processes, sent %d renders and %d warm-ups, want one started and nothing sent", started, sent, warmUps)
	}
	if got := changed(rep); got != "" {
		t.Errorf("README-only preview: changed %q, want nothing", got)
	}
}
