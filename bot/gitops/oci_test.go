package gitops

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote/oci"
)

// TestFluxOCIRepositorySource: a Kustomization whose sourceRef is an
// OCIRepository renders spec.path inside the artifact (render.Options.OCI),
// with the OCIRepository's ref and layerSelector; one it cannot read is not
// rendered, saying why.
func TestFluxOCIRepositorySource(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"clusters/prod/apps.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: db, namespace: flux-system}
spec:
  url: oci://ghcr.io/example/manifests/db
  ref: {tag: 1.0.0, semver: ">=1.0.0 <2"}
  layerSelector: {mediaType: application/vnd.cncf.flux.content.v1.tar+gzip, operation: extract}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: filtered, namespace: flux-system}
spec:
  url: oci://ghcr.io/example/manifests/x
  ref: {semver: ">=1", semverFilter: ".*-rc"}
  verify: {provider: cosign}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo-chart, namespace: apps}
spec:
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref: {semver: "6.x"}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: podinfo-chart}
  values: {replicaCount: 2}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: lost, namespace: apps}
spec:
  chartRef: {kind: OCIRepository, name: nope}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: db, namespace: flux-system}
spec:
  sourceRef: {kind: OCIRepository, name: db}
  path: ./deploy
  prune: true
  targetNamespace: db
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: filtered, namespace: flux-system}
spec:
  sourceRef: {kind: OCIRepository, name: filtered}
  path: ./
  prune: true
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: missing, namespace: flux-system}
spec:
  sourceRef: {kind: OCIRepository, name: nope}
  path: ./
  prune: true
`,
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Discover(context.Background(), root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var db *render.Options
	for i, tg := range res.Targets {
		if tg.Name == "db" {
			db = &res.Targets[i].Render
			if tg.Path != "deploy" {
				t.Errorf("path %q", tg.Path)
			}
		}
	}
	if db == nil {
		t.Fatalf("no db target: %v / %v", project(res.Targets), project(res.NotRendered))
	}
	want := &render.OCISource{URL: "oci://ghcr.io/example/manifests/db", Tag: "1.0.0", SemVer: ">=1.0.0 <2",
		MediaType: "application/vnd.cncf.flux.content.v1.tar+gzip", Operation: "extract"}
	if diff := cmp.Diff(want, db.OCI); diff != "" || db.Renderer != render.RendererKustomize || db.Namespace != "db" {
		t.Errorf("OCI source (-want +got):\n%s (renderer %s)", diff, db.Renderer)
	}
	skips := map[string]string{}
	for _, tg := range res.NotRendered {
		skips[tg.Name] = tg.Skip
	}
	// semverFilter is passed on; verify gets a note (not performed), not a refusal.
	filtered := targetByName(res.Targets, "filtered")
	if filtered == nil || filtered.Render.OCI == nil || filtered.Render.OCI.SemverFilter != ".*-rc" || filtered.Render.OCI.SemVer != ">=1" {
		t.Fatalf("filtered: %+v (skip %q)", filtered, skips["filtered"])
	}
	if !slices.ContainsFunc(filtered.Notes, func(n string) bool {
		return strings.Contains(n, "spec.verify (cosign) was not performed")
	}) {
		t.Errorf("filtered: no verify note in %q", filtered.Notes)
	}
	// A HelmRelease's chartRef to an OCIRepository renders its artifact as the chart.
	hr := targetByName(res.Targets, "podinfo")
	wantChart := &render.OCISource{URL: "oci://ghcr.io/stefanprodan/charts/podinfo", SemVer: "6.x", MediaType: oci.HelmChartMediaType, Operation: "copy"}
	if hr == nil || hr.Render.Renderer != render.RendererHelm || cmp.Diff(wantChart, hr.Render.OCI) != "" ||
		hr.Render.Helm.ReleaseName != "podinfo" || hr.Render.Helm.Values["replicaCount"] != float64(2) {
		t.Errorf("chartRef OCIRepository: %+v", hr)
	}
	if want := "source outside this repo: chartRef OCIRepository apps/nope"; skips["lost"] != want {
		t.Errorf("lost: %q", skips["lost"])
	}
	if want := "source outside this repo: OCIRepository flux-system/nope"; skips["missing"] != want {
		t.Errorf("missing: %q", skips["missing"])
	}
}
