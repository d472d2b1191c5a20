package preview

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
)

// Pull requests on an Argo CD repository whose Applications come only out of an
// app-of-apps Helm chart (fixtures/repos/argocd-appchart, issue 9 defects 5–7 and
// unvendored chart dependencies), previewed with no config and no cluster.
func TestAppChartPullRequests(t *testing.T) {
	const url = "https://github.com/example/gitops-appchart"
	type change struct{ target, key, action string }
	for _, tc := range []struct {
		name    string
		edit    map[string][2]string
		changed []change
		// mustNot are finding rules that no target may have.
		mustNot []diffing.Rule
		finding string // "target rule key" that must be present
		failing bool
		check   func(t *testing.T, rep *diffing.Report)
	}{
		{
			// web/ is an app of its own and the base of web-hooks: both show it.
			name: "kustomize app that is also a base",
			edit: map[string][2]string{"web/deployment.yaml": {"replicas: 1", "replicas: 2"}},
			changed: []change{
				{"demo.web", "Deployment/web/web-frontend", "modified"},
				{"demo.web-hooks", "Deployment/web-hooks/hooks-frontend", "modified"},
			},
			mustNot: []diffing.Rule{diffing.RulePrune, diffing.RuleRename},
		},
		{
			// The chart's helm test Pod gets a new random name on every render: it is
			// a hook, never part of the comparison.
			name:    "chart with a test hook",
			edit:    map[string][2]string{"chart-app/values.yaml": {"image: nginx:1.27", "image: nginx:1.28"}},
			changed: []change{{"demo.chart-app", "Deployment/chart-app/chart-app", "modified"}},
			mustNot: []diffing.Rule{diffing.RulePrune, diffing.RuleRename, diffing.RuleRenderError},
			check: func(t *testing.T, rep *diffing.Report) {
				tr := targetNamed(t, rep, "demo.chart-app")
				if !slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.HasPrefix(n, "1 Helm hook object (Pod) left out") }) {
					t.Errorf("no hook note in %q", tr.Notes)
				}
			},
		},
		{
			// Argo CD builds the dependency itself; the preview lists the app as not
			// rendered with the exact reason and does not fail.
			name:    "chart with an unvendored dependency",
			edit:    map[string][2]string{"chart-deps/values.yaml": {`tag: "5.3"`, `tag: "5.4"`}},
			mustNot: []diffing.Rule{diffing.RuleRenderError},
			check: func(t *testing.T, rep *diffing.Report) {
				tr := targetNamed(t, rep, "demo.chart-deps")
				want := "chart-deps/Chart.yaml:5: chart dependency blog (version 9.0.3 from https://charts.example.com/stable) is not vendored in chart-deps/charts/"
				if !strings.HasPrefix(tr.Skipped, want) {
					t.Errorf("skipped %q, want it to start with %q", tr.Skipped, want)
				}
				if !slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool {
					return f.Rule == diffing.RuleNotRendered && f.Key.Kind == "Application" && f.Key.Name == "demo.chart-deps"
				}) {
					t.Errorf("no not-rendered finding on Application demo.chart-deps: %v", tr.Findings)
				}
			},
		},
		{
			// A .libsonnet change reaches the Deployment the jsonnet renders.
			name:    "jsonnet library change",
			edit:    map[string][2]string{"jsonnet-app/params.libsonnet": {"replicas: 1", "replicas: 3"}},
			changed: []change{{"demo.jsonnet-app", "Deployment/jsonnet-app/api", "modified"}},
			mustNot: []diffing.Rule{diffing.RuleRenderError},
		},
		{
			// The app-of-apps gives a child a value file: its Application changes,
			// and so does the Service the child deploys.
			name: "child app value files",
			edit: map[string][2]string{"apps/values.yaml": {"        releaseName: chart-app\n",
				"        releaseName: chart-app\n        valueFiles:\n          - values-production.yaml\n"}},
			changed: []change{
				{"apps", "Application/argocd/demo.chart-app", "modified"},
				{"demo.chart-app", "Service/chart-app/chart-app", "modified"},
			},
			mustNot: []diffing.Rule{diffing.RuleRenderError},
		},
		{
			// Removing an app from the chart deletes its Application, whose resources
			// finalizer deletes everything it deployed.
			name:    "app removed from the app-of-apps",
			edit:    map[string][2]string{"apps/values.yaml": {"  - name: chart-deps\n", ""}},
			finding: "apps prune-cascade Application/argocd/demo.chart-deps",
			failing: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := filepath.Join("..", "..", "fixtures", "repos", "argocd-appchart")
			repo := gitRepo(t, src, copyTree(t, src, tc.edit))
			rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{url}})
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			var names []string
			for _, tr := range rep.Targets {
				names = append(names, tr.Name)
				for _, f := range tr.Findings {
					if slices.Contains(tc.mustNot, f.Rule) {
						t.Errorf("target %s: unexpected %s", tr.Name, findingLine(f))
					}
				}
			}
			want := []string{"apps", "demo.chart-app", "demo.chart-deps", "demo.jsonnet-app", "demo.jsonnet-tla", "demo.web", "demo.web-hooks"}
			if tc.finding == "" && !slices.Equal(names, want) {
				t.Errorf("targets %v, want %v", names, want)
			}
			for _, c := range tc.changed {
				tr := targetNamed(t, rep, c.target)
				if !slices.ContainsFunc(tr.Changes, func(ch diffing.Change) bool {
					return ch.Key.String() == c.key && string(ch.Action) == c.action
				}) {
					var got []string
					for _, ch := range tr.Changes {
						got = append(got, ch.Key.String()+" "+string(ch.Action))
					}
					t.Errorf("target %s: no %s %s; changes %v", c.target, c.key, c.action, got)
				}
			}
			if tc.finding != "" && !slices.ContainsFunc(rep.Targets, func(tr diffing.TargetReport) bool {
				return slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool { return strings.HasPrefix(tr.Name+" "+findingLine(f), tc.finding) })
			}) {
				t.Errorf("no finding %q", tc.finding)
			}
			if rep.Failing != tc.failing {
				t.Errorf("failing = %v, want %v", rep.Failing, tc.failing)
			}
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}
