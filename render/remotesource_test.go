package render_test

import (
	"context"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/gitsrc/gittest"
	"github.com/driftpreview/driftpreview/render/remote/oci"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
)

func kindNames(set render.ObjectSet) string {
	var names []string
	for _, o := range set.Objects {
		names = append(names, o.Key.Kind+"/"+o.Key.Name)
	}
	return strings.Join(names, " ")
}

const crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: backups.example.com\n"

// TestRenderOCIRepository renders a Flux Kustomization's path inside an
// OCIRepository's artifact, pulled from an in-process registry, at two tags.
func TestRenderOCIRepository(t *testing.T) {
	reg := ocitest.Start(t)
	reg.PushFiles(t, "manifests/db", "1.0.0", map[string]string{
		"deploy/kustomization.yaml": kustHeader + "resources: [sts.yaml, crd.yaml]\n",
		"deploy/sts.yaml":           "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n",
		"deploy/crd.yaml":           crd,
	})
	reg.PushFiles(t, "manifests/db", "2.0.0", map[string]string{
		"deploy/kustomization.yaml": kustHeader + "resources: [sts.yaml]\n",
		"deploy/sts.yaml":           "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db-v2\n",
	})
	checkout := t.TempDir() // the repository holds only the OCIRepository
	ctx := context.Background()
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererKustomize
	opts.Remote = fetcher(t, "oci://"+reg.Host()+"/manifests/")

	for _, tc := range []struct{ tag, want string }{
		{"1.0.0", "CustomResourceDefinition/backups.example.com StatefulSet/db"},
		{"2.0.0", "StatefulSet/db-v2"},
	} {
		opts.OCI = &render.OCISource{URL: reg.URL("manifests/db"), Tag: tc.tag}
		set, err := render.Render(ctx, checkout, "deploy", opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.tag, err)
		}
		if got := kindNames(set); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.tag, got, tc.want)
		}
		if len(set.Charts) != 1 || !set.Charts[0].Artifact || !strings.HasPrefix(set.Charts[0].Version, tc.tag+"@sha256:") {
			t.Errorf("%s: resolved %+v", tc.tag, set.Charts)
		}
	}

	// Refusals: not rendered, with the reason.
	for name, o := range map[string]render.Options{
		"no fetcher":  {OCI: &render.OCISource{URL: reg.URL("manifests/db"), Tag: "1.0.0"}},
		"not allowed": {OCI: &render.OCISource{URL: reg.URL("manifests/db"), Tag: "1.0.0"}, Remote: fetcher(t, "oci://"+reg.Host()+"/other/")},
		"missing tag": {OCI: &render.OCISource{URL: reg.URL("manifests/db"), Tag: "3.0.0"}, Remote: opts.Remote},
	} {
		_, err := render.Render(ctx, checkout, "deploy", o)
		reason, ok := render.IsUnavailable(err)
		if !ok {
			t.Errorf("%s: %v is not Unavailable", name, err)
			continue
		}
		want := map[string]string{"no fetcher": "remote sources are off", "not allowed": "refused by policy", "missing tag": "not found"}[name]
		if !strings.Contains(reason, want) {
			t.Errorf("%s: %q does not say %q", name, reason, want)
		}
	}
}

// TestRenderRemoteBase renders an overlay whose base is a remote git
// repository served over git's smart HTTP protocol, at two refs.
func TestRenderRemoteBase(t *testing.T) {
	srv := gittest.Start(t)
	repo := srv.NewRepo(t, "platform")
	c1 := repo.Commit(map[string]string{
		"base/kustomization.yaml": kustHeader + "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  v: \"1\"\n",
	}, "v1")
	repo.Commit(map[string]string{"base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-v2\n"}, "v2")
	ctx := context.Background()
	for _, tc := range []struct{ ref, want, commit string }{
		{"v1", "ConfigMap/app-settings", c1},
		{"v2", "ConfigMap/app-settings-v2", ""},
	} {
		root := writeTree(t, map[string]string{
			"app/kustomization.yaml": kustHeader + "namePrefix: app-\nresources:\n  - " + repo.URL + "//base?ref=" + tc.ref + "\n",
		})
		opts := render.DefaultOptions()
		opts.Remote = fetcher(t, srv.URL+"/")
		set, err := render.Render(ctx, root, "app", opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if got := kindNames(set); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.ref, got, tc.want)
		}
		if len(set.Charts) != 1 || !set.Charts[0].GitBase || (tc.commit != "" && set.Charts[0].Version != tc.commit) {
			t.Errorf("%s: resolved %+v", tc.ref, set.Charts)
		}
		// Refused by policy: not rendered, naming the line and the reason.
		opts.Remote = fetcher(t, "https://git.example.com/")
		_, err = render.Render(ctx, root, "app", opts)
		if reason, ok := render.IsUnavailable(err); !ok || !strings.HasPrefix(reason, "app/kustomization.yaml:5: remote base") || !strings.Contains(reason, "refused by policy") || !strings.Contains(reason, "(ref "+tc.ref+")") {
			t.Errorf("%s refused: %v", tc.ref, err)
		}
	}
}

