package deploy_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/serverconfig"
	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

const chart = "deploy/chart/driftpreview"

// writeVerbs are the RBAC verbs that change cluster state or grant more rights.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"}

func renderChart(t *testing.T, values map[string]any) render.ObjectSet {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererHelm
	opts.Namespace = "driftpreview"
	opts.Helm.ReleaseName = "driftpreview"
	opts.Helm.Values = values
	set, err := render.Render(context.Background(), root, chart, opts)
	if err != nil {
		t.Fatalf("rendering %s: %v", chart, err)
	}
	return set
}

func byKind(set render.ObjectSet, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range set.Objects {
		if o.Key.Kind == kind {
			out = append(out, o.Obj)
		}
	}
	return out
}

// grants lists "role: verb" for every write verb any Role or ClusterRole grants.
func grants(t *testing.T, set render.ObjectSet) []string {
	t.Helper()
	var out []string
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, r := range byKind(set, kind) {
			rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
			for _, rule := range rules {
				verbs, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), "verbs")
				for _, v := range verbs {
					if slices.Contains(writeVerbs, v) {
						out = append(out, r.GetName()+": "+v)
					}
				}
			}
		}
	}
	return out
}

func TestChartRBAC(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{name: "default is read-only", values: nil, want: nil},
		{name: "dryRun adds patch and only patch", values: map[string]any{"dryRun": map[string]any{"enabled": true}},
			want: []string{"driftpreview-dry-run: patch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := renderChart(t, tt.values)
			if diff := cmp.Diff(tt.want, grants(t, set)); diff != "" {
				t.Errorf("write verbs (-want +got):\n%s", diff)
			}
			// The read role must stay exactly what simulate needs.
			var read *unstructured.Unstructured
			for _, r := range byKind(set, "ClusterRole") {
				if r.GetName() == "driftpreview-read" {
					read = r
				}
			}
			if read == nil {
				t.Fatal("no driftpreview-read ClusterRole")
			}
			want := []any{
				map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"get", "list", "watch"}},
				map[string]any{"nonResourceURLs": []any{"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*"}, "verbs": []any{"get"}},
			}
			if diff := cmp.Diff(want, read.Object["rules"]); diff != "" {
				t.Errorf("read ClusterRole rules (-want +got):\n%s", diff)
			}
			for _, b := range byKind(set, "ClusterRoleBinding") {
				subj, _, _ := unstructured.NestedSlice(b.Object, "subjects")
				if len(subj) != 1 || subj[0].(map[string]any)["name"] != "driftpreview" || subj[0].(map[string]any)["namespace"] != "driftpreview" {
					t.Errorf("%s binds %v, want only the driftpreview service account", b.GetName(), subj)
				}
			}
		})
	}
}

func TestChartPodSecurity(t *testing.T) {
	secrets := map[string]any{
		"github": map[string]any{"enabled": true, "appID": 31337, "existingSecret": "dp-github"},
		"gitlab": map[string]any{"enabled": true, "existingSecret": "dp-gitlab"},
	}
	for name, values := range map[string]map[string]any{
		"default":      nil,
		"both hosts":   secrets,
		"postgres x2":  {"replicaCount": 2, "queue": map[string]any{"driver": "postgres", "postgres": map[string]any{"existingSecret": "dp-pg"}}},
		"with ingress": {"ingress": map[string]any{"enabled": true}},
	} {
		t.Run(name, func(t *testing.T) {
			set := renderChart(t, values)
			if s := byKind(set, "Secret"); len(s) != 0 {
				t.Errorf("chart renders %d Secrets; secrets must come from existingSecret", len(s))
			}
			deps := byKind(set, "Deployment")
			if len(deps) != 1 {
				t.Fatalf("got %d Deployments, want 1", len(deps))
			}
			pod, _, _ := unstructured.NestedMap(deps[0].Object, "spec", "template", "spec")
			check := func(what string, want any, fields ...string) {
				t.Helper()
				got, _, _ := unstructured.NestedFieldNoCopy(pod, fields...)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (%s) (-want +got):\n%s", what, strings.Join(fields, "."), diff)
				}
			}
			check("pod runs as non-root", true, "securityContext", "runAsNonRoot")
			check("pod seccomp", "RuntimeDefault", "securityContext", "seccompProfile", "type")
			containers := pod["containers"].([]any)
			if len(containers) != 1 {
				t.Fatalf("got %d containers, want 1", len(containers))
			}
			c := containers[0].(map[string]any)
			pod = c // check() now reads the container
			check("read-only root filesystem", true, "securityContext", "readOnlyRootFilesystem")
			check("no privilege escalation", false, "securityContext", "allowPrivilegeEscalation")
			check("capabilities dropped", []any{"ALL"}, "securityContext", "capabilities", "drop")
			check("container seccomp", "RuntimeDefault", "securityContext", "seccompProfile", "type")
			check("liveness probe", "/healthz", "livenessProbe", "httpGet", "path")
			check("readiness probe", "/readyz", "readinessProbe", "httpGet", "path")
			check("memory limit", "1Gi", "resources", "limits", "memory")
			check("cpu request", "100m", "resources", "requests", "cpu")
			mounts := map[string]string{}
			ms, _, _ := unstructured.NestedSlice(c, "volumeMounts")
			for _, m := range ms {
				mm := m.(map[string]any)
				mounts[mm["mountPath"].(string)] = mm["name"].(string)
			}
			if mounts["/tmp"] != "tmp" {
				t.Errorf("/tmp is not the tmp emptyDir: mounts %v", mounts)
			}
		})
	}
}

