package render_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
)

// webChart is a small chart: a ConfigMap showing its values, the release and
// its namespace, a CRD under crds/, a pre-install hook and a test hook.
func webChart(dir string) map[string]string {
	return map[string]string{
		dir + "/Chart.yaml":  "apiVersion: v2\nname: web\nversion: 1.0.0\n",
		dir + "/values.yaml": "replicas: 1\nimage:\n  repo: nginx\n  tag: \"1.0\"\nlist: [a, b]\n",
		dir + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-web\n  namespace: {{ .Release.Namespace }}\n" +
			"data:\n  replicas: {{ .Values.replicas | quote }}\n  image: {{ .Values.image.repo }}:{{ .Values.image.tag }}\n  list: {{ .Values.list | join \",\" | quote }}\n  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n" +
			"  extra: {{ .Capabilities.APIVersions.Has \"example.com/v9\" | quote }}\n",
		dir + "/templates/sa.yaml":   "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {{ .Release.Name }}-sa\n",
		dir + "/templates/hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-migrate\n  annotations:\n    helm.sh/hook: pre-install\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: busybox}]\n",
		dir + "/templates/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}-test\n  annotations:\n    helm.sh/hook: test\nspec:\n  containers: [{name: t, image: busybox}]\n",
		dir + "/crds/crd.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]\n",
	}
}

