package render_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// outsideMarker is the content of a file next to (outside) the checkout: no error
// or output may ever contain it.
const outsideMarker = "OUTSIDE-THE-CHECKOUT-d41d8cd9"

// writeTree writes files (path → content) under a new checkout in a temp dir and
// returns the checkout root. A sibling file outside the checkout holds a valid
// manifest with outsideMarker, as bait for escapes.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	base := t.TempDir()
	outside := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + strings.ToLower(outsideMarker) + "\ndata:\n  marker: " + outsideMarker + "\n"
	if err := os.WriteFile(filepath.Join(base, "outside.yaml"), []byte(outside), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "repo")
	for name, content := range files {
		if err := os.WriteFile(inTree(t, root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const chartYAML = "apiVersion: v2\nname: app\nversion: 0.1.0\n"

const kustHeader = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"

const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"

func TestRenderHostile(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		setup   func(t *testing.T, root string) // extra setup, such as symlinks or huge files
		target  string
		opts    func(*render.Options)
		wantErr bool
		// The *render.Error must name this file and line (0: any line) and its
		// text must contain every wantMsg.
		wantFile string
		wantLine int
		wantMsg  []string
		check    func(t *testing.T, set render.ObjectSet) // for cases that succeed
	}{
		{
			name: "kustomize resource climbing out with ..",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - cm.yaml\n  - ../../../../etc/passwd\n",
				"app/cm.yaml":            cm,
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 5, wantMsg: []string{"leads outside the repository"},
		},
		{
			name: "kustomize resource reaching the bait file next to the checkout",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - ../../outside.yaml\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"leads outside the repository"},
		},
		{
			name: "kustomize absolute path",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - /etc/passwd\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"absolute path", "/etc/passwd"},
		},
		{
			name: "kustomize resource is a symlink to /etc/passwd",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - passwd.yaml\n",
			},
			setup:  symlink("/etc/passwd", "app/passwd.yaml"),
			target: "app", wantErr: true,
			wantFile: "app/passwd.yaml", wantMsg: []string{"symlink", "outside the repository"},
		},
		{
			name: "kustomize base directory is a symlink out of the checkout",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - ../base\n",
			},
			setup:  symlink("/etc", "base"),
			target: "app", wantErr: true,
			wantFile: "base", wantMsg: []string{"symlink", "outside the repository"},
		},
		{
			name: "plain file is a symlink to /etc/passwd",
			files: map[string]string{
				"app/cm.yaml": cm,
			},
			setup:  symlink("/etc/passwd", "app/passwd.yaml"),
			target: "app", wantErr: true,
			wantFile: "app/passwd.yaml", wantMsg: []string{"symlink"},
		},
		{
			name: "helm values file is a symlink out of the checkout",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/templates/cm.yaml": cm,
				"values/placeholder.yaml": "a: 1\n",
			},
			setup:   symlink("../../outside.yaml", "values/prod.yaml"),
			target:  "chart",
			opts:    func(o *render.Options) { o.Helm.ValuesFiles = []string{"values/prod.yaml"} },
			wantErr: true, wantFile: "values/prod.yaml", wantMsg: []string{"symlink"},
		},
		{
			name: "helm values file outside the checkout",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/templates/cm.yaml": cm,
			},
			target:  "chart",
			opts:    func(o *render.Options) { o.Helm.ValuesFiles = []string{"../outside.yaml"} },
			wantErr: true, wantFile: "../outside.yaml", wantMsg: []string{"leads outside the repository"},
		},
		{
			name: "helm chart template is a symlink to /etc/passwd",
			files: map[string]string{
				"chart/Chart.yaml": chartYAML,
			},
			setup:  symlink("/etc/passwd", "chart/templates/passwd.yaml"),
			target: "chart", wantErr: true,
			wantFile: "chart/templates/passwd.yaml", wantMsg: []string{"symlink"},
		},
		{
			name: "remote github base",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - cm.yaml\n  - github.com/example/repo//deploy/base?ref=v1.2.3\n",
				"app/cm.yaml":            cm,
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 5, wantMsg: []string{"remote", "is not fetched"},
		},
		{
			name: "remote https resource",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - https://raw.githubusercontent.com/example/repo/main/cm.yaml\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"remote"},
		},
		{
			name: "remote openapi schema and generator file",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "openapi:\n  path: https://example.com/schema.json\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"remote path"},
		},
		{
			name: "remote configMapGenerator file",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "configMapGenerator:\n  - name: x\n    files:\n      - conf=http://169.254.169.254/latest/meta-data\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 6, wantMsg: []string{"remote files"},
		},
		{
			name: "remote base in a base the overlay uses",
			files: map[string]string{
				"overlay/kustomization.yaml": kustHeader + "resources:\n  - ../base\n",
				"base/kustomization.yaml":    kustHeader + "components:\n  - git@github.com:example/repo.git//component\n",
			},
			target: "overlay", wantErr: true,
			wantFile: "base/kustomization.yaml", wantLine: 4, wantMsg: []string{"remote components", "is not fetched"},
		},
		{
			name: "KRM exec function",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - cm.yaml\ngenerators:\n  - fn.yaml\n",
				"app/cm.yaml":            cm,
				"app/fn.yaml": "apiVersion: example.com/v1\nkind: Evil\nmetadata:\n  name: evil\n  annotations:\n" +
					"    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 6, wantMsg: []string{"KRM function", "not allowed"},
		},
		{
			name: "KRM container function inline",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "transformers:\n  - |-\n    apiVersion: example.com/v1\n    kind: Evil\n    metadata:\n      name: evil\n" +
					"      annotations:\n        config.kubernetes.io/function: |\n          container:\n            image: evil:latest\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"KRM function"},
		},
		{
			name: "external plugin",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "transformers:\n  - plugin.yaml\n",
				"app/plugin.yaml":        "apiVersion: someteam.example.com/v1\nkind: ChartInflator\nmetadata:\n  name: x\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"not a kustomize builtin"},
		},
		{
			name: "helmCharts in kustomization",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "helmCharts:\n  - name: minecraft\n    repo: https://itzg.github.io/minecraft-server-charts\n    version: 3.1.3\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"helmCharts chart minecraft 3.1.3 from https://itzg.github.io/minecraft-server-charts is not fetched"},
		},
		{
			name: "helmCharts chart home leaving the kustomization",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "helmGlobals:\n  chartHome: ../../etc\nhelmCharts:\n  - name: passwd\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 6, wantMsg: []string{"helmGlobals.chartHome \"../../etc\" is not in or below app"},
		},
		{
			name: "helmCharts values file outside",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "helmCharts:\n  - name: web\n    valuesFile: /etc/passwd\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantLine: 4, wantMsg: []string{"valuesFile \"/etc/passwd\" is absolute"},
		},
		{
			name: "lookup renders empty",
			files: map[string]string{
				"chart/Chart.yaml": chartYAML,
				"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n" +
					"  found: {{ (lookup \"v1\" \"Secret\" \"default\" \"db\") | len | quote }}\n",
			},
			target: "chart",
			check: func(t *testing.T, set render.ObjectSet) {
				if len(set.Objects) != 1 {
					t.Fatalf("got %d objects, want 1", len(set.Objects))
				}
				if got := set.Objects[0].Obj.Object["data"].(map[string]any)["found"]; got != "0" {
					t.Errorf("lookup gave %v entries, want 0", got)
				}
			},
		},
		{
			name: "getHostByName",
			files: map[string]string{
				"chart/Chart.yaml": chartYAML,
				"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n" +
					"  ip: {{ getHostByName \"example.com\" | quote }}\n",
			},
			target: "chart", wantErr: true,
			wantFile: "chart/templates/cm.yaml", wantLine: 6, wantMsg: []string{"getHostByName is disabled"},
		},
		{
			name: "unvendored dependency",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML + "dependencies:\n  - name: postgresql\n    version: 15.x.x\n    repository: https://charts.bitnami.com/bitnami\n",
				"chart/templates/cm.yaml": cm,
			},
			target: "chart", wantErr: true,
			wantFile: "chart/Chart.yaml", wantLine: 5,
			wantMsg: []string{"dependency postgresql (version 15.x.x from https://charts.bitnami.com/bitnami) is not vendored", "run helm dependency build and commit charts/"},
		},
		{
			name: "template including itself forever",
			files: map[string]string{
				"chart/Chart.yaml":          chartYAML,
				"chart/templates/_loop.tpl": "{{- define \"loop\" -}}{{ include \"loop\" . }}{{- end -}}\n",
				"chart/templates/cm.yaml":   cm + "data:\n  x: {{ include \"loop\" . | quote }}\n",
			},
			target: "chart", wantErr: true,
			wantFile: "chart/templates/", wantMsg: []string{"nested reference"},
		},
		{
			name: "template calling itself with template forever",
			files: map[string]string{
				"chart/Chart.yaml":          chartYAML,
				"chart/templates/_loop.tpl": "{{- define \"loop\" -}}{{ template \"loop\" . }}{{- end -}}\n",
				"chart/templates/cm.yaml":   cm + "data:\n  x: '{{ template \"loop\" . }}'\n",
			},
			target: "chart", wantErr: true,
			wantFile: "chart/templates/", wantMsg: []string{"depth"},
		},
		{
			name: "alias bomb",
			files: map[string]string{
				"app/bomb.yaml": aliasBomb(),
			},
			target: "app", wantErr: true,
			wantFile: "app/bomb.yaml", wantMsg: []string{"alias"},
		},
		{
			name: "alias bomb in a kustomize resource",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - bomb.yaml\n",
				"app/bomb.yaml":          aliasBomb(),
			},
			target: "app", wantErr: true,
			wantFile: "app/bomb.yaml", wantMsg: []string{"alias"},
		},
		{
			name: "alias bomb in chart values",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/values.yaml":       aliasBomb(),
				"chart/templates/cm.yaml": cm,
			},
			target: "chart", wantErr: true,
			wantFile: "chart/values.yaml", wantMsg: []string{"alias"},
		},
		{
			name: "flow nesting 100,000 deep",
			files: map[string]string{
				"app/deep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: " +
					strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/deep.yaml", wantMsg: []string{"nested more than 1000 levels deep"},
		},
		{
			name: "block nesting 100,000 deep",
			files: map[string]string{
				"app/deep.yaml": strings.Repeat("- ", 100_000) + "x\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/deep.yaml", wantMsg: []string{"nested more than 1000 levels deep"},
		},
		{
			name: "nesting 1,001 deep, under go-yaml's own limit",
			files: map[string]string{
				"app/deep.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: " +
					strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/deep.yaml", wantLine: 6, wantMsg: []string{"nested more than 1000 levels deep"},
		},
		{
			name: "aliases nesting 27,000 deep out of 900-deep pieces",
			files: map[string]string{
				"app/deep.yaml": aliasChain(30, 900),
			},
			target: "app", wantErr: true,
			wantFile: "app/deep.yaml", wantMsg: []string{"nested more than 1000 levels deep"},
		},
		{
			name: "aliases nesting 27,000 deep in chart values",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/values.yaml":       aliasChain(30, 900),
				"chart/templates/cm.yaml": cm,
			},
			target: "chart", wantErr: true,
			wantFile: "chart/values.yaml", wantMsg: []string{"nested more than 1000 levels deep"},
		},
		{
			name:   "50 MB file",
			files:  map[string]string{"app/cm.yaml": cm},
			setup:  bigFile("app/huge.yaml", 50<<20),
			target: "app", wantErr: true,
			wantFile: "app/huge.yaml", wantMsg: []string{"over the 10485760-byte limit"},
		},
		{
			name: "50 MB file as a kustomize resource",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - huge.yaml\n",
			},
			setup:  bigFile("app/huge.yaml", 50<<20),
			target: "app", wantErr: true,
			wantFile: "app/huge.yaml", wantMsg: []string{"byte limit"},
		},
		{
			name: "total size limit",
			files: map[string]string{
				"app/a.yaml": padded("cm"),
				"app/b.yaml": padded("cm2"),
			},
			target:  "app",
			opts:    func(o *render.Options) { o.MaxTotalBytes = 1000 },
			wantErr: true, wantFile: "app/b.yaml", wantMsg: []string{"more than 1000 bytes in total"},
		},
		{
			name: "template output over the per-target output limit",
			files: map[string]string{
				"chart/Chart.yaml": chartYAML,
				"chart/templates/big.yaml": "{{- range $i := until 40 }}\n---\n" + strings.Replace(cm, "name: cm", "name: cm{{ $i }}", 1) +
					"data:\n  x: {{ repeat 1000000 \"x\" | quote }}\n{{- end }}\n",
			},
			target: "chart", wantErr: true,
			wantFile: "chart", wantMsg: []string{"renders more than 33554432 bytes of manifests (the limit per target)"},
		},
		{
			name: "plain files over the per-target output limit",
			files: map[string]string{
				"app/a.yaml": padded("cm"),
				"app/b.yaml": padded("cm2"),
			},
			target:  "app",
			opts:    func(o *render.Options) { o.MaxOutputBytes = 1000 },
			wantErr: true, wantFile: "app/b.yaml", wantMsg: []string{"more than 1000 bytes of manifests"},
		},
		{
			name: "kustomize output over the per-target output limit",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - a.yaml\n  - b.yaml\n",
				"app/a.yaml":             padded("cm"),
				"app/b.yaml":             padded("cm2"),
			},
			target:  "app",
			opts:    func(o *render.Options) { o.MaxOutputBytes = 1000 },
			wantErr: true, wantFile: "app/kustomization.yaml", wantMsg: []string{"more than 1000 bytes of manifests"},
		},
		{
			name: "invalid YAML",
			files: map[string]string{
				"app/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  a: [unclosed\n  b: c\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/bad.yaml", wantLine: 6, wantMsg: []string{"invalid YAML"},
		},
		{
			name: "invalid YAML in a kustomize resource",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - bad.yaml\n",
				"app/bad.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n\tname: bad\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/bad.yaml", wantLine: 4, wantMsg: []string{"invalid YAML", "cannot start any token"},
		},
		{
			name: "invalid YAML in a rendered template",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/templates/cm.yaml": cm + "data:\n  a: {{ \"[unclosed\" }}\n  b: c\n",
			},
			target: "chart", wantErr: true,
			wantFile: "chart/templates/cm.yaml", wantMsg: []string{"rendered output line", "invalid YAML"},
		},
		{
			name: "duplicate object across files",
			files: map[string]string{
				"app/a.yaml": cm,
				"app/b.yaml": "---\n" + cm,
			},
			target: "app", wantErr: true,
			wantFile: "app/b.yaml", wantLine: 2, wantMsg: []string{"ConfigMap/cm is defined twice", "app/a.yaml:1"},
		},
		{
			// A plain directory is read as Argo CD's repo server reads it
			// (sigs.k8s.io/yaml, go-yaml v2): the last value wins, with a note.
			name: "duplicate mapping key in a plain directory",
			files: map[string]string{
				"app/a.yaml": cm + "  name: again\n",
			},
			target: "app",
			check: func(t *testing.T, set render.ObjectSet) {
				if len(set.Objects) != 1 || set.Objects[0].Obj.GetName() != "again" {
					t.Errorf("objects %v, want the ConfigMap named by the last name key, again", set.Objects)
				}
				want := `app/a.yaml:5: duplicate key "name" (first on line 4): read as Argo CD reads it, the last value wins (kustomize, and so Flux, refuses the file)`
				if !slices.Contains(set.Notes, want) {
					t.Errorf("notes %q, want %q", set.Notes, want)
				}
			},
		},
		{
			// kustomize refuses it (kyaml: "mapping key already defined"), so
			// a kustomize target (and every Flux Kustomization) fails as the
			// controller's build does.
			name: "duplicate mapping key under kustomize",
			files: map[string]string{
				"app/kustomization.yaml": "resources: [a.yaml]\n",
				"app/a.yaml":             cm + "  name: again\n",
			},
			target: "app", wantErr: true,
			wantFile: "app/kustomization.yaml", wantMsg: []string{`mapping key "name" already defined at line 4`},
		},
		{
			name:   "target outside the checkout",
			files:  map[string]string{"app/cm.yaml": cm},
			target: "../", wantErr: true,
			wantFile: "../", wantMsg: []string{"leads outside the repository"},
		},
		{
			name:   "absolute target",
			files:  map[string]string{"app/cm.yaml": cm},
			target: "/etc", wantErr: true,
			wantFile: "/etc", wantMsg: []string{"absolute path"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			if tc.setup != nil {
				tc.setup(t, root)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			opts := render.DefaultOptions()
			opts.Timeout = 20 * time.Second
			if tc.opts != nil {
				tc.opts(&opts)
			}
			set, err := render.Render(ctx, root, tc.target, opts)
			if ctx.Err() != nil {
				t.Fatalf("render did not return in time")
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				var out bytes.Buffer
				_ = render.WriteYAML(&out, set.Objects)
				if strings.Contains(out.String(), outsideMarker) {
					t.Errorf("output contains content from outside the checkout")
				}
				if tc.check != nil {
					tc.check(t, set)
				}
				return
			}
			if err == nil {
				t.Fatalf("Render succeeded with %d objects, want an error", len(set.Objects))
			}
			var re *render.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %q (%T) is not a *render.Error", err, err)
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if !strings.HasPrefix(re.File, tc.wantFile) {
				t.Errorf("error names file %q, want %q", re.File, tc.wantFile)
			}
			if tc.wantLine > 0 && re.Line != tc.wantLine {
				t.Errorf("error names line %d, want %d", re.Line, tc.wantLine)
			}
			for _, w := range tc.wantMsg {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, leak := range []string{outsideMarker, "root:x:0:0", filepath.Dir(root)} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q leaks %q", msg, leak)
				}
			}
			if len(msg) > 2000 {
				t.Errorf("error is %d bytes long; too long for a PR comment", len(msg))
			}
		})
	}
}