// TestChartServerConfig checks that server.yaml in the ConfigMap uses only keys the
// server knows, so a typo in the chart cannot ship.
func TestChartServerConfig(t *testing.T) {
	set := renderChart(t, map[string]any{
		"github":  map[string]any{"enabled": true, "appID": 31337, "existingSecret": "dp-github"},
		"gitlab":  map[string]any{"enabled": true, "existingSecret": "dp-gitlab"},
		"repos":   []any{"acme/gitops"},
		"queue":   map[string]any{"driver": "postgres", "postgres": map[string]any{"existingSecret": "dp-pg"}},
		"reports": map[string]any{"url": "https://driftpreview.example.com"},
	})
	cms := byKind(set, "ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("got %d ConfigMaps, want 1", len(cms))
	}
	text, _, _ := unstructured.NestedString(cms[0].Object, "data", "server.yaml")
	cfg := parseServerYAML(t, text)
	want := serverconfig.Raw{
		Listen: ":8080", WorkDir: "/var/lib/driftpreview/mirrors", LogLevel: "info", Repos: []string{"acme/gitops"},
		Metrics: serverconfig.RawMetrics{Listen: "0.0.0.0:9090"},
		GitHub: serverconfig.RawGitHub{AppID: 31337, PrivateKeyFile: "/etc/driftpreview/github/private-key.pem",
			WebhookSecretFile: "/etc/driftpreview/github/webhook-secret"},
		GitLab: serverconfig.RawGitLab{URL: "https://gitlab.com", TokenFile: "/etc/driftpreview/gitlab/token",
			WebhookSecretFile: "/etc/driftpreview/gitlab/webhook-secret"},
		Clusters:       map[string]serverconfig.Cluster{"in-cluster": {LiveMode: "simulate"}},
		DefaultCluster: "in-cluster",
		Queue:          serverconfig.RawQueue{Driver: "postgres", Workers: 2, JobTimeout: cfg.Queue.JobTimeout, DSNFile: "/etc/driftpreview/queue/dsn"},
		Reports:        serverconfig.RawReports{URL: "https://driftpreview.example.com", MaxBytes: 20971520, Retention: 720 * time.Hour},
	}
	if diff := cmp.Diff(want, *cfg, cmp.Comparer(func(a, b serverconfig.Secret) bool { return true }), cmpopts.IgnoreUnexported(serverconfig.Raw{})); diff != "" {
		t.Errorf("server.yaml (-want +got):\n%s", diff)
	}
	if cfg.Queue.JobTimeout.String() != "10m0s" {
		t.Errorf("jobTimeout = %s, want 10m", cfg.Queue.JobTimeout)
	}
}

