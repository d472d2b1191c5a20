package gitops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

// staticClusters is a ClusterLister over fixed cluster Secrets, as the server
// config's argocd.clusters gives them.
func staticClusters(cs ...ArgoCluster) ClusterLister {
	return func(_ context.Context, ns string) ([]ArgoCluster, error) {
		if ns != "argocd" {
			return nil, fmt.Errorf("no clusters in namespace %s", ns)
		}
		return cs, nil
	}
}

// appLine projects a generated Application on what the generator rules decide:
// name, destination, source path, finalizers, labels and the helm values files.
func appLine(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	spec, _ := obj["spec"].(map[string]any)
	dst, _ := spec["destination"].(map[string]any)
	src, _ := spec["source"].(map[string]any)
	line := fmt.Sprintf("%v -> %v/%v from %v", md["name"], firstNonNil(dst["server"], dst["name"]), dst["namespace"], src["path"])
	if fs, ok := md["finalizers"].([]any); ok && len(fs) > 0 {
		line += fmt.Sprintf(" finalizers=%v", fs)
	}
	if l, ok := md["labels"].(map[string]any); ok && len(l) > 0 {
		line += fmt.Sprintf(" labels=%v", l)
	}
	if h, ok := src["helm"].(map[string]any); ok {
		line += fmt.Sprintf(" helm=%v", h["valueFiles"])
	}
	if p, ok := spec["project"]; ok && p != "default" {
		line += fmt.Sprintf(" project=%v", p)
	}
	return line
}

func firstNonNil(v ...any) any {
	for _, x := range v {
		if x != nil {
			return x
		}
	}
	return nil
}

// expandOne discovers the repository files and returns the Applications of the
// ApplicationSet named name (in name order), the not-rendered reasons and notes.
func expandOne(t *testing.T, files map[string]string, lister ClusterLister, name string) (apps []string, skips []string, info SetInfo) {
	t.Helper()
	root := writeFiles(t, files)
	res, err := Discover(t.Context(), root, Options{RepoURLs: []string{appSetRepo}, Clusters: lister})
	if err != nil {
		t.Fatal(err)
	}
	info, ok := res.Sets["argocd/"+name]
	if !ok {
		t.Fatalf("no ApplicationSet %s found; sets %v", name, res.Sets)
	}
	for _, n := range slicesSorted(info.Apps) {
		apps = append(apps, appLine(info.Apps[n]))
	}
	for _, nr := range res.NotRendered {
		skips = append(skips, nr.Skip)
	}
	return apps, skips, info
}

