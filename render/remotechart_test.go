package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

func chartVersion(v, extra string) remotetest.Chart {
	return remotetest.Chart{Name: "podinfo", Version: v, Files: map[string]string{
		"values.yaml":       "replicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: " + v + "\n  replicas: {{ .Values.replicas | quote }}\n" + extra,
		"ci/prod.yaml":      "replicas: 3\n",
	}}
}

func fetcher(t *testing.T, urls ...string) *remote.Fetcher {
	t.Helper()
	p := remote.Policy{CacheDir: t.TempDir()}
	for _, u := range urls {
		p.Allow = append(p.Allow, remote.Prefix{URL: u})
	}
	f, err := remote.NewFetcher(p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func checkout(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRemoteChart(t *testing.T) {
	repo := remotetest.NewHelmRepo(t, chartVersion("1.0.0", ""), chartVersion("1.1.0", ""), chartVersion("2.0.0", ""))
	root := checkout(t, map[string]string{"apps/podinfo/release.yaml": "kind: HelmRelease\n", "apps/podinfo/values.yaml": "replicas: 5\n"})
	opts := render.DefaultOptions()
	opts.Helm.ReleaseName = "web"
	opts.Helm.Chart = &render.RemoteChart{RepoURL: repo.URL, Name: "podinfo", Version: "1.x"}
	opts.Helm.ValuesFiles = []string{"ci/prod.yaml"}
	opts.Remote = fetcher(t, repo.URL)
	set, err := render.Render(t.Context(), root, "apps/podinfo", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Objects) != 1 {
		t.Fatalf("objects: %v", set.Objects)
	}
	cm := set.Objects[0].Obj.Object["data"].(map[string]any)
	if cm["version"] != "1.1.0" || cm["replicas"] != "3" {
		t.Errorf("rendered %v, want version 1.1.0 from the range, replicas 3 from the chart's values file", cm)
	}
	// A values file of the checkout (Argo CD's $values/...) applies in its turn.
	o := opts
	o.Helm.ValuesFiles = []string{"ci/prod.yaml", render.CheckoutPrefix + "apps/podinfo/values.yaml"}
	set2, err := render.Render(t.Context(), root, "apps/podinfo", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := set2.Objects[0].Obj.Object["data"].(map[string]any)["replicas"]; got != "5" {
		t.Errorf("replicas %v, want 5 from the checkout's values file", got)
	}
	// Nothing of the checkout is read but its values files ($ref): a change
	// elsewhere does not change the render, one to them does, and it is not
	// shared by content (Remote).
	if in := render.FindInputs(root, "apps/podinfo", opts); in.Unknown != "" || !in.Remote || len(in.Files)+len(in.Dirs) != 0 {
		t.Errorf("a remote chart's inputs: %+v, want none in the checkout, remote", in)
	}
	if in := render.FindInputs(root, "apps/podinfo", o); in.Unknown != "" || !in.Remote || !slices.Equal(in.Files, []string{"apps/podinfo/values.yaml"}) {
		t.Errorf("a remote chart's inputs with a values file of the checkout: %+v, want apps/podinfo/values.yaml, remote", in)
	}
	if key, ok := render.ContentKey(root, "apps/podinfo", o); ok {
		t.Errorf("a remote chart's render is shared by content (key %s)", key)
	}
	if len(set.Charts) != 1 || set.Charts[0].Version != "1.1.0" || set.Charts[0].Requested != "1.x" {
		t.Errorf("charts %+v", set.Charts)
	}

	// Without a fetcher, or refused, or missing: not rendered, with the reason.
	for name, tc := range map[string]struct {
		f    *remote.Fetcher
		ver  string
		want string
	}{
		"no fetcher": {nil, "1.x", "remote sources are off (--offline, --remote-mode off or remote.mode: off); set remote.mode: public to fetch them"},
		"refused":    {fetcher(t, "https://charts.example.com/"), "1.x", "refused by policy: " + repo.URL},
		"not found":  {opts.Remote, "9.x", "not found: " + repo.URL},
	} {
		o := opts
		o.Remote = tc.f
		o.Helm.Chart = &render.RemoteChart{RepoURL: repo.URL, Name: "podinfo", Version: tc.ver}
		_, err := render.Render(t.Context(), root, "apps/podinfo", o)
		reason, ok := render.IsUnavailable(err)
		if !ok {
			t.Errorf("%s: %v is not Unavailable", name, err)
			continue
		}
		if !strings.Contains(reason, tc.want) {
			t.Errorf("%s: reason %q does not contain %q", name, reason, tc.want)
		}
	}
}

func TestRemoteChartTemplateErrorNamesTheChart(t *testing.T) {
	repo := remotetest.NewHelmRepo(t, remotetest.Chart{Name: "broken", Version: "1.0.0", Files: map[string]string{
		"templates/x.yaml": "{{ fail \"boom\" }}\n",
	}})
	opts := render.DefaultOptions()
	opts.Helm.Chart = &render.RemoteChart{RepoURL: repo.URL, Name: "broken", Version: "1.0.0"}
	opts.Remote = fetcher(t, repo.URL)
	_, err := render.Render(t.Context(), checkout(t, map[string]string{"a/x.yaml": ""}), "a", opts)
	if err == nil || !strings.Contains(err.Error(), "broken-1.0.0/templates/x.yaml") {
		t.Errorf("error %v does not name the chart's file", err)
	}
}

func TestUnvendoredDependencyFetched(t *testing.T) {
	repo := remotetest.NewHelmRepo(t,
		remotetest.Chart{Name: "cache", Version: "1.2.3", Files: map[string]string{
			"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-cache\nspec:\n  ports:\n  - port: 6379\n",
		}},
		remotetest.Chart{Name: "cache", Version: "1.3.0", Files: map[string]string{
			"templates/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}-cache-new\nspec:\n  ports:\n  - port: 6379\n",
		}})
	root := checkout(t, map[string]string{
		"app/Chart.yaml":          "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: cache\n  version: 1.x\n  repository: " + repo.URL + "\n",
		"app/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"other/Chart.yaml":        "apiVersion: v2\nname: other\nversion: 0.1.0\ndependencies:\n- name: cache\n  version: 1.x\n  repository: \"@stable\"\n",
		"other/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\n",
	})
	opts := render.DefaultOptions()
	opts.Helm.ReleaseName = "r"
	opts.Remote = fetcher(t, repo.URL)
	set, err := render.Render(t.Context(), root, "app", opts)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range set.Objects {
		names = append(names, o.Key.Kind+"/"+o.Key.Name)
	}
	if strings.Join(names, ",") != "ConfigMap/app,Service/r-cache-new" {
		t.Errorf("objects %v", names)
	}
	if len(set.Charts) != 1 || !set.Charts[0].Dependency || set.Charts[0].Version != "1.3.0" {
		t.Errorf("charts %+v", set.Charts)
	}
	// An @alias repository needs helm repo add: not rendered, with the reason.
	_, err = render.Render(t.Context(), root, "other", opts)
	if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, "other/Chart.yaml") || !strings.Contains(reason, "not supported") ||
		!strings.Contains(reason, "repositories.yaml") {
		t.Errorf("@alias dependency: %v", err)
	}
	// A file:// dependency not vendored: helm dependency build would package
	// the directory; not rendered, saying so. Vendored, it renders.
	root2 := checkout(t, map[string]string{
		"app/Chart.yaml":                        "apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: file://../lib\n",
		"app/templates/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		"lib/Chart.yaml":                        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"lib/templates/cm.yaml":                 "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
		"vendored/Chart.yaml":                   "apiVersion: v2\nname: vendored\nversion: 0.1.0\ndependencies:\n- name: lib\n  version: 0.1.0\n  repository: file://../lib\n",
		"vendored/templates/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: vendored\n",
		"vendored/charts/lib/Chart.yaml":        "apiVersion: v2\nname: lib\nversion: 0.1.0\n",
		"vendored/charts/lib/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n",
	})
	_, err = render.Render(t.Context(), root2, "app", opts)
	if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, "file://../lib") || !strings.Contains(reason, "vendor it in charts/") {
		t.Errorf("file:// dependency: %v", err)
	}
	set, err = render.Render(t.Context(), root2, "vendored", opts)
	if err != nil || len(set.Objects) != 2 {
		t.Errorf("vendored file:// dependency: %v %v", err, set.Objects)
	}
}

// TestRemoteOCIHelmRepositoryChart renders the chart of a Flux HelmRelease
// whose sourceRef is a HelmRepository of spec.type oci: the chart is
// <url>/<chart> in the registry (pushed with Helm's registry client), its
// version resolved against the tags as source-controller's OCIChartRepository
// does (exact tag, else the highest semver match, "" the latest stable).
func TestRemoteOCIHelmRepositoryChart(t *testing.T) {
	reg := ocitest.Start(t)
	for _, v := range []string{"1.0.0", "1.2.0", "2.0.0", "3.0.0-rc.1"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "podinfo", v, map[string]string{
			"values.yaml":       "replicas: 1\n",
			"ci/prod.yaml":      "replicas: 3\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  version: " + v + "\n  replicas: {{ .Values.replicas | quote }}\n",
		}))
	}
	root := checkout(t, map[string]string{"apps/podinfo/release.yaml": "kind: HelmRelease\n"})
	opts := render.DefaultOptions()
	opts.Helm.ReleaseName = "web"
	opts.Helm.ValuesFiles = []string{"ci/prod.yaml"}
	opts.Remote = fetcher(t, "oci://"+reg.Host()+"/charts")
	for _, tc := range []struct{ version, want string }{{"1.0.0", "1.0.0"}, {"1.x", "1.2.0"}, {"", "2.0.0"}, {">=3.0.0-0", "3.0.0-rc.1"}} {
		o := opts
		o.Helm.Chart = &render.RemoteChart{RepoURL: reg.URL("charts"), Name: "podinfo", Version: tc.version}
		set, err := render.Render(t.Context(), root, "apps/podinfo", o)
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		cm := set.Objects[0].Obj.Object["data"].(map[string]any)
		if cm["version"] != tc.want || cm["replicas"] != "3" {
			t.Errorf("%q: rendered %v, want version %s and replicas 3", tc.version, cm, tc.want)
		}
		if len(set.Charts) != 1 || set.Charts[0].Version != tc.want {
			t.Errorf("%q: resolved %+v", tc.version, set.Charts)
		}
	}
	o := opts
	o.Helm.Chart = &render.RemoteChart{RepoURL: reg.URL("charts"), Name: "podinfo", Version: "9.x"}
	if reason, ok := render.IsUnavailable(func() error { _, err := render.Render(t.Context(), root, "apps/podinfo", o); return err }()); !ok || !strings.Contains(reason, "not found") {
		t.Errorf("9.x: %q %v", reason, ok)
	}
	o.Remote = fetcher(t, "oci://"+reg.Host()+"/other")
	o.Helm.Chart.Version = "1.0.0"
	if reason, ok := render.IsUnavailable(func() error { _, err := render.Render(t.Context(), root, "apps/podinfo", o); return err }()); !ok || !strings.Contains(reason, "refused by policy") {
		t.Errorf("refused: %q %v", reason, ok)
	}
}