// TestChartMetrics checks that metrics get a port and a ClusterIP Service of their
// own (never the webhook Service or the ingress), that a bearer token Secret is
// mounted and named in server.yaml, and that the ServiceMonitor scrapes that port
// with the token.
func TestChartMetrics(t *testing.T) {
	set := renderChart(t, map[string]any{
		"ingress": map[string]any{"enabled": true},
		"metrics": map[string]any{"existingSecret": "dp-metrics", "serviceMonitor": map[string]any{"enabled": true}},
	})
	text, _, _ := unstructured.NestedString(byKind(set, "ConfigMap")[0].Object, "data", "server.yaml")
	cfg := parseServerYAML(t, text)
	if want := (serverconfig.RawMetrics{Listen: "0.0.0.0:9090", BearerTokenFile: "/etc/driftpreview/metrics/token"}); cfg.Metrics != want {
		t.Errorf("server.yaml metrics = %+v, want %+v", cfg.Metrics, want)
	}
	services := map[string][]string{}
	for _, svc := range byKind(set, "Service") {
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		for _, p := range ports {
			services[svc.GetName()] = append(services[svc.GetName()], p.(map[string]any)["name"].(string))
		}
	}
	if diff := cmp.Diff(map[string][]string{"driftpreview": {"http"}, "driftpreview-metrics": {"metrics"}}, services); diff != "" {
		t.Errorf("Service ports (-want +got):\n%s", diff)
	}
	ing := byKind(set, "Ingress")
	if len(ing) != 1 || strings.Contains(mustYAML(t, ing[0].Object), "metrics") {
		t.Errorf("the ingress must route to the webhook Service only")
	}
	sms := byKind(set, "ServiceMonitor")
	if len(sms) != 1 {
		t.Fatalf("got %d ServiceMonitors, want 1", len(sms))
	}
	eps, _, _ := unstructured.NestedSlice(sms[0].Object, "spec", "endpoints")
	sel, _, _ := unstructured.NestedStringMap(sms[0].Object, "spec", "selector", "matchLabels")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != "metrics" || sel["app.kubernetes.io/component"] != "metrics" {
		t.Errorf("ServiceMonitor does not scrape the metrics Service's metrics port: %v %v", sel, eps)
	}
	cred, _, _ := unstructured.NestedStringMap(eps[0].(map[string]any), "authorization", "credentials")
	if cred["name"] != "dp-metrics" || cred["key"] != "token" {
		t.Errorf("ServiceMonitor credentials = %v, want the dp-metrics Secret's token", cred)
	}
	dep := mustYAML(t, byKind(set, "Deployment")[0].Object)
	for _, want := range []string{"containerPort: 9090", "mountPath: /etc/driftpreview/metrics", "secretName: dp-metrics"} {
		if !strings.Contains(dep, want) {
			t.Errorf("Deployment lacks %q", want)
		}
	}

	off := renderChart(t, map[string]any{"metrics": map[string]any{"enabled": false}})
	text, _, _ = unstructured.NestedString(byKind(off, "ConfigMap")[0].Object, "data", "server.yaml")
	if !strings.Contains(text, `listen: "off"`) || len(byKind(off, "Service")) != 1 {
		t.Errorf("metrics.enabled=false must turn the listener off and drop the metrics Service:\n%s", text)
	}
}

func mustYAML(t *testing.T, obj map[string]any) string {
	t.Helper()
	b, err := sigsyaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestChartRefusesUnsafeValues(t *testing.T) {
	root, _ := filepath.Abs("..")
	for name, tt := range map[string]struct {
		values map[string]any
		want   string
	}{
		"sqlite with two replicas": {map[string]any{"replicaCount": 2}, "supports replicaCount 1 only"},
		"github without a secret":  {map[string]any{"github": map[string]any{"enabled": true}}, "github.enabled needs github.existingSecret"},
		// Render errors hide every string that is a value of the chart's values or of
		// the values passed in (render's secret scrubbing), so the driver names read
		// (hidden) here; the refusal itself is what is checked.
		"postgres without a secret": {map[string]any{"queue": map[string]any{"driver": "postgres"}}, ".existingSecret (a Secret holding the DSN)"},
		"unknown queue driver":      {map[string]any{"queue": map[string]any{"driver": "redis"}}, `queue.driver "(hidden)" is not`},
	} {
		t.Run(name, func(t *testing.T) {
			opts := render.DefaultOptions()
			opts.Renderer = render.RendererHelm
			opts.Helm.ReleaseName = "driftpreview"
			opts.Helm.Values = tt.values
			_, err := render.Render(context.Background(), root, chart, opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render error = %v, want the chart to refuse these values with %q", err, tt.want)
			}
		})
	}
}

// TestChartGolden pins the default rendering so reviewers see every change to what
// gets installed; rewrite with -update.
func TestChartGolden(t *testing.T) {
	set := renderChart(t, map[string]any{"dryRun": map[string]any{"enabled": true}, "ingress": map[string]any{"enabled": true}})
	var buf bytes.Buffer
	for _, o := range set.Objects {
		b, err := sigsyaml.Marshal(o.Obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n# " + o.Key.String() + " from " + o.Source + "\n")
		buf.Write(b)
	}
	golden.Check(t, filepath.Join("testdata", "chart.golden.yaml"), buf.Bytes())
}

// parseServerYAML reads a rendered server.yaml with the server's own strict parser
// (serverconfig.ParseRaw: unknown keys are errors), so a key the chart writes that
// the server does not know fails the test.
func parseServerYAML(t *testing.T, text string) *serverconfig.Raw {
	t.Helper()
	file := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := serverconfig.ParseRaw(file, nil)
	if err != nil {
		t.Fatalf("server.yaml does not match the server config schema: %v\n%s", err, text)
	}
	return cfg
}