// TestRenderOCIRepositoryFilterAndCopy: spec.ref.semverFilter keeps only the
// matching tags before the range picks the highest (source-controller's
// filterTags + getTagBySemver); layerSelector operation copy renders the same
// tree as extract (kustomize-controller untars the copied layer); a chartRef
// HelmRelease renders the OCIRepository's chart layer (pushed by Helm's
// registry client) as its chart.
func TestRenderOCIRepositoryFilterAndCopy(t *testing.T) {
	reg := ocitest.Start(t)
	for _, tag := range []string{"1.0.0", "1.1.0-rc.1", "2.0.0"} {
		reg.PushFiles(t, "manifests/app", tag, map[string]string{
			"deploy/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app-" + strings.ReplaceAll(tag, ".", "-") + "\n",
		})
	}
	for _, v := range []string{"6.0.0", "6.1.0", "7.0.0"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "podinfo", v, map[string]string{
			"values.yaml":       "replicas: 1\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + strings.ReplaceAll(v, ".", "-") + "\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
		}))
	}
	checkout := t.TempDir()
	ctx := context.Background()
	f := fetcher(t, "oci://"+reg.Host()+"/")
	for _, tc := range []struct {
		name string
		src  render.OCISource
		want string
	}{
		{"semver", render.OCISource{SemVer: ">=1.0.0-0"}, "ConfigMap/app-2-0-0"},
		{"semverFilter rc", render.OCISource{SemVer: ">=1.0.0-0", SemverFilter: ".*-rc.*"}, "ConfigMap/app-1-1-0-rc-1"},
		{"semverFilter 1.x", render.OCISource{SemVer: "*", SemverFilter: "^1\\."}, "ConfigMap/app-1-0-0"},
		{"copy", render.OCISource{Tag: "2.0.0", MediaType: "application/vnd.cncf.flux.content.v1.tar+gzip", Operation: "copy"}, "ConfigMap/app-2-0-0"},
	} {
		opts := render.DefaultOptions()
		opts.Renderer = render.RendererKustomize
		opts.Remote = f
		src := tc.src
		src.URL = reg.URL("manifests/app")
		opts.OCI = &src
		set, err := render.Render(ctx, checkout, "deploy", opts)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := kindNames(set); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// A filter no tag passes, and one that is not a regular expression.
	for name, filter := range map[string]string{"not found": "^9\\.", "invalid": "(["} {
		opts := render.DefaultOptions()
		opts.Renderer = render.RendererKustomize
		opts.Remote = f
		opts.OCI = &render.OCISource{URL: reg.URL("manifests/app"), SemVer: "*", SemverFilter: filter}
		_, err := render.Render(ctx, checkout, "deploy", opts)
		if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, name) {
			t.Errorf("filter %q: %v, want %s", filter, err, name)
		}
	}

	// chartRef → OCIRepository selecting the Helm chart layer with copy.
	opts := render.DefaultOptions()
	opts.Renderer = render.RendererHelm
	opts.Remote = f
	opts.Helm.ReleaseName = "web"
	opts.Helm.Values = map[string]any{"replicas": 4}
	opts.OCI = &render.OCISource{URL: reg.URL("charts/podinfo"), SemVer: "6.x", MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"}
	set, err := render.Render(ctx, checkout, "apps/podinfo", opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := kindNames(set); got != "ConfigMap/web-6-1-0" || set.Objects[0].Obj.Object["data"].(map[string]any)["replicas"] != "4" {
		t.Errorf("chartRef OCIRepository: %s %v", got, set.Objects)
	}
	if len(set.Charts) != 1 || !strings.HasPrefix(set.Charts[0].Version, "6.1.0@sha256:") {
		t.Errorf("resolved %+v", set.Charts)
	}
	// A layer that is not a chart.
	opts.OCI = &render.OCISource{URL: reg.URL("manifests/app"), Tag: "1.0.0"}
	_, err = render.Render(ctx, checkout, "apps/podinfo", opts)
	if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, "is not a Helm chart") {
		t.Errorf("not a chart: %v", err)
	}
}