// TestFluxValuesFilesReplaceChartValues: Flux's valuesFiles compose a new
// default values.yaml that replaces the chart's own unless "values.yaml" is
// listed (source-controller mergeChartValues / OverwriteChartDefaultValues);
// a list of just values.yaml changes nothing; the release's values go over
// them; ignoreMissingValuesFiles skips missing files, else a missing one fails.
// helm's -f (Argo CD) layers the files over the chart's values.yaml instead.
func TestFluxValuesFilesReplaceChartValues(t *testing.T) {
	files := map[string]string{
		"values.yaml":       "replicas: 1\nimage: nginx\n",
		"ci/prod.yaml":      "replicas: 3\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  replicas: {{ .Values.replicas | quote }}\n  image: {{ .Values.image | default \"unset\" | quote }}\n  tier: {{ .Values.tier | default \"unset\" | quote }}\n",
	}
	repo := remotetest.NewHelmRepo(t, remotetest.Chart{Name: "web", Version: "1.0.0", Files: files})
	local := map[string]string{"apps/web/release.yaml": "kind: HelmRelease\n"}
	for name, body := range files {
		local["charts/web/"+name] = body
	}
	local["charts/web/Chart.yaml"] = "apiVersion: v2\nname: web\nversion: 1.0.0\n"
	root := checkout(t, local)
	f := fetcher(t, repo.URL)
	for _, tc := range []struct {
		name    string
		files   []string
		flux    bool
		ignore  bool
		values  map[string]any
		want    string // replicas image tier
		wantErr string
	}{
		{name: "helm -f layers", files: []string{"ci/prod.yaml"}, want: "3 nginx unset"},
		{name: "flux replaces values.yaml", files: []string{"ci/prod.yaml"}, flux: true, want: "3 unset unset"},
		{name: "flux with values.yaml listed", files: []string{"values.yaml", "ci/prod.yaml"}, flux: true, want: "3 nginx unset"},
		{name: "flux values.yaml alone", files: []string{"values.yaml"}, flux: true, want: "1 nginx unset"},
		{name: "flux none", flux: true, want: "1 nginx unset"},
		{name: "flux release values over", files: []string{"ci/prod.yaml"}, flux: true, values: map[string]any{"tier": "gold"}, want: "3 unset gold"},
		{name: "flux missing ignored", files: []string{"ci/none.yaml", "ci/prod.yaml"}, flux: true, ignore: true, want: "3 unset unset"},
		{name: "flux missing fails", files: []string{"ci/none.yaml", "ci/prod.yaml"}, flux: true, wantErr: "does not exist"},
	} {
		for _, remoteChart := range []bool{true, false} {
			opts := render.DefaultOptions()
			opts.Renderer = render.RendererHelm
			opts.Helm.FluxValuesFiles, opts.Helm.IgnoreMissingValuesFiles, opts.Helm.Values = tc.flux, tc.ignore, tc.values
			target := "charts/web"
			opts.Helm.ValuesFiles = nil
			for _, vf := range tc.files {
				if remoteChart {
					opts.Helm.ValuesFiles = append(opts.Helm.ValuesFiles, vf) // files of the chart
				} else {
					opts.Helm.ValuesFiles = append(opts.Helm.ValuesFiles, "charts/web/"+vf) // files of the repository
				}
			}
			if remoteChart {
				target = "apps/web"
				opts.Remote = f
				opts.Helm.Chart = &render.RemoteChart{RepoURL: repo.URL, Name: "web", Version: "1.0.0"}
			}
			set, err := render.Render(t.Context(), root, target, opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("%s (remote %v): error %v, want %q", tc.name, remoteChart, err, tc.wantErr)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (remote %v): %v", tc.name, remoteChart, err)
				continue
			}
			d := set.Objects[0].Obj.Object["data"].(map[string]any)
			if got := fmt.Sprint(d["replicas"], " ", d["image"], " ", d["tier"]); got != tc.want {
				t.Errorf("%s (remote %v): %s, want %s", tc.name, remoteChart, got, tc.want)
			}
		}
	}
}

