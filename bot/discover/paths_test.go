package discover

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

const (
	deployYAML = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
	nsYAML     = "# a namespace\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
)

// repoTree writes a GitOps repository with the common layouts: a kustomize base with
// dev and prod overlays (prod also uses a component), a base whose environments are
// not linked by a parseable reference, a chart with a vendored subchart, plain
// manifest directories, and directories discovery must skip.
func repoTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	outside := t.TempDir()
	files := map[string]string{
		"README.md":                                           "# repo\n",
		"apps/shop/README.md":                                 "shop\n",
		"apps/shop/base/kustomization.yaml":                   "resources: [deploy.yaml, svc.yaml]\n",
		"apps/shop/base/deploy.yaml":                          deployYAML,
		"apps/shop/base/svc.yaml":                             "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n",
		"apps/shop/overlays/dev/kustomization.yaml":           "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base/\npatches:\n- path: patches/replicas.yaml\n",
		"apps/shop/overlays/dev/patches/replicas.yaml":        deployYAML + "spec:\n  replicas: 1\n",
		"apps/shop/overlays/prod/kustomization.yaml":          "resources: [../../base]\ncomponents: [../../components/monitoring]\nconfigMapGenerator:\n- name: cfg\n  files: [settings=config/settings.env]\n",
		"apps/shop/overlays/prod/config/settings.env":         "A=1\n",
		"apps/shop/components/monitoring/kustomization.yml":   "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [sm.yaml]\n",
		"apps/shop/components/monitoring/sm.yaml":             "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: web}\n",
		"apps/shop/base/NOTES.md":                             "notes\n",
		"apps/shop/overlays/prod/README.md":                   "prod\n",
		"apps/legacy/base/Kustomization":                      "resources: [cm.yaml]\n",
		"apps/legacy/base/cm.yaml":                            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: legacy}\n",
		"apps/legacy/environments/staging/kustomization.yaml": "resources:\n- https://example.com/base.yaml\n",
		"charts/payments/Chart.yaml":                          "apiVersion: v2\nname: payments\nversion: 0.1.0\n",
		"charts/payments/values.yaml":                         "replicas: 1\n",
		"charts/payments/templates/deploy.yaml":               "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n",
		"charts/payments/charts/redis/Chart.yaml":             "apiVersion: v2\nname: redis\nversion: 1.0.0\n",
		"charts/payments/charts/redis/templates/sts.yaml":     "apiVersion: apps/v1\nkind: StatefulSet\n",
		"manifests/ns.yaml":                                   nsYAML,
		"manifests/notes.yaml":                                "title: not a manifest\n",
		"manifests/README.md":                                 "docs\n",
		"manifests/extra/cm.json":                             `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}`,
		"docs/mkdocs.yml":                                     "site_name: docs\nkind: not-a-manifest-without-apiVersion\n",
		"testdata/fixture/ns.yaml":                            nsYAML,
		"node_modules/pkg/ns.yaml":                            nsYAML,
		".github/workflows/ci.yml":                            "on: push\n",
		"ops/.argocd/app.yaml":                                nsYAML,
		"commented/ns.yaml":                                   "#apiVersion: v1\n#kind: Namespace\napiVersion: # none\nkind: Namespace\n",
	}
	for name, content := range files {
		write(t, dir, name, content)
	}
	write(t, outside, "stolen/ns.yaml", nsYAML)
	write(t, outside, "one.yaml", nsYAML)
	if err := os.Symlink(filepath.Join(outside, "stolen"), filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "one.yaml"), filepath.Join(dir, "links", "ns.yaml")); err != nil {
		t.Fatal(err)
	}
	// Links inside the repository: a linked file counts, a linked directory is not
	// entered (it would only repeat manifests).
	if err := os.MkdirAll(filepath.Join(dir, "mirror"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../manifests/ns.yaml", filepath.Join(dir, "mirror", "ns.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("manifests", filepath.Join(dir, "samedir")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ignoreRenderState leaves out render options' unexported state (resolved chart
// dependencies), which discovery never sets.
var ignoreRenderState = cmpopts.IgnoreUnexported(render.HelmOptions{})

func TestFromPathsAll(t *testing.T) {
	dir := repoTree(t)
	got, err := FromPaths(dir, nil, DefaultPathOptions())
	if err != nil {
		t.Fatal(err)
	}
	var want []config.Target
	for _, p := range []string{
		"apps/legacy/environments/staging",
		"apps/shop/overlays/dev",
		"apps/shop/overlays/prod",
		"charts/payments",
		"manifests",
		"manifests/extra",
		"mirror",
	} {
		want = append(want, config.NewTarget(p))
	}
	if diff := cmp.Diff(want, got, ignoreRenderState); diff != "" {
		t.Errorf("FromPaths mismatch (-want +got):\n%s", diff)
	}
}

func TestFromPathsChanged(t *testing.T) {
	dir := repoTree(t)
	tests := []struct {
		name    string
		changed []string
		want    []string
	}{
		{"base renders itself and reaches every overlay", []string{"apps/shop/base/deploy.yaml"}, []string{"apps/shop/base", "apps/shop/overlays/dev", "apps/shop/overlays/prod"}},
		{"overlay file", []string{"apps/shop/overlays/prod/kustomization.yaml"}, []string{"apps/shop/overlays/prod"}},
		{"patch file in an overlay", []string{"apps/shop/overlays/dev/patches/replicas.yaml"}, []string{"apps/shop/overlays/dev"}},
		{"generator input", []string{"apps/shop/overlays/prod/config/settings.env"}, []string{"apps/shop/overlays/prod"}},
		{"component reaches its users", []string{"apps/shop/components/monitoring/sm.yaml"}, []string{"apps/shop/overlays/prod"}},
		{"base without parsed users falls back to environments/*", []string{"apps/legacy/base/cm.yaml"}, []string{"apps/legacy/base", "apps/legacy/environments/staging"}},
		{"chart template", []string{"charts/payments/templates/deploy.yaml"}, []string{"charts/payments"}},
		{"vendored subchart belongs to the chart", []string{"charts/payments/charts/redis/templates/sts.yaml"}, []string{"charts/payments"}},
		{"chart values", []string{"charts/payments/values.yaml"}, []string{"charts/payments"}},
		{"plain manifest", []string{"manifests/ns.yaml"}, []string{"manifests"}},
		{"plain JSON manifest", []string{"manifests/extra/cm.json"}, []string{"manifests/extra"}},
		{"deleted manifest in a plain directory", []string{"manifests/old.yaml"}, []string{"manifests"}},
		{"non-manifest next to manifests", []string{"manifests/README.md"}, nil},
		{"non-manifests inside kustomizations", []string{"apps/shop/base/NOTES.md", "apps/shop/overlays/prod/README.md"}, nil},
		{"file outside any target", []string{"apps/shop/README.md", "README.md", "docs/mkdocs.yml"}, nil},
		{"deleted overlay directory", []string{"apps/shop/overlays/qa/kustomization.yaml"}, nil},
		{"skipped directories", []string{"testdata/fixture/ns.yaml", "node_modules/pkg/ns.yaml", ".github/workflows/ci.yml", "ops/.argocd/app.yaml"}, nil},
		{"symlinks out of the repository", []string{"escape/ns.yaml", "links/ns.yaml"}, nil},
		{"symlinks inside the repository", []string{"mirror/ns.yaml", "samedir/ns.yaml"}, []string{"mirror"}},
		{"several changes, deduplicated and sorted", []string{"manifests/ns.yaml", "apps/shop/base/svc.yaml", "apps/shop/overlays/dev/kustomization.yaml", "charts/payments/Chart.yaml"},
			[]string{"apps/shop/base", "apps/shop/overlays/dev", "apps/shop/overlays/prod", "charts/payments", "manifests"}},
		{"nothing changed", []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			targets, err := FromPaths(dir, tt.changed, DefaultPathOptions())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tg := range targets {
				got = append(got, tg.Path)
				if tg.Name != tg.Path {
					t.Errorf("target %q is named %q, want its path", tg.Path, tg.Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromPaths(%q) mismatch (-want +got):\n%s", tt.changed, diff)
			}
		})
	}
}

// TestFromPathsDirsFallbackFixture: fixtures/repos/dirs-fallback has no
// controller objects (issue 9, defect 5). Every directory a PR touches directly
// that renders on its own is a target, even when another directory builds on it
// (kustomize-guestbook, the base of pre-post-sync; a deploy/bases/ app), beside
// the overlays that use it; a PR of README, docs and CI files has no target.
func TestFromPathsDirsFallbackFixture(t *testing.T) {
	root := filepath.Join("..", "..", "fixtures", "repos", "dirs-fallback")
	for _, tt := range []struct {
		name    string
		changed []string
		want    []string
	}{
		{"an app that is another app's base", []string{"kustomize-guestbook/deployment.yaml"}, []string{"kustomize-guestbook", "pre-post-sync"}},
		{"the app built on it", []string{"pre-post-sync/pre-sync-job.yaml"}, []string{"pre-post-sync"}},
		{"a base and its overlays", []string{"deploy/bases/frontend/deployment.yaml"}, []string{"deploy/bases/frontend", "deploy/overlays/production", "deploy/overlays/staging"}},
		{"one overlay", []string{"deploy/overlays/staging/kustomization.yaml"}, []string{"deploy/overlays/staging"}},
		{"every touched app", []string{"guestbook/service.yaml", "helm-guestbook/values.yaml", "kustomize-guestbook/service.yaml"},
			[]string{"guestbook", "helm-guestbook", "kustomize-guestbook", "pre-post-sync"}},
		{"docs, CI and READMEs only", []string{"README.md", "docs/layout.md", "docs/mkdocs.yml", ".github/workflows/ci.yaml", "kustomize-guestbook/README.md"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			targets, err := FromPaths(root, tt.changed, DefaultPathOptions())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tg := range targets {
				got = append(got, tg.Path)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FromPaths(%q) (-want +got):\n%s", tt.changed, diff)
			}
		})
	}
}

func TestFromPathsErrors(t *testing.T) {
	dir := repoTree(t)
	_, err := FromPaths(dir, []string{"../etc/passwd", "/abs/x.yaml"}, DefaultPathOptions())
	want := `discovering targets in ` + dir + `: changed path "../etc/passwd" must not use ".."; the path must stay inside the repository` + "\n" +
		`changed path "/abs/x.yaml" is absolute; write it relative to the repository root`
	if err == nil || err.Error() != want {
		t.Errorf("FromPaths error = %v, want %q", err, want)
	}

	opts := DefaultPathOptions()
	opts.MaxFiles = 10
	_, err = FromPaths(dir, nil, opts)
	if err == nil || !strings.Contains(err.Error(), "more than 10 files; list the targets in .driftpreview.yaml instead") {
		t.Errorf("FromPaths with MaxFiles 10: error = %v, want the file cap", err)
	}

	if _, err := FromPaths(filepath.Join(dir, "missing"), nil, DefaultPathOptions()); err == nil {
		t.Errorf("FromPaths of a missing root succeeded")
	}
}

func TestFromPathsRootAndOverlaysWithoutBase(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "ns.yaml", nsYAML)
	write(t, dir, "overlays/prod/kustomization.yaml", "resources: [../../ns.yaml]\n")
	write(t, dir, "big/huge.yaml", nsYAML+strings.Repeat("#", 2<<20))
	got, err := FromPaths(dir, nil, DefaultPathOptions())
	if err != nil {
		t.Fatal(err)
	}
	// overlays/prod references a file outside its own directory: discovery records
	// the edge (render will refuse the load, and say so); the root is then a base.
	want := []config.Target{config.NewTarget("overlays/prod")}
	if diff := cmp.Diff(want, got, ignoreRenderState); diff != "" {
		t.Errorf("FromPaths mismatch (-want +got):\n%s", diff)
	}
	got, err = FromPaths(dir, []string{"ns.yaml"}, DefaultPathOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, ignoreRenderState); diff != "" {
		t.Errorf("FromPaths(ns.yaml) mismatch (-want +got):\n%s", diff)
	}

	plain := t.TempDir()
	write(t, plain, "ns.yaml", nsYAML)
	got, err = FromPaths(plain, []string{"ns.yaml"}, DefaultPathOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]config.Target{config.NewTarget(".")}, got, ignoreRenderState); diff != "" {
		t.Errorf("FromPaths of a root of manifests mismatch (-want +got):\n%s", diff)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
