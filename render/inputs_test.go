package render_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/bench"
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
		"Options":      {"Renderer", "Namespace", "Plain", "Helm", "Kustomize", "ArgoCDHooks", "Substitute", "SubstituteAlways", "SubstituteLenient", "MaxFileBytes", "MaxTotalBytes", "MaxOutputBytes", "Timeout", "MaxMemoryBytes", "MaxCPUTime", "Checkout", "Remote", "Budget", "OCI"},
		"PlainOptions": {"Recurse", "Include", "Exclude", "Jsonnet"},
		// FluxValuesFiles and IgnoreMissingValuesFiles change how ValuesFiles merge,
		// not which files are read: the walker follows ValuesFiles either way.
		"HelmOptions": {"ReleaseName", "ValuesFiles", "FluxValuesFiles", "IgnoreMissingValuesFiles", "Values", "SkipCRDs", "KubeVersion", "PostRenderers", "PostRenderStrategy", "CommonLabels", "CommonAnnotations", "Chart", "deps", "checkoutValues", "inflate"},
		// Helm (helmCharts) reads at or below the kustomization, which the
		// walker takes whole, and fetched charts (Remote).
		"KustomizeOptions": {"NamePrefix", "NameSuffix", "Namespace", "Images", "CommonLabels", "CommonAnnotations", "MetadataOnlyAnnotations", "Patches", "Components", "RemoteBases", "Helm"},
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

// findCase is one FindInputs lookup: a target and its options.
type findCase struct {
	target string
	opts   render.Options
}

// checkSharedFinder looks every case up in one shared finder (in the given
// order, then again, and concurrently) and compares each with a finder that
// shares nothing and looks paths up through os.Root, as the walk of one target
// on its own does: inputs and content keys must be the same.
func checkSharedFinder(t *testing.T, root string, cases []findCase) {
	t.Helper()
	want := make([]render.Inputs, len(cases))
	wantKey := make([]string, len(cases))
	for i, c := range cases {
		ref := render.NewUnsharedInputFinder(root)
		want[i] = ref.Find(c.target, c.opts)
		wantKey[i], _ = ref.ContentKey(c.target, c.opts)
		ref.Close()
	}
	for _, order := range []string{"forward", "backward", "concurrent"} {
		t.Run(order, func(t *testing.T) {
			f := render.NewInputFinder(root)
			defer f.Close()
			got := make([]render.Inputs, len(cases))
			gotKey := make([]string, len(cases))
			switch order {
			case "forward":
				for i, c := range cases {
					got[i] = f.Find(c.target, c.opts)
					gotKey[i], _ = f.ContentKey(c.target, c.opts)
				}
			case "backward":
				for i := len(cases) - 1; i >= 0; i-- {
					got[i] = f.Find(cases[i].target, cases[i].opts)
					gotKey[i], _ = f.ContentKey(cases[i].target, cases[i].opts)
				}
			default:
				var wg sync.WaitGroup
				for i, c := range cases {
					wg.Go(func() {
						got[i] = f.Find(c.target, c.opts)
						gotKey[i], _ = f.ContentKey(c.target, c.opts)
					})
				}
				wg.Wait()
			}
			for i, c := range cases {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("%s (%s): shared finder found\n%+v\nalone\n%+v", c.target, c.opts.Renderer, got[i], want[i])
				}
				if gotKey[i] != wantKey[i] {
					t.Errorf("%s (%s): content key %q, alone %q", c.target, c.opts.Renderer, gotKey[i], wantKey[i])
				}
				// What the caller changes is its own.
				for range 2 {
					mine := f.Find(c.target, c.opts)
					mine.Files = append(mine.Files[:0], "changed")
					mine.Dirs = append(mine.Dirs[:0], "changed")
				}
				if again := f.Find(c.target, c.opts); !reflect.DeepEqual(again, want[i]) {
					t.Errorf("%s: changing the Inputs returned changed the finder's: %+v", c.target, again)
				}
			}
		})
	}
}

// TestInputFinderBenchLayout: on `make bench`'s repository (kustomize overlays
// sharing bases and components, Helm charts with values per environment, plain
// directories; both variants), one finder shared by all targets finds what
// each target's walk on its own finds, with the renderer given and detected.
func TestInputFinderBenchLayout(t *testing.T) {
	for _, variant := range []bench.Variant{bench.Config, bench.Flux} {
		t.Run(string(variant), func(t *testing.T) {
			r, err := bench.Generate(40, variant)
			if err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			if err := bench.Write(root, r.Files); err != nil {
				t.Fatal(err)
			}
			var cases []findCase
			unknown := 0
			for _, bt := range r.Targets {
				opts := bt.RenderOptionsFor(variant)
				auto := opts
				auto.Renderer = render.RendererAuto
				cases = append(cases, findCase{bt.Path, opts}, findCase{bt.Path, auto})
				if render.FindInputs(root, bt.Path, opts).Unknown != "" {
					unknown++
				}
			}
			if unknown > 0 {
				t.Errorf("%d of %d bench targets have unknown inputs; the layout should be followed", unknown, len(r.Targets))
			}
			// Paths that are not targets: missing, a file, the root.
			cases = append(cases, findCase{"nowhere/at/all", render.DefaultOptions()}, findCase{".", render.DefaultOptions()},
				findCase{r.Targets[0].Path + "/kustomization.yaml", render.DefaultOptions()})
			checkSharedFinder(t, root, cases)
		})
	}
}

