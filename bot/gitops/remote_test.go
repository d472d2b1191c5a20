package gitops

import (
	"errors"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

const remoteRepoFiles = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
  namespace: flux-system
spec:
  url: https://stefanprodan.github.io/podinfo
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: oci
  namespace: flux-system
spec:
  type: oci
  url: oci://ghcr.io/stefanprodan/charts
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata:
  name: podinfo-chart
  namespace: flux-system
spec:
  chart: podinfo
  version: ">=6.0.0 <7"
  sourceRef:
    kind: HelmRepository
    name: podinfo
  valuesFiles: [values-prod.yaml]
`

func remoteFixture(t *testing.T) string {
	return writeFiles(t, map[string]string{
		"infra/sources.yaml": remoteRepoFiles,
		"apps/podinfo/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  chart:
    spec:
      chart: podinfo
      version: 6.x
      sourceRef: {kind: HelmRepository, name: podinfo, namespace: flux-system}
      valuesFiles: [ci/values.yaml]
      ignoreMissingValuesFiles: true
`,
		"apps/byref/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: byref
  namespace: apps
spec:
  chartRef: {kind: HelmChart, name: podinfo-chart, namespace: flux-system}
`,
		"apps/oci/release.yaml": `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ocirel
  namespace: apps
spec:
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: oci, namespace: flux-system}
`,
		"argo/app.yaml": `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: redis
  namespace: argocd