func slicesSorted(m map[string]map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// The expectations below follow Argo CD's documentation of each generator
// (operator-manual/applicationset/Generators-*.md) and its generator source.
func TestGenerators(t *testing.T) {
	// Cluster Secrets as the Cluster generator documentation shows them: a
	// staging and a production cluster labelled by environment.
	fleet := []ArgoCluster{
		{Name: "staging", Server: "https://1.2.3.4", Labels: map[string]string{"env": "staging", "argocd.argoproj.io/secret-type": "cluster"}, Secret: "c1"},
		{Name: "production", Server: "https://5.6.7.8", Project: "prod", Labels: map[string]string{"env": "production", "argocd.argoproj.io/secret-type": "cluster"},
			Annotations: map[string]string{"team": "ops"}, Secret: "c2"},
	}
	configJSON := `{"aws_account": "123456", "asset_id": "11223344", "cluster": {"owner": "cluster-admin@company.com", "name": "engineering-dev", "address": "https://1.2.3.4"}}`
	tests := []struct {
		name      string
		files     map[string]string
		lister    ClusterLister
		want      []string
		wantSkips []string
		check     func(t *testing.T, info SetInfo)
	}{
		{
			// Generators-Git.md, files: every key of config.json flattened
			// (cluster.name), and path, path.basename, path[n], path.filename.
			name: "git files flattened with path params",
			files: map[string]string{
				"cluster-config/engineering/dev/config.json":  configJSON,
				"cluster-config/engineering/prod/config.json": strings.ReplaceAll(strings.ReplaceAll(configJSON, "engineering-dev", "engineering-prod"), "1.2.3.4", "5.6.7.8"),
				"cluster-config/engineering/old/config.json":  configJSON,
				"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: argocd}
spec:
  generators:
    - git:
        repoURL: ` + appSetRepo + `
        revision: HEAD
        files:
          - path: "cluster-config/**/config.json"
          - path: "cluster-config/*/old/config.json"
            exclude: true
  template:
    metadata:
      name: '{{cluster.name}}-guestbook'
      labels: {file: '{{path.filename}}', norm: '{{path.filenameNormalized}}', top: '{{path[0]}}', leaf: '{{path.basename}}'}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: '{{path}}'}
      destination: {server: '{{cluster.address}}', namespace: guestbook}
`},
			want: []string{
				"engineering-dev-guestbook -> https://1.2.3.4/guestbook from cluster-config/engineering/dev finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[file:config.json leaf:dev norm:config.json top:cluster-config]",
				"engineering-prod-guestbook -> https://5.6.7.8/guestbook from cluster-config/engineering/prod finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[file:config.json leaf:prod norm:config.json top:cluster-config]",
			},
		},
		{
			// A YAML file holding a list gives one parameter set per element; Go
			// templates see the nested keys and path.segments; values are
			// rendered with the parameters.
			name: "git files list with goTemplate, values and pathParamPrefix",
			files: map[string]string{
				"envs/team_A/apps.yaml": "- {app: web, replicas: 2}\n- {app: api, replicas: 1000000}\n",
				"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: teams, namespace: argocd}
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - git:
        repoURL: ` + appSetRepo + `
        revision: HEAD
        pathParamPrefix: src
        files: [{path: "envs/*/apps.yaml"}]
        values: {ns: '{{ .src.path.basenameNormalized }}-{{ .app }}'}
  template:
    metadata: {name: '{{ .app }}-{{ index .src.path.segments 1 | lower }}', labels: {replicas: '{{ .replicas }}'}}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: '{{ .src.path.path }}'}
      destination: {name: in-cluster, namespace: '{{ .values.ns }}'}
`},
			want: []string{
				"api-team_a -> in-cluster/team-a-api from envs/team_A finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[replicas:1e+06]",
				"web-team_a -> in-cluster/team-a-web from envs/team_A finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[replicas:2]",
			},
		},
		{
			// Generators-Cluster.md: every cluster Secret plus the local cluster;
			// name, nameNormalized, server, project and metadata.labels.
			name:   "clusters with the in-cluster one",
			lister: staticClusters(fleet...),
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: argocd}
spec:
  generators:
    - clusters:
        values: {revision: main, ns: 'gb-{{name}}'}
  template:
    metadata: {name: '{{nameNormalized}}-guestbook', labels: {env: '{{metadata.labels.env}}', project: 'p-{{project}}'}}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: guestbook, targetRevision: '{{values.revision}}'}
      destination: {server: '{{server}}', namespace: '{{values.ns}}'}
`},
			want: []string{
				"in-cluster-guestbook -> https://kubernetes.default.svc/gb-in-cluster from guestbook finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[env:{{metadata.labels.env}} project:p-]",
				"production-guestbook -> https://5.6.7.8/gb-production from guestbook finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[env:production project:p-prod]",
				"staging-guestbook -> https://1.2.3.4/gb-staging from guestbook finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[env:staging project:p-]",
			},
		},
		{
			// A non-empty selector leaves the local cluster out (it has no
			// Secret, hence no labels); Go templates see metadata.labels.
			name:   "clusters with a label selector and goTemplate",
			lister: staticClusters(fleet...),
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: argocd}
spec:
  goTemplate: true
  generators:
    - clusters:
        selector:
          matchExpressions: [{key: env, operator: In, values: [staging, production]}]
        values: {team: '{{ default "none" (index .metadata "annotations" | default dict).team }}'}
  template:
    metadata: {name: '{{ .name }}-guestbook', labels: {env: '{{ .metadata.labels.env }}', team: '{{ .values.team }}'}}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: guestbook}
      destination: {server: '{{ .server }}', namespace: guestbook}
`},
			want: []string{
				"production-guestbook -> https://5.6.7.8/guestbook from guestbook finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[env:production team:ops]",
				"staging-guestbook -> https://1.2.3.4/guestbook from guestbook finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[env:staging team:none]",
			},
		},
		{
			// Without access to the cluster Secrets the clusters generator is
			// listed, never guessed.
			name: "clusters without access",
			lister: func(context.Context, string) ([]ArgoCluster, error) {
				return nil, errors.New(`secrets is forbidden: User "preview" cannot list resource "secrets"`)
			},
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: guestbook, namespace: argocd}
spec:
  generators: [{clusters: {}}]
  template:
    metadata: {name: '{{name}}-guestbook'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: guestbook}, destination: {server: '{{server}}'}}