// TestInputFinderSymlinksAndMissing: a finder shared by targets still makes
// every symlink on the way unknown (a symlinked target, a symlinked parent
// directory of the target or of a file it names, a symlink inside a tree),
// whichever target looked the other paths up first, and a file named but
// missing (or under a file) is a file input, not unknown.
func TestInputFinderSymlinksAndMissing(t *testing.T) {
	root := writeTree(t, map[string]string{
		"shared/cm.yaml":               cm,
		"shared/sub/cm.yaml":           cm,
		"plain/cm.yaml":                cm,
		"plain/deep/cm.yaml":           cm,
		"ok/kustomization.yaml":        kustHeader + "resources: [../shared/cm.yaml, ../shared/sub]\n",
		"vialink/kustomization.yaml":   kustHeader + "resources: [../link/cm.yaml]\n",
		"linkeddir/kustomization.yaml": kustHeader + "resources: [../link]\n",
		"missing/kustomization.yaml":   kustHeader + "resources: [gone.yaml, ../shared/cm.yaml/under, ../nodir/x.yaml]\n",
		"real/k/kustomization.yaml":    kustHeader + "resources: [cm.yaml]\n",
		"real/k/cm.yaml":               cm,
	})
	for link, to := range map[string]string{
		"link":               "shared",     // a directory named by a kustomization
		"linkk":              "ok",         // a target directory
		"parent":             "real",       // a parent of a target directory
		"plain/deep/ln.yaml": "../cm.yaml", // inside a plain tree
	} {
		if err := os.Symlink(to, filepath.Join(root, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	k := render.DefaultOptions()
	k.Renderer = render.RendererKustomize
	p := render.DefaultOptions()
	p.Renderer = render.RendererPlain
	cases := []findCase{{"ok", k}, {"vialink", k}, {"linkeddir", k}, {"linkk", k}, {"parent/k", k}, {"real/k", k}, {"missing", k}, {"plain", p}, {"plain/deep", p}, {"shared", p}}
	wantUnknown := map[string]bool{"vialink": true, "linkeddir": true, "linkk": true, "parent/k": true, "plain": true, "plain/deep": true}
	f := render.NewInputFinder(root)
	defer f.Close()
	for _, c := range cases {
		in := f.Find(c.target, c.opts)
		if (in.Unknown != "") != wantUnknown[c.target] {
			t.Errorf("%s: unknown %q, want unknown %v", c.target, in.Unknown, wantUnknown[c.target])
		}
		if c.target == "missing" {
			for _, m := range []string{"missing/gone.yaml", "shared/cm.yaml/under", "nodir/x.yaml"} {
				if _, ok := in.Touched([]string{m}); !ok {
					t.Errorf("missing %s is not an input: %+v", m, in)
				}
			}
		}
	}
	checkSharedFinder(t, root, cases)
}

// TestInputFinderReadLimitsPerTarget: a target's read limits count what its
// walk reads even when another target of the shared finder read the same
// files first: over the limit its inputs are unknown, whatever the order.
func TestInputFinderReadLimitsPerTarget(t *testing.T) {
	root := writeTree(t, map[string]string{
		"base/kustomization.yaml": kustHeader + "resources: [cm.yaml]\n# " + strings.Repeat("x", 2000) + "\n",
		"base/cm.yaml":            cm,
		"a/kustomization.yaml":    kustHeader + "resources: [../base]\n",
	})
	small := render.DefaultOptions()
	small.Renderer = render.RendererKustomize
	small.MaxTotalBytes = 1000
	def := render.DefaultOptions()
	def.Renderer = render.RendererKustomize
	for _, order := range [][]render.Options{{def, small}, {small, def}} {
		f := render.NewInputFinder(root)
		for _, o := range order {
			in := f.Find("a", o)
			if limited := o.MaxTotalBytes == 1000; (in.Unknown != "") != limited {
				t.Errorf("MaxTotalBytes %d: unknown %q", o.MaxTotalBytes, in.Unknown)
			}
		}
		f.Close()
	}
	small.MaxTotalBytes, small.MaxFileBytes = 0, 1000
	checkSharedFinder(t, root, []findCase{{"a", def}, {"a", small}, {"base", small}, {"base", def}})
}
