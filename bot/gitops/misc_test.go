package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

func TestNormalizeRepoURL(t *testing.T) {
	want := "github.com/acme/deploy"
	for _, u := range []string{
		"https://github.com/acme/deploy",
		"https://github.com/acme/deploy.git",
		"https://github.com/acme/deploy/",
		"https://github.com/Acme/Deploy.git/",
		"http://user:pass@github.com/acme/deploy",
		"ssh://git@github.com/acme/deploy",
		"ssh://git@github.com:22/acme/deploy.git",
		"git@github.com:acme/deploy.git",
		"github.com:acme/deploy",
		"git://github.com/acme/deploy",
		"  https://github.com/acme/deploy  ",
	} {
		if got := NormalizeRepoURL(u); got != want {
			t.Errorf("NormalizeRepoURL(%q) = %q, want %q", u, got, want)
		}
	}
	for _, u := range []string{"https://github.com/acme/deploy-2", "https://gitlab.com/acme/deploy", "https://github.com/acme/deploy/sub"} {
		if got := NormalizeRepoURL(u); got == want {
			t.Errorf("NormalizeRepoURL(%q) = %q, must differ from %q", u, got, want)
		}
	}
}

const thisRepo = "https://github.com/example/repo"

func app(name, body string) string {
	return fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: %s, namespace: argocd}\nspec:\n%s", name, body)
}