spec:
  destination: {server: https://kubernetes.default.svc, namespace: redis}
  sources:
  - repoURL: https://charts.bitnami.com/bitnami
    chart: redis
    targetRevision: 18.1.0
    helm:
      valueFiles: [values-ha.yaml, $values/argo/redis-values.yaml]
  - repoURL: https://github.com/example/gitops
    ref: values
`,
		"argo/redis-values.yaml": "replicas: 2\n",
	})
}

func targetByName(ts []config.Target, name string) *config.Target {
	for i := range ts {
		if ts[i].Name == name {
			return &ts[i]
		}
	}
	return nil
}

func TestDiscoverRemoteCharts(t *testing.T) {
	root := remoteFixture(t)
	allowAll := func(string) error { return nil }
	res, err := Discover(t.Context(), root, Options{RepoURLs: []string{"https://github.com/example/gitops"}, Remote: allowAll})
	if err != nil {
		t.Fatal(err)
	}
	hr := targetByName(res.Targets, "podinfo")
	if hr == nil {
		t.Fatalf("no podinfo target: targets %v, not rendered %v", res.Targets, res.NotRendered)
	}
	want := render.RemoteChart{RepoURL: "https://stefanprodan.github.io/podinfo", Name: "podinfo", Version: "6.x"}
	if c := hr.Render.Helm.Chart; c == nil || *c != want || hr.Path != "apps/podinfo" || hr.Render.Renderer != render.RendererHelm {
		t.Errorf("HelmRelease target: path %s chart %+v renderer %s", hr.Path, hr.Render.Helm.Chart, hr.Render.Renderer)
	}
	if got := strings.Join(hr.Render.Helm.ValuesFiles, ","); got != "ci/values.yaml" {
		t.Errorf("values files %q, want the chart's ci/values.yaml", got)
	}
	// Flux's valuesFiles replace the chart's values.yaml (source-controller).
	if h := hr.Render.Helm; !h.FluxValuesFiles || !h.IgnoreMissingValuesFiles {
		t.Errorf("HelmRelease valuesFiles semantics: flux %v ignoreMissing %v", h.FluxValuesFiles, h.IgnoreMissingValuesFiles)
	}
	// A chartRef to a HelmChart reads the HelmChart's spec.
	byref := targetByName(res.Targets, "byref")
	if byref == nil || byref.Render.Helm.Chart == nil || byref.Render.Helm.Chart.Version != ">=6.0.0 <7" ||
		strings.Join(byref.Render.Helm.ValuesFiles, ",") != "values-prod.yaml" {
		t.Errorf("chartRef HelmChart target: %+v", byref)
	}
	// An OCI HelmRepository (spec.type oci): its chart is <url>/<chart>,
	// fetched from the registry when rendered.
	if oci := targetByName(res.Targets, "ocirel"); oci == nil || oci.Render.Helm.Chart == nil ||
		*oci.Render.Helm.Chart != (render.RemoteChart{RepoURL: "oci://ghcr.io/stefanprodan/charts", Name: "podinfo"}) {
		t.Errorf("OCI HelmRepository: %+v (not rendered %v)", oci, res.NotRendered)
	}
	// Argo CD: chart + targetRevision, a chart values file and a $values file of this repo.
	app := targetByName(res.Targets, "redis")
	if app == nil {
		t.Fatalf("no redis target: not rendered %v", res.NotRendered)
	}
	if app.Render.Helm.FluxValuesFiles {
		t.Error("an Argo CD Application's valueFiles are helm -f files, not Flux valuesFiles")
	}
	want = render.RemoteChart{RepoURL: "https://charts.bitnami.com/bitnami", Name: "redis", Version: "18.1.0"}
	if c := app.Render.Helm.Chart; c == nil || *c != want || app.Path != "argo" || app.Render.Renderer != render.RendererHelm {
		t.Errorf("Application target: path %s chart %+v renderer %s", app.Path, app.Render.Helm.Chart, app.Render.Renderer)
	}
	if got := strings.Join(app.Render.Helm.ValuesFiles, ","); got != "values-ha.yaml,"+render.CheckoutPrefix+"argo/redis-values.yaml" {
		t.Errorf("Application values files %q", got)
	}

	// Refused by the policy, or remote fetching off: listed as not rendered.
	refuse := func(u string) error { return errors.New("refused by policy: " + u + ": no allowed prefix covers it") }
	res, err = Discover(t.Context(), root, Options{RepoURLs: []string{"https://github.com/example/gitops"}, Remote: refuse})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"podinfo", "byref", "redis", "ocirel"} {
		nr := targetByName(res.NotRendered, name)
		if nr == nil || !strings.Contains(nr.Skip, "refused by policy") {
			t.Errorf("%s with a refusing policy: %+v", name, nr)
		}
	}
	res, err = Discover(t.Context(), root, Options{RepoURLs: []string{"https://github.com/example/gitops"}})
	if err != nil {
		t.Fatal(err)
	}
	if nr := targetByName(res.NotRendered, "podinfo"); nr == nil || nr.Skip != "source outside this repo: https://stefanprodan.github.io/podinfo: remote sources are off (--offline, --remote-mode off or remote.mode: off); set remote.mode: public to fetch them" {
		t.Errorf("podinfo with remote fetching off: %+v", nr)
	}
}

// TestDiscoverArgoOCISources: an oci:// repoURL is an Argo CD OCI source
// (path inside the artifact, targetRevision as given); a scheme-less Helm
// repoURL is an OCI registry only when Argo CD's repository Secret (or a
// repo-creds template) sets enableOCI, else it is listed with the reason.
func TestDiscoverArgoOCISources(t *testing.T) {
	app := func(name, src string) string {
		return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: " + name + ", namespace: argocd}\nspec:\n  destination: {server: https://kubernetes.default.svc, namespace: " + name + "}\n  source:\n" + src
	}
	root := writeFiles(t, map[string]string{
		"apps/guestbook.yaml": app("guestbook", "    repoURL: oci://ghcr.io/example/guestbook\n    targetRevision: ^1.0.0\n    path: deploy\n    helm: {valueFiles: [values-prod.yaml]}\n"),
		"apps/nginx.yaml":     app("nginx", "    repoURL: registry-1.docker.io/bitnamicharts\n    chart: nginx\n    targetRevision: 15.9.0\n"),
		"apps/private.yaml":   app("private", "    repoURL: registry.example.com/charts\n    chart: db\n    targetRevision: 1.0.0\n"),
		"apps/byprefix.yaml":  app("byprefix", "    repoURL: ghcr.io/example/charts\n    chart: api\n    targetRevision: 2.x\n"),
		"argocd/repos.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: bitnami
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: repository}
stringData: {url: registry-1.docker.io/bitnamicharts, type: helm, enableOCI: "true"}
---
apiVersion: v1
kind: Secret
metadata:
  name: ghcr
  namespace: argocd
  labels: {argocd.argoproj.io/secret-type: repo-creds}
data: {url: Z2hjci5pby9leGFtcGxl, enableOCI: dHJ1ZQ==}
`,
	})
	res, err := Discover(t.Context(), root, Options{Remote: func(string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	gb := targetByName(res.Targets, "guestbook")
	if gb == nil || gb.Render.OCI == nil || *gb.Render.OCI != (render.OCISource{URL: "oci://ghcr.io/example/guestbook", Tag: "^1.0.0", Argo: true}) ||
		gb.Path != "deploy" || gb.Render.Renderer != render.RendererAuto || strings.Join(gb.Render.Helm.ValuesFiles, ",") != "deploy/values-prod.yaml" {
		t.Errorf("oci:// source: %+v (not rendered %v)", gb, res.NotRendered)
	}
	for name, want := range map[string]render.RemoteChart{
		"nginx":    {RepoURL: "oci://registry-1.docker.io/bitnamicharts", Name: "nginx", Version: "15.9.0"},
		"byprefix": {RepoURL: "oci://ghcr.io/example/charts", Name: "api", Version: "2.x"},
	} {
		tg := targetByName(res.Targets, name)
		if tg == nil || tg.Render.Helm.Chart == nil || *tg.Render.Helm.Chart != want {
			t.Errorf("%s: %+v", name, tg)
		}
	}
	if nr := targetByName(res.NotRendered, "private"); nr == nil || !strings.Contains(nr.Skip, "sets enableOCI: no such Secret is in this repository") {
		t.Errorf("private: %+v", nr)
	}
	// Refused by the policy: not rendered, with the reason.
	res, err = Discover(t.Context(), root, Options{Remote: func(u string) error { return errors.New("refused by policy: " + u) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"guestbook", "nginx"} {
		if nr := targetByName(res.NotRendered, name); nr == nil || !strings.Contains(nr.Skip, "refused by policy: oci://") {
			t.Errorf("%s refused: %+v", name, nr)
		}
	}
}
