package render_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestFindInputsKustomize follows an overlay through a base, a component, patch
// files, generator files and CRDs: a change to any of them touches the target,
// a change to a sibling overlay or an unused file does not.
func TestFindInputsKustomize(t *testing.T) {
	root := writeTree(t, map[string]string{
		"base/kustomization.yaml":       kustHeader + "resources: [deploy.yaml, ../shared/svc]\ncrds: [crd.yaml]\n",
		"base/deploy.yaml":              cm,
		"base/crd.yaml":                 cm,
		"base/unused.yaml":              cm,
		"shared/svc/kustomization.yaml": kustHeader + "resources: [svc.yaml]\n",
		"shared/svc/svc.yaml":           cm,
		"comp/kustomization.yaml":       "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches: [{path: comp-patch.yaml}]\n",
		"comp/comp-patch.yaml":          cm,
		"overlays/prod/kustomization.yaml": kustHeader + `resources: [../../base]
components: [../../comp]
patchesStrategicMerge: [smp.yaml, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n"]
patchesJson6902: [{target: {kind: ConfigMap, name: cm}, path: json.yaml}]
configMapGenerator:
- name: settings
  files: [app.properties, key=conf/other.txt]
  envs: [env/prod.env]
secretGenerator:
- name: creds
  env: creds.env
replacements: [{path: repl.yaml}]
configurations: [conf.yaml]
`,
		"overlays/prod/smp.yaml":              cm,
		"overlays/prod/json.yaml":             "[]",
		"overlays/prod/app.properties":        "a=1",
		"overlays/prod/conf/other.txt":        "x",
		"overlays/prod/env/prod.env":          "A=1",
		"overlays/prod/creds.env":             "B=2",
		"overlays/prod/repl.yaml":             "[]",
		"overlays/prod/conf.yaml":             "{}",
		"overlays/staging/kustomization.yaml": kustHeader + "resources: [../../base]\n",
	})
	in := render.FindInputs(root, "overlays/prod", render.DefaultOptions())
	if in.Unknown != "" {
		t.Fatalf("unknown: %s", in.Unknown)
	}
	for _, f := range []string{
		"overlays/prod/kustomization.yaml", "overlays/prod/Kustomization", "base/kustomization.yaml", "base/deploy.yaml", "base/crd.yaml",
		"shared/svc/svc.yaml", "shared/svc/kustomization.yaml", "comp/kustomization.yaml", "comp/comp-patch.yaml",
		"overlays/prod/smp.yaml", "overlays/prod/json.yaml", "overlays/prod/app.properties", "overlays/prod/conf/other.txt",
		"overlays/prod/env/prod.env", "overlays/prod/creds.env", "overlays/prod/repl.yaml", "overlays/prod/conf.yaml",
	} {
		if _, ok := in.Touched([]string{"README.md", f}); !ok {
			t.Errorf("a change to %s does not touch the overlay; inputs %v", f, in.Files)
		}
	}
	for _, f := range []string{"base/unused.yaml", "overlays/staging/kustomization.yaml", "README.md"} {
		if _, ok := in.Touched([]string{f}); ok {
			t.Errorf("a change to %s touches the overlay", f)
		}
	}
	// Components given by the target's options (Argo CD, Flux) count too.
	opts := render.DefaultOptions()
	opts.Kustomize.Components = []string{"comp"}
	if in, ok := render.FindInputs(root, "overlays/staging", opts).Touched([]string{"comp/comp-patch.yaml"}); !ok {
		t.Errorf("an options component is not an input: %v", in)
	}
}

// TestFindInputsHelm: the chart directory, values files elsewhere, and file://
// dependencies.
func TestFindInputsHelm(t *testing.T) {
	root := writeTree(t, map[string]string{
		"charts/app/Chart.yaml":              chartYAML + "dependencies:\n- {name: lib, version: 0.1.0, repository: file://../lib}\n- {name: redis, version: 1.0.0, repository: https://charts.example.com}\n",
		"charts/app/templates/cm.yaml":       cm,
		"charts/app/charts/redis/Chart.yaml": chartYAML,
		"charts/lib/Chart.yaml":              chartYAML,
		"charts/other/Chart.yaml":            chartYAML,
		"env/prod/values.yaml":               "a: 1\n",
		"env/staging/values.yaml":            "a: 2\n",
	})
	opts := render.DefaultOptions()
	opts.Helm.ValuesFiles = []string{"env/prod/values.yaml"}
	in := render.FindInputs(root, "charts/app", opts)
	if in.Unknown != "" {
		t.Fatal(in.Unknown)
	}
	for _, f := range []string{"charts/app/templates/cm.yaml", "charts/app/charts/redis/Chart.yaml", "charts/lib/Chart.yaml", "env/prod/values.yaml"} {
		if _, ok := in.Touched([]string{f}); !ok {
			t.Errorf("a change to %s does not touch the chart: %+v", f, in)
		}
	}
	for _, f := range []string{"charts/other/Chart.yaml", "env/staging/values.yaml"} {
		if _, ok := in.Touched([]string{f}); ok {
			t.Errorf("a change to %s touches the chart", f)
		}
	}
	if in.Remote {
		t.Error("a chart with its dependencies vendored reads nothing remote")
	}
	if _, ok := render.ContentKey(root, "charts/app", opts); !ok {
		t.Error("a chart with local inputs has no content key")
	}
	// An unvendored dependency is fetched: its render is not shared by content.
	if err := os.RemoveAll(filepath.Join(root, "charts/app/charts")); err != nil {
		t.Fatal(err)
	}
	if in := render.FindInputs(root, "charts/app", opts); !in.Remote || in.Unknown != "" {
		t.Errorf("unvendored dependency: %+v, want Remote", in)
	}
	if _, ok := render.ContentKey(root, "charts/app", opts); ok {
		t.Error("a chart with a fetched dependency has a content key")
	}
}

