package render

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/types"
)

// TestMarkDocuments: the marker goes above the first line of content of
// every document, after comments, blank lines, directives and a byte-order
// mark, and a document whose content starts on its --- line is reported.
func TestMarkDocuments(t *testing.T) {
	const m = "# M\n"
	cases := []struct {
		name, in, want string
		ok             bool
	}{
		{"one", "a: 1\nb: 2\n", "# M\na: 1\nb: 2\n", true},
		{"comments first", "# license\n\n# about\na: 1\n", "# license\n\n# about\n# M\na: 1\n", true},
		{"documents", "a: 1\n---\nb: 2\n---   \n# c\nc: 3\n", "# M\na: 1\n---\n# M\nb: 2\n---   \n# c\n# M\nc: 3\n", true},
		{"leading separator", "---\na: 1\n", "---\n# M\na: 1\n", true},
		{"separator with a comment", "a: 1\n--- # next\nb: 2\n", "# M\na: 1\n--- # next\n# M\nb: 2\n", true},
		{"document end", "a: 1\n...\nb: 2\n", "# M\na: 1\n...\n# M\nb: 2\n", true},
		{"directive", "%YAML 1.2\n---\na: 1\n", "%YAML 1.2\n---\n# M\na: 1\n", true},
		{"content on the separator", "a: 1\n--- {b: 2}\n", "# M\na: 1\n--- {b: 2}\n", false},
		{"block scalar lines are not documents", "a: |\n  x\n  # y\nb: 2\n", "# M\na: |\n  x\n  # y\nb: 2\n", true},
		{"crlf", "a: 1\r\n---\r\nb: 2\r\n", "# M\na: 1\r\n---\r\n# M\nb: 2\r\n", true},
		{"byte-order mark", "\xef\xbb\xbfa: 1\n", "\xef\xbb\xbf# M\na: 1\n", true},
		{"json", "{\"a\": 1}", "# M\n{\"a\": 1}", true},
		{"no final newline", "a: 1", "# M\na: 1", true},
		{"empty", "", "", true},
	}
	for _, c := range cases {
		got, ok := markDocuments([]byte(c.in), m)
		if string(got) != c.want || ok != c.ok {
			t.Errorf("%s: markDocuments(%q) = %q, %v; want %q, %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestSourceMarkers renders kustomize layouts with source markers and with
// origin annotations and holds the two equal (objects, sources, hash
// suffixes, notes, errors), and checks which layouts the markers account for
// and which are built again with origin annotations.
func TestSourceMarkers(t *testing.T) {
	const k = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	const comp = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
	deploy := "# Copyright header\n\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n      - name: web\n        image: registry.example/web:1.0\n"
	config := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  annotations: {}\ndata:\n  A: \"1\"\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  p: x\n"
	// The layout of `make bench`'s overlays: a base over a common base, two
	// components, an overlay with a namespace, labels, an image tag, a
	// generated ConfigMap and strategic merge patches.
	bench := map[string]string{
		"common/kustomization.yaml":         k + "resources: [rbac.yaml]\n",
		"common/rbac.yaml":                  "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n",
		"base/kustomization.yaml":           k + "resources:\n- ../common\n- deploy.yaml\n- config.yaml\n",
		"base/deploy.yaml":                  deploy,
		"base/config.yaml":                  config,
		"components/mon/kustomization.yaml": comp + "resources: [mon.json]\n",
		"components/mon/mon.json":           `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics"}, "spec": {"ports": [{"port": 9090}]}}`,
		"overlay/kustomization.yaml": k + "namespace: prod\nresources: [../base]\ncomponents: [../components/mon]\nlabels:\n- pairs: {env: prod}\n" +
			"images:\n- name: registry.example/web\n  newTag: \"2.0\"\nconfigMapGenerator:\n- name: env\n  literals: [E=prod]\nsecretGenerator:\n- name: token\n  literals: [T=x]\n" +
			"patches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: settings\n    data:\n      B: \"2\"\n" +
			"- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: web\n    spec:\n      replicas: 3\n",
	}
	with := func(files map[string]string, more map[string]string) map[string]string {
		out := maps.Clone(files)
		maps.Copy(out, more)
		return out
	}
	cases := []struct {
		name   string
		files  map[string]string
		target string
		marked bool
	}{
		{"bench layout", bench, "overlay", true},
		{"flux directory without a kustomization", map[string]string{"apps/deploy.yaml": deploy, "apps/config.yaml": config, "apps/sub/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n"}, "apps", true},
		{"json 6902 patch", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    - op: add\n      path: /metadata/annotations\n      value: {patched: \"true\"}\n"}), "overlay", false},
		{"generator merging into the base's", with(bench, map[string]string{
			"base/kustomization.yaml":    k + "resources: [deploy.yaml]\nconfigMapGenerator:\n- name: env\n  literals: [A=1]\n",
			"overlay/kustomization.yaml": k + "resources: [../base]\nconfigMapGenerator:\n- name: env\n  behavior: merge\n  literals: [B=2]\n"}), "overlay", false},
		{"generator without a hash", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\ngeneratorOptions: {disableNameSuffixHash: true, annotations: {a: b}}\nconfigMapGenerator:\n- name: env\n  literals: [E=prod]\n- name: env2\n  options: {annotations: {c: d}}\n  literals: [F=x]\n- name: env3\n  options:\n  literals: [G=x]\n"}), "overlay", true},
		{"generator options from a merge key", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nconfigMapGenerator:\n- &g\n  name: env\n  literals: [E=prod]\n- <<: *g\n  name: env2\n"}), "overlay", false},
		{"generators at two levels whose names one holds the other", with(bench, map[string]string{
			"base/kustomization.yaml":    k + "resources: [deploy.yaml]\nconfigMapGenerator:\n- name: env\n  literals: [A=1]\n",
			"overlay/kustomization.yaml": k + "resources: [../base]\nnameSuffix: -x\nconfigMapGenerator:\n- name: env-extra\n  literals: [B=2]\n"}), "overlay", true},
		{"generators at two levels", with(bench, map[string]string{
			"base/kustomization.yaml":    k + "resources: [deploy.yaml]\nconfigMapGenerator:\n- name: base-env\n  literals: [A=1]\n",
			"overlay/kustomization.yaml": k + "resources: [../base]\nnamePrefix: p-\nconfigMapGenerator:\n- name: overlay-env\n  literals: [B=2]\n"}), "overlay", true},
		{"a file both a resource and a patch", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base, svc.yaml]\npatches:\n- path: svc.yaml\n",
			"overlay/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n"}), "overlay", false},
		{"a file both a resource and a patch, in deprecated fields", with(bench, map[string]string{"overlay/kustomization.yaml": k + "bases: [../base]\nresources: [svc.yaml]\npatchesStrategicMerge: [svc.yaml]\n",
			"overlay/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n"}), "overlay", false},
		{"deprecated bases", with(bench, map[string]string{"overlay/kustomization.yaml": k + "bases: [../base]\n"}), "overlay", true},
		{"an anchored generator annotations map aliased as labels", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nconfigMapGenerator:\n- name: app\n  literals: [k=v]\n  options:\n    annotations: &meta {team: a}\n    labels: *meta\n"}), "overlay", false},
		{"a replacement copying a whole annotations map", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nreplacements:\n- source: {kind: Deployment, name: web, fieldPath: metadata.annotations}\n  targets:\n  - select: {kind: ConfigMap, name: settings}\n    fieldPaths: [metadata.annotations]\n"}), "overlay", false},
		{"a replacement of one value", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nreplacements:\n- source: {kind: Deployment, name: web}\n  targets:\n  - select: {kind: ConfigMap, name: settings}\n    fieldPaths: [data.A]\n"}), "overlay", true},
		{"a transformer plugin", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\ntransformers: [t.yaml]\n",
			"overlay/t.yaml": "apiVersion: builtin\nkind: LabelTransformer\nmetadata: {name: l}\nlabels: {team: a}\nfieldSpecs: [{path: metadata/labels, create: true}]\n"}), "overlay", true},
		{"a patch transformer plugin patching with a resource file", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base, svc.yaml]\ntransformers: [t.yaml]\n",
			"overlay/t.yaml":   "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: svc.yaml\n",
			"overlay/svc.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  type: NodePort\n"}), "overlay", false},
		{"an inline replacement transformer copying annotations", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: ReplacementTransformer\n  metadata: {name: r}\n  replacements:\n  - source: {kind: Deployment, name: web, fieldPath: metadata.annotations}\n    targets:\n    - select: {kind: ConfigMap, name: settings}\n      fieldPaths: [metadata.annotations]\n"}), "overlay", false},
		// The build starts at the target's kustomization, not at a wrapper,
		// unless it sets what kustomize reads only at the top.
		{"sortOptions at the top", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nsortOptions: {order: fifo}\n"}), "overlay", false},
		{"sortOptions in a base", with(bench, map[string]string{"base/kustomization.yaml": k + "resources:\n- ../common\n- deploy.yaml\n- config.yaml\nsortOptions: {order: fifo}\n"}), "overlay", true},
		{"buildMetadata at the top", with(bench, map[string]string{"overlay/kustomization.yaml": k + "resources: [../base]\nbuildMetadata: [managedByLabel]\n"}), "overlay", false},
		{"buildMetadata in a base", with(bench, map[string]string{"base/kustomization.yaml": k + "resources:\n- ../common\n- deploy.yaml\n- config.yaml\nbuildMetadata: [managedByLabel, originAnnotations]\n"}), "overlay", true},
		{"a Component at the top", with(bench, map[string]string{"overlay/kustomization.yaml": comp + "resources: [../base]\n"}), "overlay", false},
		// The wrapper merges the target's transformer configuration once more
		// into kustomize's defaults, where the target's varReference shadows
		// the default metadata/annotations one: any configurations or crds
		// keep the wrapper.
		{"configurations at the top", map[string]string{
			"base/kustomization.yaml":    k + "resources: [sa.yaml, cm.yaml]\n",
			"base/sa.yaml":               "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n  annotations:\n    config: $(CM)\n",
			"base/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n",
			"overlay/kustomization.yaml": k + "resources: [../base]\nconfigurations: [vr.yaml]\nvars:\n- name: CM\n  objref: {apiVersion: v1, kind: ConfigMap, name: cfg}\n",
			"overlay/vr.yaml":            "varReference:\n- path: metadata/annotations\n  kind: ConfigMap\n"}, "overlay", false},
		{"configurations in a base", with(bench, map[string]string{"base/kustomization.yaml": k + "resources:\n- ../common\n- deploy.yaml\n- config.yaml\nconfigurations: [c.yaml]\n",
			"base/c.yaml": "namePrefix:\n- path: metadata/name\n  kind: ConfigMap\n"}), "overlay", false},
		// kustomize panics at the top where one level below it refuses.
		{"two objects renamed onto one id", map[string]string{"kustomization.yaml": k + "resources: [a.yaml]\npatches:\n- target: {kind: ConfigMap, name: b}\n  patch: '[{\"op\": \"replace\", \"path\": \"/metadata/name\", \"value\": \"a\"}]'\n",
			"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"}, ".", false},
		// kustomize's loader refuses such a directory one level below.
		{"a target directory with .. in its name", map[string]string{"v1..2/kustomization.yaml": k + "resources: [a.yaml]\n",
			"v1..2/a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n"}, "v1..2", false},
		{"content on the separator line", map[string]string{"kustomization.yaml": k + "resources: [a.yaml]\n", "a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: a}\n--- {apiVersion: v1, kind: ServiceAccount, metadata: {name: b}}\n"}, ".", false},
		{"an annotation that is not a string", map[string]string{"kustomization.yaml": k + "resources: [a.yaml]\n", "a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  annotations:\n    n: 1\n    m: null\n"}, ".", true},
		{"a List", map[string]string{"kustomization.yaml": k + "resources: [a.yaml]\n", "a.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ServiceAccount\n  metadata: {name: a}\n"}, ".", false},
		{"a broken resource", map[string]string{"kustomization.yaml": k + "resources: [a.yaml]\n", "a.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: [a\n"}, ".", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := writeFiles(t, c.files)
			markersRefused.mu.Lock()
			clear(markersRefused.m)
			markersRefused.mu.Unlock()
			marked, fellBack, unwrapped := markedBuilds.Load(), markerFallbacks.Load(), unwrappedBuilds.Load()
			opts := DefaultOptions()
			opts.Renderer = RendererKustomize
			got, gotErr := renderLocal(t.Context(), root, c.target, opts)
			if m, f := markedBuilds.Load()-marked, markerFallbacks.Load()-fellBack; (m == 1) != c.marked || m+f != 1 {
				t.Errorf("%d builds with markers, %d built again with origin annotations; want markers used: %v", m, f, c.marked)
			}
			// No overrides: a build with markers starts at the target itself.
			if u := unwrappedBuilds.Load() - unwrapped; c.marked && u != 1 {
				t.Errorf("%d builds without a wrapper, want 1", u)
			}
			// The same target, now known to need origin annotations, or not.
			markersRefused.add(c.target)
			want, wantErr := renderLocal(t.Context(), root, c.target, opts)
			markersRefused.mu.Lock()
			clear(markersRefused.m)
			markersRefused.mu.Unlock()
			if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Fatalf("errors differ: with markers %v, with origin annotations %v", gotErr, wantErr)
			}
			if gotErr != nil {
				if !strings.Contains(gotErr.Error(), "a.yaml") && !strings.Contains(gotErr.Error(), path.Join(c.target, "kustomization.yaml")) {
					t.Errorf("error %v does not name the file", gotErr)
				}
				return
			}
			if len(got.Objects) == 0 || !reflect.DeepEqual(got, want) {
				t.Errorf("with markers:\n%+v\nwith origin annotations:\n%+v", got, want)
			}
			for _, o := range got.Objects {
				if o.Source == "" || strings.Contains(o.Source, "driftpreview") {
					t.Errorf("%s has source %q", o.Key, o.Source)
				}
			}
		})
	}
}

