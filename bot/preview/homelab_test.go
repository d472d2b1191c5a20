package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

const homeLabURL = "https://github.com/example/homelab"

// writeHomeLab writes a generated Flux repository shaped like issue 23's home
// lab: 120 Kustomizations of this repository (each one Deployment) and 80
// HelmReleases whose charts come from OCI registries, which are listed as not
// rendered. memory is app-007's memory limit.
func writeHomeLab(t *testing.T, root, memory string) {
	t.Helper()
	files := map[string]string{
		"README.md":                      "# home lab\n",
		"clusters/home/flux-system.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: " + homeLabURL + "\n  ref:\n    branch: main\n",
	}
	for i := range 120 {
		name := fmt.Sprintf("app-%03d", i)
		mem := "512Mi"
		if i == 7 {
			mem = memory
		}
		files["clusters/home/"+name+".yaml"] = fmt.Sprintf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps/%s\n  prune: true\n  targetNamespace: %s\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n", name, name, name)
		files["apps/"+name+"/deployment.yaml"] = fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  selector:\n    matchLabels: {app: %s}\n  template:\n    metadata:\n      labels: {app: %s}\n    spec:\n      containers:\n      - name: app\n        image: ghcr.io/example/%s:1.0.0\n        resources:\n          limits:\n            memory: %s\n", name, name, name, name, mem)
	}
	for i := range 80 {
		name := fmt.Sprintf("chart-%03d", i)
		files["clusters/home/"+name+".yaml"] = fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: oci://registry.invalid/charts/%s\n  ref:\n    tag: 1.0.0\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  targetNamespace: %s\n  chartRef:\n    kind: OCIRepository\n    name: %s\n", name, name, name, name, name)
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHomeLabComment previews a one-line PR (one Deployment's memory limit
// 512Mi → 768Mi) on a generated 200-target Flux repository whose 80
// HelmReleases are not rendered: the comment leads with that change and its
// diff, folds the 80 into one line and the 119 untouched targets into another,
// and gives neither a section (issue 23). Golden: testdata/homelab.comment.golden.md.
func TestHomeLabComment(t *testing.T) {
	base, head := t.TempDir(), t.TempDir()
	writeHomeLab(t, base, "512Mi")
	writeHomeLab(t, head, "768Mi")
	repo := gitfixture.BaseHead(t, base, head)
	rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{homeLabURL}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 200 {
		t.Fatalf("%d targets, want 200", len(rep.Targets))
	}
	pages := report.Pages(rep, report.DefaultOptions())
	md := pages[0]
	for _, want := range []string{
		"+            memory: 768Mi",
		"- **199 targets not affected by this PR**",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the first page does not hold %q:\n%s", want, md)
		}
	}
	// The 80 HelmReleases of remote charts the PR does not change are not
	// affected: discovery leaves them unsearched (gitops.Prune), so nothing
	// says that they could not be fetched (remote sources are off here).
	if strings.Contains(md, "HelmReleases not rendered") {
		t.Errorf("the first page lists targets as not rendered:\n%s", md)
	}
	if n := strings.Count(md, "<details><summary><b>"); n != 1 {
		t.Errorf("%d target sections, want only the changed one", n)
	}
	golden.Check(t, filepath.Join("testdata", "homelab.comment.golden.md"), []byte(strings.Join(pages, "\n<!-- ===== next comment ===== -->\n")))
}