// TestFindInputsPlainAndJsonnet: a plain directory is its tree; jsonnet adds its
// libraries and the files it imports from outside the directory.
func TestFindInputsPlainAndJsonnet(t *testing.T) {
	root := writeTree(t, map[string]string{
		"apps/web/cm.yaml":           cm,
		"apps/web/sub/more.yaml":     cm,
		"apps/jn/main.jsonnet":       "local s = import '../../shared/util.libsonnet';\nlocal l = import \"k.libsonnet\";\n{}",
		"shared/util.libsonnet":      "importstr 'data.txt'",
		"shared/data.txt":            "x",
		"shared/unrelated.libsonnet": "{}",
		"vendor/k.libsonnet":         "{}",
	})
	if _, ok := render.FindInputs(root, "apps/web", render.DefaultOptions()).Touched([]string{"apps/web/sub/more.yaml"}); !ok {
		t.Error("plain: a file in a subdirectory does not touch the target")
	}
	opts := render.DefaultOptions()
	opts.Plain.Jsonnet = &render.JsonnetOptions{Libs: []string{"vendor"}}
	in := render.FindInputs(root, "apps/jn", opts)
	if in.Unknown != "" {
		t.Fatal(in.Unknown)
	}
	for _, f := range []string{"shared/util.libsonnet", "shared/data.txt", "vendor/k.libsonnet", "apps/jn/main.jsonnet"} {
		if _, ok := in.Touched([]string{f}); !ok {
			t.Errorf("a change to %s does not touch the jsonnet target: %+v", f, in)
		}
	}
	if _, ok := in.Touched([]string{"shared/unrelated.libsonnet"}); ok {
		t.Error("an unimported file touches the jsonnet target")
	}
}

// TestFindInputsUnknownFallsBack: what the walker cannot follow makes the
// target touched by any change (it is rendered), never skipped.
func TestFindInputsUnknownFallsBack(t *testing.T) {
	cases := map[string]map[string]string{
		"remote base":             {"k/kustomization.yaml": kustHeader + "resources:\n- github.com/org/repo//base?ref=v1\n"},
		"generators":              {"k/kustomization.yaml": kustHeader + "generators: [gen.yaml]\n", "k/gen.yaml": cm},
		"unknown field":           {"k/kustomization.yaml": kustHeader + "someFutureField: [x.yaml]\n"},
		"absolute path":           {"k/kustomization.yaml": kustHeader + "resources: [/etc/x.yaml]\n"},
		"leaves the repo":         {"k/kustomization.yaml": kustHeader + "resources: [../../x.yaml]\n"},
		"jsonnet computed import": {"k/main.jsonnet": "local f = 'x'; import f"},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, files)
			opts := render.DefaultOptions()
			opts.Plain.Jsonnet = &render.JsonnetOptions{}
			in := render.FindInputs(root, "k", opts)
			if in.Unknown == "" {
				t.Fatalf("inputs known: %+v", in)
			}
			if _, ok := in.Touched(nil); !ok {
				t.Error("unknown inputs are not touched by every change")
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		root := writeTree(t, map[string]string{
			"k/kustomization.yaml": kustHeader + "resources: [cm.yaml]\n",
			"other/cm.yaml":        cm,
		})
		if err := os.Symlink("../other/cm.yaml", filepath.Join(root, "k", "cm.yaml")); err != nil {
			t.Fatal(err)
		}
		if in := render.FindInputs(root, "k", render.DefaultOptions()); in.Unknown == "" {
			t.Fatalf("inputs known through a symlink: %+v", in)
		}
	})
}

// TestFindInputsKnowsEveryOption fails when render.Options gains a field: decide
// whether it names files (FindInputs must follow them), then list it here.
func TestFindInputsKnowsEveryOption(t *testing.T) {
	known := map[string][]string{
		"Options":      {"Renderer", "Namespace", "Plain", "Helm", "Kustomize", "ArgoCDHooks", "MaxFileBytes", "MaxTotalBytes", "MaxOutputBytes", "Timeout", "MaxMemoryBytes", "MaxCPUTime", "Remote", "OCI"},
		"PlainOptions": {"Recurse", "Include", "Exclude", "Jsonnet"},
		// FluxValuesFiles and IgnoreMissingValuesFiles change how ValuesFiles merge,
		// not which files are read: the walker follows ValuesFiles either way.
		"HelmOptions":      {"ReleaseName", "ValuesFiles", "FluxValuesFiles", "IgnoreMissingValuesFiles", "Values", "SkipCRDs", "KubeVersion", "Chart", "deps", "checkoutValues"},
		"KustomizeOptions": {"NamePrefix", "NameSuffix", "Namespace", "Images", "CommonLabels", "CommonAnnotations", "Patches", "Components", "RemoteBases"},
		"JsonnetOptions":   {"ExtVars", "TLAs", "Libs"},
	}
	for _, v := range []any{render.Options{}, render.PlainOptions{}, render.HelmOptions{}, render.KustomizeOptions{}, render.JsonnetOptions{}} {
		typ := reflect.TypeOf(v)
		var fields []string
		for i := range typ.NumField() {
			fields = append(fields, typ.Field(i).Name)
		}
		if !slices.Equal(fields, known[typ.Name()]) {
			t.Errorf("render.%s has fields %s; FindInputs knows %s", typ.Name(), strings.Join(fields, ", "), strings.Join(known[typ.Name()], ", "))
		}
	}
}