// TestMarkGenerators: every generator entry gets the annotation in its
// options, and nothing else of the kustomization changes (as kustomize reads
// it); what cannot be marked that way is refused and left as it is.
func TestMarkGenerators(t *testing.T) {
	const k = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"plain", k + "configMapGenerator:\n- name: a\n  literals: [A=1]\nsecretGenerator:\n- name: s\n  literals: [B=2]\n", true},
		{"an anchor", k + "configMapGenerator:\n- name: a\n  options:\n    annotations: &m {a: b}\n    labels: *m\n", false},
		{"options and annotations there", k + "generatorOptions: {disableNameSuffixHash: true}\nconfigMapGenerator:\n- name: a\n  options:\n    labels: {l: x}\n    annotations: {a: b}\n  literals: [A=1]\n", true},
		{"null options", k + "configMapGenerator:\n- name: a\n  options:\n  literals: [A=1]\n", true},
		{"no generators", k + "resources: [a.yaml]\n# a comment on configMapGenerator\n", true},
		{"null generator list", k + "configMapGenerator:\n", true},
		{"merge key", k + "configMapGenerator:\n- &g\n  name: a\n- <<: *g\n  name: b\n", false},
		{"options not a mapping", k + "configMapGenerator:\n- name: a\n  options: [x]\n", false},
		{"entry not a mapping", k + "configMapGenerator:\n- a\n", false},
		{"two documents", k + "configMapGenerator:\n- name: a\n---\nkind: Other\n", false},
		{"annotation already there", k + "configMapGenerator:\n- name: a\n  options: {annotations: {key: \"0\"}}\n", false},
	}
	for _, c := range cases {
		out, ok := markGenerators([]byte(c.in), "key", "7")
		if ok != c.ok {
			t.Errorf("%s: ok %v, want %v", c.name, ok, c.ok)
			continue
		}
		if !ok {
			if string(out) != c.in {
				t.Errorf("%s: refused, but changed to %q", c.name, out)
			}
			continue
		}
		var want, got types.Kustomization
		if err := want.Unmarshal([]byte(c.in)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := got.Unmarshal(out); err != nil {
			t.Fatalf("%s: marked kustomization does not parse: %v\n%s", c.name, err, out)
		}
		for _, gens := range [][]types.ConfigMapArgs{got.ConfigMapGenerator} {
			for i := range gens {
				if gens[i].Options == nil || gens[i].Options.Annotations["key"] != "7" {
					t.Errorf("%s: configMapGenerator %d not marked: %+v", c.name, i, gens[i].Options)
					continue
				}
				delete(gens[i].Options.Annotations, "key")
			}
		}
		for i := range got.SecretGenerator {
			if got.SecretGenerator[i].Options == nil || got.SecretGenerator[i].Options.Annotations["key"] != "7" {
				t.Errorf("%s: secretGenerator %d not marked", c.name, i)
				continue
			}
			delete(got.SecretGenerator[i].Options.Annotations, "key")
		}
		// What was not there before is empty now, as kustomize treats a
		// missing options or annotations.
		norm := func(gs []types.GeneratorArgs) {
			for i := range gs {
				if gs[i].Options != nil && len(gs[i].Options.Annotations) == 0 {
					gs[i].Options.Annotations = nil
				}
				if gs[i].Options != nil && reflect.ValueOf(*gs[i].Options).IsZero() {
					gs[i].Options = nil
				}
			}
		}
		for _, kk := range []*types.Kustomization{&want, &got} {
			args := make([]types.GeneratorArgs, 0)
			for _, g := range kk.ConfigMapGenerator {
				args = append(args, g.GeneratorArgs)
			}
			for _, g := range kk.SecretGenerator {
				args = append(args, g.GeneratorArgs)
			}
			norm(args)
			for i := range kk.ConfigMapGenerator {
				kk.ConfigMapGenerator[i].GeneratorArgs = args[i]
			}
			for i := range kk.SecretGenerator {
				kk.SecretGenerator[i].GeneratorArgs = args[len(kk.ConfigMapGenerator)+i]
			}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: kustomization changed:\n%+v\n%+v", c.name, want, got)
		}
	}
}

// writeFiles writes files (path → content) under a new temp dir and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