// TestRemoteFetchErrorNamesNoLocalPath: a fetch that fails in the remote cache
// (here its tmp/ is not a directory, as a full or broken disk would fail it)
// is reported without the cache's path on this machine, which means nothing in
// a PR comment and tells the PR's author where the service keeps its files.
func TestRemoteFetchErrorNamesNoLocalPath(t *testing.T) {
	repo := remotetest.NewHelmRepo(t, chartVersion("1.0.0", ""))
	f := fetcher(t, repo.URL)
	tmp := filepath.Join(f.Cache().Dir(), "tmp")
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	root := checkout(t, map[string]string{"apps/podinfo/release.yaml": "kind: HelmRelease\n"})
	opts := render.DefaultOptions()
	opts.Helm.Chart = &render.RemoteChart{RepoURL: repo.URL, Name: "podinfo", Version: "1.0.0"}
	opts.Remote = f
	_, err := render.Render(t.Context(), root, "apps/podinfo", opts)
	reason, ok := render.IsUnavailable(err)
	if !ok {
		t.Fatalf("%v is not Unavailable", err)
	}
	t.Logf("reason: %s", reason)
	if !strings.Contains(reason, "podinfo") || !strings.Contains(reason, "remote cache") {
		t.Errorf("reason %q does not name the chart and the cache", reason)
	}
	for _, p := range []string{f.Cache().Dir(), root} {
		if strings.Contains(reason, p) {
			t.Errorf("reason %q names the local path %s", reason, p)
		}
	}
	if absPath.MatchString(reason) {
		t.Errorf("reason %q names an absolute path", reason)
	}
}

// absPath matches an absolute local path in a message (not a URL's "//").
var absPath = regexp.MustCompile(`(?:^|[\s'"(=])/\w`)