func withFiles(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

func objectsByKey(set render.ObjectSet) map[string]render.Object {
	m := map[string]render.Object{}
	for _, o := range set.Objects {
		m[o.Key.Kind+"/"+o.Key.Namespace+"/"+o.Key.Name] = o
	}
	return m
}

// TestKustomizeHelmChartsLocal inflates a chart vendored in the default chart
// home as `kustomize build --enable-helm` does: the release is
// "release-name", .Release.Namespace the kustomization's namespace, which
// the kustomization's namespace transformer does not set on the chart's
// objects (a ServiceAccount the chart leaves without one stays without);
// CRDs only with includeCRDs; hooks kept, test hooks only without
// skipTests; and the chart's objects go through the kustomization's other
// transformers (namePrefix) like any other.
func TestKustomizeHelmChartsLocal(t *testing.T) {
	chart := webChart("app/charts/web")
	for _, tc := range []struct {
		name  string
		extra string
		want  []string
		not   []string
	}{
		{"defaults", "", []string{"ConfigMap/apps/p-release-name-web", "ServiceAccount//p-release-name-sa", "Job//p-release-name-migrate", "Pod//p-release-name-test", "Secret/apps/p-local"}, []string{"CustomResourceDefinition//widgets.example.com"}},
		{"crds and no tests", "    includeCRDs: true\n    skipTests: true\n", []string{"CustomResourceDefinition//widgets.example.com", "Job//p-release-name-migrate"}, []string{"Pod//p-release-name-test"}},
		{"no hooks", "    skipHooks: true\n", []string{"ConfigMap/apps/p-release-name-web"}, []string{"Job//p-release-name-migrate", "Pod//p-release-name-test"}},
		{"release name and namespace", "    releaseName: web\n    namespace: other\n", []string{"ConfigMap/other/p-web-web"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := checkout(t, withFiles(chart, map[string]string{
				"app/secret.yaml":        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: local\n",
				"app/kustomization.yaml": kustHeader + "namespace: apps\nnamePrefix: p-\nresources: [secret.yaml]\nhelmCharts:\n  - name: web\n" + tc.extra,
			}))
			set, err := render.Render(t.Context(), root, "app", render.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			got := objectsByKey(set)
			for _, w := range tc.want {
				if _, ok := got[w]; !ok {
					t.Errorf("missing %s in %v", w, keysOf(got))
				}
			}
			for _, n := range tc.not {
				if _, ok := got[n]; ok {
					t.Errorf("unexpected %s", n)
				}
			}
			for k, o := range got {
				if strings.HasPrefix(k, "Secret/") {
					continue
				}
				if o.Source != "app/kustomization.yaml" {
					t.Errorf("%s: source %q, want the kustomization", k, o.Source)
				}
				if _, ok := o.Obj.GetAnnotations()["internal.config.kubernetes.io/helm-generated"]; ok {
					t.Errorf("%s keeps kustomize's build annotation", k)
				}
			}
		})
	}
}

func keysOf(m map[string]render.Object) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestKustomizeHelmChartsValues checks values as kustomize merges them:
// valuesInline over valuesFile (override, the default), under it (merge), or
// alone (replace); additionalValuesFiles over all as helm's -f; the chart's
// values.yaml under everything; the kube version and API versions.
func TestKustomizeHelmChartsValues(t *testing.T) {
	files := withFiles(webChart("app/charts/web"), map[string]string{
		"app/prod.yaml":  "replicas: 3\nimage:\n  tag: \"2.0\"\n",
		"app/extra.yaml": "image:\n  repo: caddy\n",
	})
	for _, tc := range []struct {
		name, chart string
		want        map[string]string
	}{
		{"chart values", "", map[string]string{"replicas": "1", "image": "nginx:1.0", "list": "a,b", "kube": "v1.37.0", "extra": "false"}},
		{"values file", "    valuesFile: prod.yaml\n", map[string]string{"replicas": "3", "image": "nginx:2.0"}},
		{"inline overrides the file", "    valuesFile: prod.yaml\n    valuesInline:\n      replicas: 5\n      list: [c]\n", map[string]string{"replicas": "5", "image": "nginx:2.0", "list": "c"}},
		{"merge keeps the file's", "    valuesFile: prod.yaml\n    valuesMerge: merge\n    valuesInline:\n      replicas: 5\n      image: {repo: httpd}\n", map[string]string{"replicas": "3", "image": "httpd:2.0"}},
		{"replace drops the file", "    valuesFile: prod.yaml\n    valuesMerge: replace\n    valuesInline:\n      replicas: 7\n", map[string]string{"replicas": "7", "image": "nginx:1.0"}},
		{"additional files last", "    valuesFile: prod.yaml\n    additionalValuesFiles: [extra.yaml]\n    valuesInline:\n      image: {repo: httpd}\n", map[string]string{"replicas": "3", "image": "caddy:2.0"}},
		{"capabilities", "    kubeVersion: v1.31.2\n    apiVersions: [example.com/v9]\n", map[string]string{"kube": "v1.31.2", "extra": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := checkout(t, withFiles(files, map[string]string{
				"app/kustomization.yaml": kustHeader + "helmCharts:\n  - name: web\n    releaseName: r\n" + tc.chart,
			}))
			set, err := render.Render(t.Context(), root, "app", render.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			cm, ok := objectsByKey(set)["ConfigMap/default/r-web"]
			if !ok {
				t.Fatalf("no ConfigMap in %v", keysOf(objectsByKey(set)))
			}
			data := cm.Obj.Object["data"].(map[string]any)
			for k, v := range tc.want {
				if data[k] != v {
					t.Errorf("%s = %v, want %s", k, data[k], v)
				}
			}
		})
	}
}

// TestKustomizeHelmChartsNamespace follows kustomize's namespace for a chart
// without one: its kustomization's, else the one the including overlay
// passes down (api internal/target kusttarget.go helmRootNamespace), and the
// wrapper's (Argo CD's kustomize.namespace) stands for the target's own.
func TestKustomizeHelmChartsNamespace(t *testing.T) {
	root := checkout(t, withFiles(webChart("base/charts/web"), map[string]string{
		"base/kustomization.yaml":    kustHeader + "helmCharts:\n  - name: web\n    releaseName: r\n",
		"overlay/kustomization.yaml": kustHeader + "namespace: prod\nresources: [../base]\n",
	}))
	set, err := render.Render(t.Context(), root, "overlay", render.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objectsByKey(set)["ConfigMap/prod/r-web"]; !ok {
		t.Errorf("want the overlay's namespace as .Release.Namespace: %v", keysOf(objectsByKey(set)))
	}
	opts := render.DefaultOptions()
	opts.Kustomize.Namespace = "argo"
	set, err = render.Render(t.Context(), root, "base", opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objectsByKey(set)["ConfigMap/argo/r-web"]; !ok {
		t.Errorf("want the override namespace: %v", keysOf(objectsByKey(set)))
	}
}

// TestKustomizeHelmChartsRefused: where the deploying controller builds
// without --enable-helm (Flux's kustomize-controller), the kustomization is
// an error at the helmCharts line saying so; bad entries are errors at the
// entry.
func TestKustomizeHelmChartsRefused(t *testing.T) {
	root := checkout(t, withFiles(webChart("app/charts/web"), map[string]string{
		"app/kustomization.yaml":     kustHeader + "helmCharts:\n  - name: web\n",
		"bad/kustomization.yaml":     kustHeader + "helmCharts:\n  - name: web\n    valuesFile: ../app/charts/web/values.yaml\n",
		"nochart/kustomization.yaml": kustHeader + "helmCharts:\n  - name: gone\n",
	}))
	opts := render.DefaultOptions()
	opts.Kustomize.Helm.RefusedBy = "Flux's kustomize-controller"
	_, err := render.Render(t.Context(), root, "app", opts)
	re, ok := err.(*render.Error)
	if !ok || re.File != "app/kustomization.yaml" || re.Line != 3 || !strings.Contains(re.Error(), "Flux's kustomize-controller builds kustomizations without Helm") || !strings.Contains(re.Error(), "must specify --enable-helm") {
		t.Errorf("refused: %v", err)
	}
	if _, un := render.IsUnavailable(err); un {
		t.Errorf("a refusal by the controller is an error of the PR, not a limit of the preview: %v", err)
	}
	for dir, want := range map[string]string{"bad": "is not in or below bad", "nochart": "no repo specified for pull, no chart found at nochart/charts/gone"} {
		_, err := render.Render(t.Context(), root, dir, render.DefaultOptions())
		if re, ok := err.(*render.Error); !ok || re.Line != 4 && re.Line != 3 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", dir, err, want)
		}
	}
}

// TestKustomizeHelmChartsOCI pulls the chart from an OCI registry as helm
// pull oci://repo/name --version does, through the remote policy, in the
// calling process; without a fetcher the target is not rendered, naming the
// chart.
func TestKustomizeHelmChartsOCI(t *testing.T) {
	reg := ocitest.Start(t)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "web", v, map[string]string{
			"values.yaml":       "replicas: 1\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: " + v + "\n  replicas: {{ .Values.replicas | quote }}\n",
		}))
	}
	root := checkout(t, map[string]string{
		"app/kustomization.yaml": kustHeader + "helmCharts:\n  - name: web\n    repo: " + reg.URL("charts") + "\n    version: 1.1.0\n    releaseName: web\n    valuesInline:\n      replicas: 4\n",
	})
	opts := render.DefaultOptions()
	_, err := render.Render(t.Context(), root, "app", opts)
	if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, "app/kustomization.yaml:4") || !strings.Contains(reason, "chart web 1.1.0") {
		t.Errorf("without a fetcher: %v", err)
	}
	opts.Remote = fetcher(t, "oci://"+reg.Host()+"/charts")
	set, err := render.Render(t.Context(), root, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := objectsByKey(set)["ConfigMap//web"]
	if !ok {
		t.Fatalf("objects %v", keysOf(objectsByKey(set)))
	}
	if d := cm.Obj.Object["data"].(map[string]any); d["version"] != "1.1.0" || d["replicas"] != "4" {
		t.Errorf("data %v", d)
	}
	if len(set.Charts) != 1 || set.Charts[0].Version != "1.1.0" || set.Charts[0].Name != "web" {
		t.Errorf("charts %+v", set.Charts)
	}
}