// padded is a ConfigMap named name with a 600-byte value, for the size limits.
func padded(name string) string {
	return strings.Replace(cm, "name: cm", "name: "+name, 1) + "data:\n  x: " + strings.Repeat("a", 600) + "\n"
}

// inTree is the path of name under root, its parent directories created.
func inTree(t *testing.T, root, name string) string {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(target, link string) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		if err := os.Symlink(target, inTree(t, root, link)); err != nil {
			t.Fatal(err)
		}
	}
}

func bigFile(name string, size int) func(t *testing.T, root string) {
	return func(t *testing.T, root string) {
		f, err := os.Create(inTree(t, root, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		line := []byte("# " + strings.Repeat("x", 1021) + "\n")
		for written := 0; written < size; written += len(line) {
			if _, err := f.Write(line); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// aliasBomb is the YAML "billion laughs": nine levels of ten aliases each.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n")
	b.WriteString("  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		b.WriteString("  " + n + ": &" + n + " [")
		for j := range 9 {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString("*" + prev)
		}
		b.WriteString("]\n")
		prev = n
	}
	return b.String()
}

// aliasChain builds a ConfigMap whose data.x is n pieces, each nesting the previous
// one (through an alias) per levels deeper: n*levels deep in all, while no single
// piece is deeper than levels.
func aliasChain(n, levels int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n")
	b.WriteString("  p0: &p0 x\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  p%d: &p%d %s*p%d%s\n", i, i, strings.Repeat("[", levels), i-1, strings.Repeat("]", levels))
	}
	fmt.Fprintf(&b, "  x: *p%d\n", n)
	return b.String()
}