// TestRenderArgoOCISource: an Argo CD OCI source (repoURL oci://…): the
// targetRevision is a tag, a digest, or a semver constraint resolved against
// the tags (Argo CD's repo server: exact reference first, then MaxVersion);
// path is read inside the one content layer; a Helm chart's directory is the
// root (path "."), rendered as a chart. Layers Argo CD does not accept by
// default are refused with the reason.
func TestRenderArgoOCISource(t *testing.T) {
	reg := ocitest.Start(t)
	digests := map[string]string{}
	for _, tag := range []string{"1.0.0", "1.2.0", "2.0.0"} {
		digests[tag] = reg.PushLayer(t, "manifests/guestbook", tag, oci.ImageLayerMediaType, ocitest.Tgz(t, map[string]string{
			"deploy/kustomization.yaml": kustHeader + "resources: [cm.yaml]\n",
			"deploy/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gb-" + strings.ReplaceAll(tag, ".", "-") + "\n",
		}))
	}
	reg.PushLayer(t, "manifests/flux", "1.0.0", oci.FluxContentMediaType, ocitest.Tgz(t, map[string]string{"cm.yaml": "kind: ConfigMap\n"}))
	for _, v := range []string{"15.9.0", "15.10.1"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "nginx", v, map[string]string{
			"values.yaml":       "replicas: 1\n",
			"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-" + strings.ReplaceAll(v, ".", "-") + "\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
		}))
	}
	checkout := t.TempDir()
	ctx := context.Background()
	f := fetcher(t, "oci://"+reg.Host()+"/")
	for _, tc := range []struct{ url, rev, path, want string }{
		{reg.URL("manifests/guestbook"), "1.0.0", "deploy", "ConfigMap/gb-1-0-0"},
		{reg.URL("manifests/guestbook"), "^1.0.0", "deploy", "ConfigMap/gb-1-2-0"},
		{reg.URL("manifests/guestbook"), digests["2.0.0"], "deploy", "ConfigMap/gb-2-0-0"},
		{reg.URL("charts/nginx"), "15.9.0", ".", "ConfigMap/web-15-9-0"},
		{reg.URL("charts/nginx"), ">=15.0.0", ".", "ConfigMap/web-15-10-1"},
	} {
		opts := render.DefaultOptions()
		opts.Renderer = render.RendererAuto
		opts.Remote = f
		opts.Helm.ReleaseName = "web"
		opts.OCI = &render.OCISource{URL: tc.url, Tag: tc.rev, Argo: true}
		set, err := render.Render(ctx, checkout, tc.path, opts)
		if err != nil {
			t.Errorf("%s %s: %v", tc.url, tc.rev, err)
			continue
		}
		if got := kindNames(set); got != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.url, tc.rev, got, tc.want)
		}
	}
	for _, tc := range []struct {
		remote   *remote.Fetcher
		url, rev string
		want     string
	}{
		{f, reg.URL("manifests/guestbook"), "3.0.0", "not found"},
		{f, reg.URL("manifests/guestbook"), "^3.0.0", "no tag matches"},
		{f, reg.URL("manifests/flux"), "1.0.0", "is not one Argo CD accepts by default"},
		{fetcher(t, "oci://"+reg.Host()+"/other"), reg.URL("manifests/guestbook"), "1.0.0", "refused by policy"},
	} {
		opts := render.DefaultOptions()
		opts.Remote = tc.remote
		opts.OCI = &render.OCISource{URL: tc.url, Tag: tc.rev, Argo: true}
		_, err := render.Render(ctx, checkout, "deploy", opts)
		if reason, ok := render.IsUnavailable(err); !ok || !strings.Contains(reason, tc.want) {
			t.Errorf("%s %s: %v, want %q", tc.url, tc.rev, err, tc.want)
		}
	}
}