func TestDiscoverCases(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	chart := "apiVersion: v2\nname: redis\nversion: 1.0.0\n"
	tests := []struct {
		name  string
		files map[string]string
		opts  Options
		check func(t *testing.T, res *Result)
	}{
		{
			name: "multi-source: chart in this repo, values from a ref source",
			files: map[string]string{
				"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
				"envs/prod/web.yaml":    "replicas: 3\n",
				"apps/web.yaml": app("web", `  sources:
    - repoURL: https://github.com/example/repo.git
      path: charts/web
      helm: {releaseName: web-prod, valueFiles: [$values/envs/prod/web.yaml, values.yaml], skipCrds: true}
    - repoURL: git@github.com:example/repo
      ref: values
  destination: {server: https://kubernetes.default.svc, namespace: web}
`),
			},
			opts: Options{RepoURLs: []string{thisRepo}},
			check: func(t *testing.T, res *Result) {
				got := projectRender(res.Targets)
				want := []renderProj{{Name: "web", Path: "charts/web", Namespace: "web", Cluster: "in-cluster", Renderer: "helm", RenderNamespace: "web",
					Sync: config.Sync{Manager: "argocd-controller"}, ReleaseName: "web-prod", SkipCRDs: true,
					ValuesFiles: []string{"envs/prod/web.yaml", "charts/web/values.yaml"}}}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "multi-source: values from another repository are not rendered",
			files: map[string]string{
				"charts/web/Chart.yaml": "apiVersion: v2\nname: web\nversion: 1.0.0\n",
				"apps/web.yaml": app("web", `  sources:
    - {repoURL: https://github.com/example/repo.git, path: charts/web, helm: {valueFiles: [$values/web.yaml]}}
    - {repoURL: https://github.com/example/values, ref: values}
  destination: {server: https://kubernetes.default.svc, namespace: web}
`),
			},
			opts: Options{RepoURLs: []string{thisRepo}},
			check: func(t *testing.T, res *Result) {
				if len(res.Targets) != 0 || len(res.NotRendered) != 1 {
					t.Fatalf("targets %v, not rendered %v", project(res.Targets), project(res.NotRendered))
				}
				if want := "value file $values/web.yaml comes from a source outside this repo: https://github.com/example/values"; res.NotRendered[0].Skip != want {
					t.Errorf("skip = %q, want %q", res.NotRendered[0].Skip, want)
				}
			},
		},
		{
			name: "vendored Helm repository chart is rendered from charts/, targetRevision and Prune=false noted",
			files: map[string]string{
				"charts/redis/Chart.yaml": chart,
				"apps/redis.yaml": app("redis", `  source: {repoURL: https://charts.bitnami.com/bitnami, chart: redis, targetRevision: 19.0.1}
  destination: {server: https://kubernetes.default.svc, namespace: redis}
  syncPolicy: {automated: {prune: true, selfHeal: true}, syncOptions: [Prune=false, PruneLast=true]}
`),
				"apps/pinned.yaml": app("pinned", `  source: {repoURL: https://github.com/example/repo, path: apps, targetRevision: release-1.2}
  destination: {server: https://kubernetes.default.svc, namespace: x}
  syncPolicy: {automated: {enabled: false, prune: true}}
`),
			},
			opts: Options{RepoURLs: []string{thisRepo}, Branch: "main"},
			check: func(t *testing.T, res *Result) {
				want := []proj{
					{Name: "pinned", Path: "apps", Namespace: "x", Cluster: "in-cluster", Renderer: "plain", Manager: "argocd-controller",
						Notes: []string{
							"no automated sync policy: this target reaches the cluster only when someone syncs the Application",
							"targetRevision release-1.2: Argo CD deploys that revision; driftpreview renders this pull request's base and head",
						},
						Controller: "Application argocd/pinned in apps/pinned.yaml auto=false prune=false selfHeal=false suspended=false replace=false"},
					{Name: "redis", Path: "charts/redis", Namespace: "redis", Cluster: "in-cluster", Renderer: "helm", SelfHeal: true, Manager: "argocd-controller",
						Notes: []string{
							"syncOptions Prune=false: Argo CD never prunes this application's objects",
							"syncOptions PruneLast=true: pruning happens after all other objects are synced and healthy",
							"chart redis 19.0.1 from https://charts.bitnami.com/bitnami is rendered from the vendored copy in charts/redis",
						},
						Controller: "Application argocd/redis in apps/redis.yaml auto=true prune=false selfHeal=true suspended=false replace=false"},
				}
				if diff := cmp.Diff(want, project(res.Targets)); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "config management plugin and suspended HelmRelease",
			files: map[string]string{
				"a/cm.yaml": cm,
				"apps/cmp.yaml": app("cmp", `  source: {repoURL: https://github.com/example/repo, path: a, plugin: {name: tanka}}
  destination: {server: https://kubernetes.default.svc}
`),
				"charts/db/Chart.yaml": "apiVersion: v2\nname: db\nversion: 1.0.0\n",
				"hr.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: db, namespace: db}
spec:
  suspend: true
  chart: {spec: {chart: ./charts/db, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}
`,
			},
			opts: Options{RepoURLs: []string{thisRepo}},
			check: func(t *testing.T, res *Result) {
				want := []proj{{Name: "db", Path: "charts/db", Namespace: "db", Renderer: "helm", Prune: true, Manager: "helm-controller",
					Findings:   []string{"sync-disabled/warning HelmRelease/db/db: HelmRelease db is suspended: this PR will not be applied until it is resumed."},
					Controller: "HelmRelease db/db in hr.yaml auto=false prune=true selfHeal=false suspended=true replace=false"}}
				if diff := cmp.Diff(want, project(res.Targets)); diff != "" {
					t.Errorf("targets (-want +got):\n%s", diff)
				}
				if len(res.NotRendered) != 1 || res.NotRendered[0].Skip != `config management plugin "tanka" is not run by driftpreview` {
					t.Errorf("not rendered %v", project(res.NotRendered))
				}
			},
		},
		{
			name: "no repository URL: sources whose path exists are taken as this repo",
			files: map[string]string{
				"workloads/a/cm.yaml": cm,
				"apps/a.yaml":         app("a", "  source: {repoURL: https://git.internal/x/y, path: workloads/a}\n  destination: {server: https://kubernetes.default.svc}\n"),
				"apps/b.yaml":         app("b", "  source: {repoURL: https://git.internal/x/z, path: elsewhere/b}\n  destination: {server: https://kubernetes.default.svc}\n"),
			},
			check: func(t *testing.T, res *Result) {
				if len(res.Targets) != 1 || res.Targets[0].Name != "a" || len(res.NotRendered) != 1 || res.NotRendered[0].Name != "b" {
					t.Fatalf("targets %v, not rendered %v", project(res.Targets), project(res.NotRendered))
				}
				if !strings.Contains(strings.Join(res.Notes, "\n"), "no repository URL is known") {
					t.Errorf("notes %q lack the no-URL note", res.Notes)
				}
			},
		},
		{
			name: "invalid Application and unparsable GitOps file are reported, not dropped",
			files: map[string]string{
				"apps/bad.yaml":    app("bad", "  source: {repoURL: https://github.com/example/repo, path: [not, a, string]}\n"),
				"apps/broken.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: x\n",
				"ci/other.yaml":    "not: [valid\n",
			},
			opts: Options{RepoURLs: []string{thisRepo}},
			check: func(t *testing.T, res *Result) {
				if len(res.NotRendered) != 1 || !strings.HasPrefix(res.NotRendered[0].Skip, "invalid Application: apps/bad.yaml:1: reading Application bad:") {
					t.Errorf("not rendered %v", project(res.NotRendered))
				}
				if len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "apps/broken.yaml:3: invalid YAML:") {
					t.Errorf("notes = %q, want one about apps/broken.yaml only", res.Notes)
				}
			},
		},
		{
			name: "Flux: plain directory with overrides renders through kustomize; HelmRelease values from a Secret stay hidden",
			files: map[string]string{
				"clusters/prod/sync.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: repo, namespace: flux-system}
spec: {url: "https://github.com/example/repo.git"}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: flux-system}
spec:
  path: ./web
  force: true
  targetNamespace: web
  namePrefix: prod-
  components: [../components/tls]
  patches: [{patch: "- op: remove\n  path: /spec/replicas", target: {kind: Deployment}}]
  commonMetadata: {labels: {team: web}}
  sourceRef: {kind: GitRepository, name: repo}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: db, namespace: data}
spec:
  targetNamespace: db
  chart: {spec: {chart: charts/db, sourceRef: {kind: GitRepository, name: repo, namespace: flux-system}}}
  install: {crds: Skip}
  upgrade: {force: true}
  valuesFrom:
    - {kind: Secret, name: db-creds, valuesKey: values.yaml}
    - {kind: Secret, name: db-creds, valuesKey: password, targetPath: auth.password}
    - {kind: ConfigMap, name: absent}
  values: {auth: {user: app}}
---
apiVersion: v1
kind: Secret
metadata: {name: db-creds, namespace: data}
stringData:
  values.yaml: "auth: {rootPassword: rootpw-secret-1}"
  password: pw-secret-2
`,
				"web/cm.yaml":                       cm,
				"components/tls/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
				"charts/db/Chart.yaml":              "apiVersion: v2\nname: db\nversion: 1.0.0\n",
			},
			opts: Options{RepoURLs: []string{"git@github.com:example/repo"}},
			check: func(t *testing.T, res *Result) {
				var web, db config.Target
				for _, tg := range res.Targets {
					switch tg.Name {
					case "web":
						web = tg
					case "db":
						db = tg
					}
				}
				wantK := render.KustomizeOptions{NamePrefix: "prod-", Namespace: "web", Components: []string{"components/tls"},
					Patches:      []string{"patch: |-\n  - op: remove\n    path: /spec/replicas\ntarget:\n  kind: Deployment\n"},
					CommonLabels: map[string]string{"team": "web"},
					Helm:         render.KustomizeHelm{RefusedBy: "Flux's kustomize-controller"}}
				if diff := cmp.Diff(wantK, web.Render.Kustomize); diff != "" {
					t.Errorf("web kustomize options (-want +got):\n%s", diff)
				}
				if web.Render.Renderer != render.RendererKustomize || !web.Sync.Replace || web.Cluster != "prod" || web.Namespace != "web" {
					t.Errorf("web = renderer %s, sync %+v, cluster %q, namespace %q", web.Render.Renderer, web.Sync, web.Cluster, web.Namespace)
				}
				wantValues := `{"auth":{"password":"(hidden Secret db-creds/password)","rootPassword":"(hidden Secret db-creds/values.yaml)","user":"app"}}`
				got, _ := json.Marshal(db.Render.Helm.Values)
				if string(got) != wantValues || db.Render.Helm.ReleaseName != "db-db" || db.Render.Helm.SkipCRDs || db.Sync.Replace || db.Sync.HelmCRDs.Install != "Skip" || db.Namespace != "db" {
					t.Errorf("db = values %s, release %q, skipCRDs %t, sync %+v, namespace %q", got, db.Render.Helm.ReleaseName, db.Render.Helm.SkipCRDs, db.Sync, db.Namespace)
				}
				// install.crds Skip with the upgrade's default policy still
				// renders the crds/ CRDs (diffing judges them); upgrade.force
				// replaces nothing under server-side apply.
				wantNotes := []string{
					"spec.upgrade.force does not recreate objects: helm-controller ignores it under server-side apply, its default (internal/action/upgrade.go). A change to an immutable field still fails the upgrade.",
					"valuesFrom Secret db-creds: its values are passed to the chart as hidden placeholders",
					"valuesFrom Secret db-creds: its value is passed to the chart at auth.password as a hidden placeholder",
					"valuesFrom ConfigMap absent is not in the repository: its values are not used (helm-controller reads it from the cluster, and fails the release when a reference that is not optional is missing)",
				}
				if diff := cmp.Diff(wantNotes, db.Notes); diff != "" {
					t.Errorf("db notes (-want +got):\n%s", diff)
				}
				all, _ := json.Marshal(res)
				for _, secret := range []string{"rootpw-secret-1", "pw-secret-2"} {
					if strings.Contains(string(all), secret) {
						t.Errorf("result leaks Secret value %s", secret)
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeFiles(t, tc.files)
			res, err := Discover(t.Context(), root, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, res)
		})
	}
}

// TestAppOfAppsDepth builds a chain of Applications each only visible by rendering
// the previous one, and checks the fixed point stops at MaxDepth with a note.
func TestAppOfAppsDepth(t *testing.T) {
	files := map[string]string{
		"apps/root.yaml": app("level0", "  source: {repoURL: https://github.com/example/repo, path: level1}\n  destination: {server: https://kubernetes.default.svc}\n"),
	}
	// Each levelN holds a Helm chart that renders Application levelN, whose path is
	// levelN+1; charts are invisible to the file walk.
	for i := 1; i <= 4; i++ {
		files[fmt.Sprintf("level%d/Chart.yaml", i)] = fmt.Sprintf("apiVersion: v2\nname: level%d\nversion: 1.0.0\n", i)
		files[fmt.Sprintf("level%d/templates/app.yaml", i)] = app(fmt.Sprintf("level%d", i),
			fmt.Sprintf("  source: {repoURL: https://github.com/example/repo, path: level%d}\n  destination: {server: https://kubernetes.default.svc}\n", i+1))
	}
	files["level5/cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	root := writeFiles(t, files)
	for _, tc := range []struct {
		depth     int
		wantNames []string
		wantNote  string
	}{
		{depth: 5, wantNames: []string{"level0", "level1", "level2", "level3", "level4"}},
		{depth: 2, wantNames: []string{"level0", "level1", "level2"}, wantNote: "stopped looking for nested GitOps objects after 2 levels of rendering; targets level2 were not searched"},
	} {
		t.Run(fmt.Sprint(tc.depth), func(t *testing.T) {
			res, err := Discover(t.Context(), root, Options{RepoURLs: []string{thisRepo}, Renderer: realRenderer, MaxDepth: tc.depth})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tg := range res.Targets {
				names = append(names, tg.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("targets (-want +got):\n%s", diff)
			}
			var wantNotes []string
			if tc.wantNote != "" {
				wantNotes = []string{tc.wantNote}
			}
			if diff := cmp.Diff(wantNotes, res.Notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderFailureIsANoteAndCancelIsAnError(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"apps/a.yaml": app("a", "  source: {repoURL: https://github.com/example/repo, path: a}\n  destination: {server: https://kubernetes.default.svc}\n"),
		"a/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	failing := func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		return render.ObjectSet{}, &render.Error{File: "a/cm.yaml", Line: 3, Err: errors.New("boom")}
	}
	res, err := Discover(t.Context(), root, Options{RepoURLs: []string{thisRepo}, Renderer: failing})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"target a (cluster in-cluster) could not be rendered to look for nested GitOps objects: a/cm.yaml:3: boom"}
	if diff := cmp.Diff(want, res.Notes); diff != "" || len(res.Targets) != 1 {
		t.Errorf("notes (-want +got):\n%s\ntargets %v", diff, project(res.Targets))
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Discover(ctx, root, Options{RepoURLs: []string{thisRepo}, Renderer: realRenderer}); !errors.Is(err, context.Canceled) {
		t.Errorf("Discover with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestTargetNamesAreUnique(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"a/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		"apps/one.yaml": app("web", "  source: {repoURL: https://github.com/example/repo, path: a}\n  destination: {server: https://kubernetes.default.svc}\n") +
			"\n---\n" + strings.Replace(app("web", "  source: {repoURL: https://github.com/example/repo, path: a}\n  destination: {server: https://prod.example.com}\n"), "namespace: argocd", "namespace: team-a", 1) +
			"\n---\n" + strings.Replace(app("web", "  source: {repoURL: https://github.com/example/repo, path: a}\n  destination: {server: https://kubernetes.default.svc}\n"), "namespace: argocd", "namespace: team-b", 1),
	})
	res, err := Discover(t.Context(), root, Options{RepoURLs: []string{thisRepo}, ClusterNames: map[string]string{"https://prod.example.com": "prod"}})
	if err != nil {
		t.Fatal(err)
	}
	// Unique per cluster: the two Applications named web that deploy in-cluster
	// need two names; the one on prod keeps its own.
	var names []string
	for _, tg := range res.Targets {
		names = append(names, tg.Name+"@"+tg.Cluster)
	}
	if diff := cmp.Diff([]string{"web@in-cluster", "web@prod", "web-team-b@in-cluster"}, names); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