`},
			wantSkips: []string{`the clusters generator reads Argo CD's cluster Secrets in namespace argocd, which could not be read: secrets is forbidden: User "preview" cannot list resource "secrets"`},
			check: func(t *testing.T, info SetInfo) {
				if info.Complete {
					t.Error("a set with an unexpanded generator must not be complete: its live Applications may still be generated")
				}
			},
		},
		{
			// Generators-Matrix.md: git directories × a list, the second child
			// interpolated with the first's parameters.
			name: "matrix of git directories and a list",
			files: map[string]string{
				"apps/web/cm.yaml":   "{}",
				"apps/api/cm.yaml":   "{}",
				"apps/tools/cm.yaml": "{}",
				"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: apps, namespace: argocd}
spec:
  generators:
    - matrix:
        generators:
          - git:
              repoURL: ` + appSetRepo + `
              revision: HEAD
              directories: [{path: "apps/*"}, {path: apps/tools, exclude: true}]
          - list:
              elements:
                - {env: dev, ns: '{{path.basename}}-dev'}
                - {env: prod, ns: '{{path.basename}}-prod'}
  template:
    metadata: {name: '{{path.basename}}-{{env}}'}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: '{{path}}', helm: {valueFiles: ['values-{{env}}.yaml']}}
      destination: {server: https://kubernetes.default.svc, namespace: '{{ns}}'}
`},
			want: []string{
				"api-dev -> https://kubernetes.default.svc/api-dev from apps/api finalizers=[resources-finalizer.argocd.argoproj.io] helm=[values-dev.yaml]",
				"api-prod -> https://kubernetes.default.svc/api-prod from apps/api finalizers=[resources-finalizer.argocd.argoproj.io] helm=[values-prod.yaml]",
				"web-dev -> https://kubernetes.default.svc/web-dev from apps/web finalizers=[resources-finalizer.argocd.argoproj.io] helm=[values-dev.yaml]",
				"web-prod -> https://kubernetes.default.svc/web-prod from apps/web finalizers=[resources-finalizer.argocd.argoproj.io] helm=[values-prod.yaml]",
			},
		},
		{
			// Without Go templates, a key both children give with different
			// values fails the whole set (CombineStringMaps).
			name: "matrix with conflicting keys fails",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: clash, namespace: argocd}
spec:
  generators:
    - matrix:
        generators:
          - list: {elements: [{env: dev}]}
          - list: {elements: [{env: prod}]}
  template:
    metadata: {name: '{{env}}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc}}
`},
			wantSkips: []string{"generator matrix: failed to combine string maps with merging params for the matrix generator: found duplicate key env with different value, a: dev ,b: prod (Argo CD applies nothing of an ApplicationSet whose generation fails)"},
		},
		{
			// Generators-Merge.md: clusters as the base, a list overriding the
			// one whose server matches; the unmatched list element is dropped.
			name:   "merge of clusters and a list by server",
			lister: staticClusters(fleet...),
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: cluster-git, namespace: argocd}
spec:
  generators:
    - merge:
        mergeKeys: [server]
        generators:
          - clusters: {values: {kafka: 'true', redis: 'false'}}
          - clusters:
              selector: {matchLabels: {env: staging}}
              values: {kafka: 'false'}
          - list:
              elements:
                - {server: https://5.6.7.8, values.redis: 'true'}
                - {server: https://9.9.9.9, values.redis: 'true'}
  template:
    metadata: {name: '{{name}}', labels: {kafka: '{{values.kafka}}', redis: '{{values.redis}}'}}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: app}, destination: {server: '{{server}}', namespace: default}}
