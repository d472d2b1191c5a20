package gitops

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const appchartOrigin = "https://github.com/example/gitops-appchart"

// An app-of-apps Helm chart whose root Application is not in the repository
// (issue 9, defect 5): the chart is rendered on its own, each Application it makes is
// a target, and the chart itself is previewed as their root.
func TestDiscoverAppChartWithoutRoot(t *testing.T) {
	res, _ := discoverFixture(t, "argocd-appchart", appchartOrigin)
	var got []string
	for _, tg := range res.Targets {
		ctrl := "dir"
		if tg.Controller != nil {
			ctrl = tg.Controller.Kind + " " + tg.Controller.Name + " in " + tg.Controller.Source
		}
		got = append(got, tg.Name+" "+tg.Path+" "+string(tg.Render.Renderer)+" "+ctrl)
	}
	want := []string{
		"apps apps helm dir",
		"demo.chart-app chart-app helm Application demo.chart-app in apps/templates/applications.yaml",
		"demo.chart-deps chart-deps helm Application demo.chart-deps in apps/templates/applications.yaml",
		"demo.jsonnet-app jsonnet-app plain Application demo.jsonnet-app in apps/templates/applications.yaml",
		"demo.jsonnet-tla jsonnet-tla plain Application demo.jsonnet-tla in apps/templates/applications.yaml",
		"demo.web web kustomize Application demo.web in apps/templates/applications.yaml",
		"demo.web-hooks web-hooks kustomize Application demo.web-hooks in apps/templates/applications.yaml",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
	if len(res.NotRendered) != 0 {
		t.Errorf("not rendered: %v", res.NotRendered)
	}
	root := res.Targets[0]
	if !root.Sync.Prune || len(root.Notes) != 1 || !strings.Contains(root.Notes[0], "previewed as the root of an app-of-apps") {
		t.Errorf("root target %+v", root)
	}
	web := res.Targets[5]
	if web.Render.Kustomize.NamePrefix != "web-" || !web.Render.ArgoCDHooks {
		t.Errorf("demo.web render options %+v", web.Render)
	}
	// A note about a chart dependency that cannot be fetched would only repeat
	// what the target says.
	if slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "not vendored") }) {
		t.Errorf("notes repeat a target's not-rendered reason: %q", res.Notes)
	}
}

// A chart that no object deploys and that makes no controller objects is not a
// target, and a chart that an Application deploys is not rendered twice as a root.
func TestDiscoverAppChartOnlyWhenNeeded(t *testing.T) {
	chart := "apiVersion: v2\nname: c\nversion: 0.1.0\n"
	root := writeFiles(t, map[string]string{
		// mentions argoproj.io in a comment, renders none
		"plain/Chart.yaml":        chart,
		"plain/templates/cm.yaml": "# see argoproj.io\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		// deployed by an Application in the repository
		"deployed/Chart.yaml": chart,
		"deployed/templates/app.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: child\n" +
			"spec:\n  destination: {namespace: child}\n  source: {repoURL: " + appchartOrigin + ", path: child}\n",
		"child/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
		"bootstrap/root.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: root\n" +
			"spec:\n  destination: {namespace: argocd}\n  source: {repoURL: " + appchartOrigin + ", path: deployed}\n",
	})
	opts := DefaultOptions()
	opts.RepoURLs = []string{appchartOrigin}
	opts.Renderer = realRenderer
	res, err := Discover(t.Context(), root, opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range res.Targets {
		got = append(got, tg.Name+" "+tg.Path)
	}
	if diff := cmp.Diff([]string{"child child", "root deployed"}, got); diff != "" {
		t.Errorf("targets (-want +got):\n%s", diff)
	}
}
