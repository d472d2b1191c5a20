package gitops

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
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
	if want := "source outside this repo: OCIRepository flux-system/filtered: spec.ref.semverFilter is not supported by driftpreview"; skips["filtered"] != want {
		t.Errorf("filtered: %q", skips["filtered"])
	}
	if want := "source outside this repo: OCIRepository flux-system/nope"; skips["missing"] != want {
		t.Errorf("missing: %q", skips["missing"])
	}
}