`},
			want: []string{
				"in-cluster -> https://kubernetes.default.svc/default from app finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[kafka:true redis:false]",
				"production -> https://5.6.7.8/default from app finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[kafka:true redis:true]",
				"staging -> https://1.2.3.4/default from app finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[kafka:false redis:false]",
			},
		},
		{
			name: "merge with a duplicate merge key fails",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: dup, namespace: argocd}
spec:
  generators:
    - merge:
        mergeKeys: [env]
        generators:
          - list: {elements: [{env: dev}, {env: dev}]}
          - list: {elements: [{env: dev}]}
  template:
    metadata: {name: '{{env}}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc}}
`},
			wantSkips: []string{`generator merge: the parameters from a generator were not unique by the given mergeKeys, Merge requires all param sets to be unique. Duplicate key was {"env":"dev"} (Argo CD applies nothing of an ApplicationSet whose generation fails)`},
		},
		{
			// A matrix inside a merge is allowed; a third level is not.
			name: "nesting deeper than two levels fails",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: deep, namespace: argocd}
spec:
  generators:
    - matrix:
        generators:
          - list: {elements: [{a: "1"}]}
          - matrix:
              generators:
                - list: {elements: [{b: "2"}]}
                - matrix: {generators: [{list: {elements: [{c: "3"}]}}, {list: {elements: [{d: "4"}]}}]}
  template:
    metadata: {name: 'x{{a}}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc}}
`},
			wantSkips: []string{"generator matrix: failed to get params for second generator in the matrix generator: failed to get params for second generator in the matrix generator: a matrix generator nested more than two levels deep: Argo CD reads only terminal generators (list, clusters, git, …) at the third level, so this child generates no parameters (Argo CD applies nothing of an ApplicationSet whose generation fails)"},
		},
		{
			// A selector on a generator filters its flattened parameters;
			// templatePatch is a strategic merge patch rendered per set;
			// preserveResourcesOnDeletion leaves the finalizer out.
			name: "selector, templatePatch and preserveResourcesOnDeletion",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: patched, namespace: argocd}
spec:
  goTemplate: true
  syncPolicy: {preserveResourcesOnDeletion: true, applicationsSync: create-update}
  generators:
    - list:
        elements:
          - {name: a, auto: true, tier: {level: "1"}}
          - {name: b, auto: false, tier: {level: "2"}}
          - {name: c, auto: true, tier: {level: "3"}}
      selector:
        matchExpressions: [{key: tier.level, operator: NotIn, values: ["3"]}]
  template:
    metadata: {name: '{{.name}}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc, namespace: '{{.name}}'}}
  templatePatch: |
    metadata:
      labels: {tier: "{{ .tier.level }}"}
    spec:
      project: hacked
    {{- if .auto }}
      syncPolicy:
        automated: {prune: true}
    {{- end }}
`},
			want: []string{
				"a -> https://kubernetes.default.svc/a from x labels=map[tier:1]",
				"b -> https://kubernetes.default.svc/b from x labels=map[tier:2]",
			},
			check: func(t *testing.T, info SetInfo) {
				a := info.Apps["a"]["spec"].(map[string]any)
				if _, ok := a["syncPolicy"]; !ok {
					t.Errorf("templatePatch did not add syncPolicy to a: %v", a)
				}
				if _, ok := info.Apps["b"]["spec"].(map[string]any)["syncPolicy"]; ok {
					t.Error("templatePatch added syncPolicy to b")
				}
				if info.AllowsDelete() || !info.AllowsUpdate() {
					t.Errorf("applicationsSync create-update: delete %t update %t", info.AllowsDelete(), info.AllowsUpdate())
				}
			},
		},
		{
			// Sprig functions and Argo CD's own (normalize, slugify, toYaml).
			name: "goTemplate with Sprig and Argo CD functions",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: funcs, namespace: argocd}
spec:
  goTemplate: true
  generators:
    - list: {elements: [{name: "My_App.Service", owners: [a, b]}]}
  template:
    metadata:
      name: '{{ .name | normalize }}'
      labels: {slug: '{{ slugify 10 true .name }}', sha: '{{ .name | sha256sum | trunc 8 }}', owners: '{{ .owners | join "-" }}', up: '{{ upper "x" }}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc}}
`},
			want: []string{"my-app.service -> https://kubernetes.default.svc/<nil> from x finalizers=[resources-finalizer.argocd.argoproj.io] labels=map[owners:a-b sha:03395851 slug:my-app up:X]"},
		},
		{
			// The generators that need a host's API or a plugin are listed; the
			// list next to them still expands.
			name: "pullRequest, scmProvider, plugin and clusterDecisionResource are listed",
			files: map[string]string{"appset.yaml": `
apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: mixed, namespace: argocd}
spec:
  generators:
    - pullRequest: {github: {owner: example, repo: shop}}
    - scmProvider: {github: {organization: example}}
    - plugin: {configMapRef: {name: plugin}}
    - clusterDecisionResource: {configMapRef: {name: ocm}}
    - list: {elements: [{env: dev}]}
  template:
    metadata: {name: 'x-{{env}}'}
    spec: {project: default, source: {repoURL: ` + appSetRepo + `, path: x}, destination: {server: https://kubernetes.default.svc}}
`},
			want: []string{"x-dev -> https://kubernetes.default.svc/<nil> from x finalizers=[resources-finalizer.argocd.argoproj.io]"},
			wantSkips: []string{
				"generator pullRequest needs the host's API: Argo CD lists pull requests or repositories through the Git host's API, which driftpreview does not call",
				"generator scmProvider needs the host's API: Argo CD lists pull requests or repositories through the Git host's API, which driftpreview does not call",
				"generator plugin asks a plugin service over HTTP for its parameters, which driftpreview does not call",
				"generator clusterDecisionResource reads a duck-typed placement resource through Argo CD's cluster, which driftpreview does not read",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := ""
			for _, l := range strings.Split(tc.files["appset.yaml"], "\n") {
				if strings.HasPrefix(l, "metadata: {name: ") {
					name = strings.TrimSuffix(strings.Fields(l)[2], ",")
				}
			}
			apps, skips, info := expandOne(t, tc.files, tc.lister, name)
			if diff := cmp.Diff(tc.want, apps); diff != "" {
				t.Errorf("generated Applications (-want +got):\n%s", diff)
			}
			slices.Sort(skips)
			want := slices.Clone(tc.wantSkips)
			slices.Sort(want)
			if diff := cmp.Diff(want, skips); diff != "" {
				t.Errorf("not rendered (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, info)
			}
		})
	}
}

func TestPathspecMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, file string
		want          bool
	}{
		{"cluster-config/**/config.json", "cluster-config/engineering/dev/config.json", true},
		{"cluster-config/*/config.json", "cluster-config/engineering/dev/config.json", true}, // * crosses / in git pathspecs
		{"cluster-config/*.json", "cluster-config/a.yaml", false},
		{"clusters", "clusters/a/values.yaml", true},
		{"clusters/a/values.yaml", "clusters/a/values.yaml", true},
		{"./clusters/?/values.yaml", "clusters/a/values.yaml", true},
		{"clusters/[!b]/values.yaml", "clusters/b/values.yaml", false},
	} {
		if got := pathspecMatch(c.pattern, c.file); got != c.want {
			t.Errorf("pathspecMatch(%q, %q) = %t, want %t", c.pattern, c.file, got, c.want)
		}
	}
}

func TestFastReplace(t *testing.T) {
	p := map[string]any{"a": "1", "b.c": "2", "n": 3}
	for in, want := range map[string]string{
		"{{a}}-{{ b.c }}":   "1-2",
		"{{missing}}-{{a}}": "{{missing}}-1",
		"{{n}}":             "{{n}}", // only string parameters are substituted
		"plain":             "plain",
	} {
		got, err := render.FastReplace(in, p)
		if err != nil || got != want {
			t.Errorf("fastReplace(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := render.FastReplace("{{a}} {{b", p); err == nil {
		t.Error("an unclosed tag must be an error")
	}
}
