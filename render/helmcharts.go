package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"
	"github.com/driftpreview/driftpreview/render/remote"
	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/kustomize/kyaml/yaml/merge2"
	sigsyaml "sigs.k8s.io/yaml"
)

// Kustomize's helmCharts, inflated in the render process with the Helm
// library instead of kustomize's HelmChartInflationGenerator, which runs a
// helm binary (helm pull, helm template) and which driftpreview never
// enables. What the generator does is done here, with its semantics
// (sigs.k8s.io/kustomize/api v0.21.2 internal/builtins/
// HelmChartInflationGenerator.go, types/helmchartargs.go,
// internal/target/kusttarget_configplugin.go):
//
//   - The chart is {chartHome}/{name} below the kustomization (chartHome is
//     helmGlobals.chartHome, default "charts"; {chartHome}/{name}-{version}/
//     {name} when both version and repo are set). A chart found there is
//     used as it is; otherwise, with a repo, it is the chart helm pull would
//     fetch (repo, or oci://repo/name), which the caller fetches through the
//     remote policy (KustomizeHelm.Charts); without a repo it is an error.
//   - Values: valuesFile (default the chart's values.yaml); with
//     valuesInline, valuesMerge override (the default: inline wins), merge
//     (the file wins) or replace (inline alone), merged with kyaml's merge2
//     as kustomize merges them; then additionalValuesFiles in order, as
//     helm's -f files, all over the chart's defaults.
//   - The release is releaseName, else nameTemplate, else "release-name"
//     (helm template's default, which kustomize's --generate-name does not
//     change); its namespace is the chart's namespace, else the
//     kustomization's, else the nearest including kustomization's
//     (KustTarget.helmRootNamespace), else "default".
//   - CRDs (crds/) only with includeCRDs; hooks are kept (helm template
//     prints them) unless skipHooks, test hooks go with skipTests;
//     kubeVersion and apiVersions set Capabilities, kustomize build's
//     --helm-kube-version and --helm-api-versions winning over them.
//   - Each object gets kustomize's helm-generated annotation, so a
//     kustomization's namespace leaves it alone (NamespaceTransformer), and
//     kustomize removes the annotation at the end of the build.
//
// The output enters the build as a virtual component (helmChartsDir, beside
// the kustomization) appended to the kustomization's components: after its
// resources and components and before its transformers, as kustomize's
// generators run. What differs: the chart's objects are there before the
// kustomization's own configMapGenerator and secretGenerator run (kustomize
// runs those first), which matters only to a generator with behavior merge
// or replace naming an object of the chart.

// helmChartsDir is the virtual component directory beside a kustomization
// with helmCharts.
const helmChartsDir = ".driftpreview-helmcharts"

// helmKustomize is the helmCharts state of one kustomize build.
type helmKustomize struct {
	ctx  context.Context
	opts Options // the render's: limits, Helm.KubeVersion, Kustomize.Helm
	// target is the virtual directory of the target kustomization, whose
	// own namespace the wrapper's namespace (KustomizeOptions.Namespace)
	// stands for, as Argo CD's kustomize.namespace sets it.
	target string
	// inherited is the namespace a kustomization's includers pass down, by
	// its virtual directory; conflict marks directories included under two.
	inherited map[string]string
	conflict  map[string]bool
	done      map[string][]byte // virtual kustomization file + namespace → rewritten
	// sources maps a component directory (checkout-relative) to the
	// kustomization file whose helmCharts it holds, for origins.
	sources map[string]string
}

func newHelmKustomize(ctx context.Context, opts Options, target string) *helmKustomize {
	return &helmKustomize{ctx: ctx, opts: opts, target: target, inherited: map[string]string{},
		conflict: map[string]bool{}, done: map[string][]byte{}, sources: map[string]string{}}
}

// helmSource maps the checkout-relative file an object came from to the
// kustomization whose helmCharts made it, if it is one of helmChartsDir's.
func (h *helmKustomize) helmSource(file string) (string, bool) {
	if h == nil {
		return "", false
	}
	kf, ok := h.sources[path.Dir(file)]
	return kf, ok
}

// noteChildren records the namespace the kustomization at virtual directory
// dir passes to the directories it includes (kusttarget.go
// accumulateDirectory: its own namespace, else the one it was passed).
func (h *helmKustomize) noteChildren(k *kfs, dir string, data []byte) {
	kust := childrenOf(data)
	if kust == nil {
		return
	}
	ns := h.ownNamespace(dir, kust.Namespace)
	if ns == "" {
		ns = h.inherited[dir]
	}
	if ns == "" {
		return
	}
	for _, e := range slices.Concat(kust.Resources, kust.Bases, kust.Components) {
		child := clean(path.Join(dir, e))
		if !k.IsDir(child) {
			continue
		}
		if prev, ok := h.inherited[child]; ok && prev != ns {
			h.conflict[child] = true
		}
		h.inherited[child] = ns
	}
}

// ownNamespace is the namespace of the kustomization at dir: the wrapper's
// for the target, when it sets one.
func (h *helmKustomize) ownNamespace(dir, ns string) string {
	if dir == h.target && h.opts.Kustomize.Namespace != "" {
		return h.opts.Kustomize.Namespace
	}
	return ns
}

// inflate renders the helmCharts of the kustomization file (r in sb, c its
// virtual path) and returns the kustomization without its Helm fields and
// with the virtual component holding their output, which it adds to the
// overlay of k. A kustomization without helmCharts comes back unchanged.
func (h *helmKustomize) inflate(k *kfs, sb *sandbox, r, c string, data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte("helm")) {
		return data, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return data, nil // kustomize reports it
	}
	root := resolve(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return data, nil
	}
	var lines []int // of each chart, in the order FixKustomization lists them
	var helmAt []int
	for _, key := range []string{"helmCharts", "helmChartInflationGenerator"} {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != key {
				continue
			}
			if seq := resolve(root.Content[i+1]); seq.Kind == yaml.SequenceNode {
				for _, it := range seq.Content {
					lines = append(lines, it.Line)
				}
			}
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if slices.Contains(helmKeys, root.Content[i].Value) {
			helmAt = append(helmAt, i)
		}
	}
	if len(helmAt) == 0 {
		return data, nil
	}
	var kust types.Kustomization
	if err := kust.Unmarshal(data); err != nil {
		return data, nil // kustomize reports it
	}
	kust.FixKustomization()
	dir := path.Dir(c)
	own := h.ownNamespace(dir, kust.Namespace)
	key := c + "\x00" + own + "\x00" + h.inherited[dir]
	if out, ok := h.done[key]; ok {
		return out, nil
	}
	file := sb.at(r)
	var docs []string
	for i, ch := range kust.HelmCharts {
		line := root.Line
		if i < len(lines) {
			line = lines[i]
		}
		ns := ch.Namespace
		if ns == "" {
			ns = own
		}
		if ns == "" {
			if h.conflict[dir] {
				return nil, &Error{File: file, Line: line, Err: fmt.Errorf("helmCharts %s has no namespace, and %s is included by kustomizations of different namespaces, each of which kustomize would pass to it as .Release.Namespace; set the chart's namespace", ch.Name, path.Dir(file))}
			}
			ns = h.inherited[dir]
		}
		out, err := h.chart(k, sb, r, kust.HelmGlobals, ch, line, ns)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 {
			docs = append(docs, fmt.Sprintf("chart-%d.yaml", i))
			k.overlay[path.Join(dir, helmChartsDir, docs[len(docs)-1])] = out
		}
	}
	// The kustomization without its Helm fields, and with the component.
	slices.Reverse(helmAt)
	for _, i := range helmAt {
		root.Content = slices.Delete(root.Content, i, i+2)
	}
	if len(docs) > 0 {
		comp, err := sigsyaml.Marshal(map[string]any{"apiVersion": types.ComponentVersion, "kind": types.ComponentKind, "resources": docs})
		if err != nil {
			return nil, err
		}
		vdir := path.Join(dir, helmChartsDir)
		k.overlay[path.Join(vdir, "kustomization.yaml")] = comp
		k.overlayDirs[vdir] = true
		if rd, ok := rel(vdir); ok && sb == k.sb {
			h.sources[rd] = r
		}
		entry := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "./" + helmChartsDir}
		added := false
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value != "components" {
				continue
			}
			if seq := resolve(root.Content[i+1]); seq.Kind == yaml.SequenceNode {
				seq.Content = append(seq.Content, entry)
				added = true
			}
		}
		if !added {
			root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "components"},
				&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{entry}})
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, err
	}
	h.done[key] = out
	return out, nil
}

// Kustomize's valuesMerge options (HelmChartInflationGenerator.go).
const (
	valuesMergeOverride = "override"
	valuesMergeMerge    = "merge"
	valuesMergeReplace  = "replace"
)

// chart renders one helmCharts entry of the kustomization r in sb (line is
// the entry's) in namespace ns, and returns its objects as YAML documents.
func (h *helmKustomize) chart(k *kfs, sb *sandbox, r string, g *types.HelmGlobals, ch types.HelmChart, line int, ns string) ([]byte, error) {
	file := sb.at(r)
	fail := func(format string, args ...any) error {
		return &Error{File: file, Line: line, Err: fmt.Errorf("helmCharts %s: "+format, append([]any{ch.Name}, args...)...)}
	}
	// kustomize's validateArgs and helm's own checks of the same input.
	switch {
	case ch.Name == "":
		return nil, &Error{File: file, Line: line, Err: errors.New("helmCharts: chart name cannot be empty")}
	case strings.HasPrefix(ch.Name, "-"):
		return nil, fail("chart name must not start with '-'")
	case strings.HasPrefix(ch.ReleaseName, "-"):
		return nil, fail("releaseName must not start with '-', got %q", ch.ReleaseName)
	case ch.ReleaseName != "" && ch.NameTemplate != "":
		return nil, fail("cannot set nameTemplate (helm's --name-template) and also releaseName")
	}
	merge := ch.ValuesMerge
	switch merge {
	case "":
		merge = valuesMergeOverride
	case valuesMergeOverride, valuesMergeMerge, valuesMergeReplace:
	default:
		return nil, fail("valuesMerge must be one of [merge override replace]")
	}
	kdir := path.Dir(r)
	var err error
	// inRoot resolves a path of the kustomization, which kustomize's load
	// restrictor (RootOnly) keeps at or below its directory.
	inRoot := func(field, p string) (string, error) {
		if strings.Contains(p, "://") {
			return "", fail("%s %q is a URL: driftpreview reads values files only from the repository", field, p)
		}
		if path.IsAbs(p) {
			return "", fail("%s %q is absolute: kustomize's load restrictor allows only paths at or below the kustomization", field, p)
		}
		j := path.Join(kdir, p)
		if kdir != "." && j != kdir && !strings.HasPrefix(j, kdir+"/") || kdir == "." && (j == ".." || strings.HasPrefix(j, "../")) {
			return "", fail("%s %q is not in or below %s, as kustomize's load restrictor requires", field, p, kdir)
		}
		return j, nil
	}
	// Paths first, as kustomize's validateArgs loads them first.
	userValues := ""
	if ch.ValuesFile != "" {
		if userValues, err = inRoot("valuesFile", ch.ValuesFile); err != nil {
			return nil, err
		}
	}
	var additional []string
	for _, f := range ch.AdditionalValuesFiles {
		p, err := inRoot("additionalValuesFiles", f)
		if err != nil {
			return nil, err
		}
		additional = append(additional, p)
	}
	home := types.HelmDefaultHome
	if g != nil && g.ChartHome != "" {
		home = g.ChartHome
	}
	chartHome, err := inRoot("helmGlobals.chartHome", home)
	if err != nil {
		return nil, err
	}
	if ch.Version != "" && ch.Repo != "" {
		chartHome = path.Join(chartHome, ch.Name+"-"+ch.Version)
	}
	chartDir := path.Join(chartHome, ch.Name)
	if !strings.HasPrefix(chartDir, chartHome+"/") {
		return nil, fail("the chart name leaves the chart home %s", chartHome)
	}
	csb, cdir, where := sb, chartDir, ""
	if fi, err := sb.stat(chartDir); err != nil || !fi.IsDir() {
		if ch.Repo == "" {
			return nil, fail("no repo specified for pull, no chart found at %s (kustomize pulls a chart only from a repo; vendor it there or set repo)", sb.at(chartDir))
		}
		kc := KustomizeChart{Repo: ch.Repo, Name: ch.Name, Version: ch.Version}
		fetched, ok := h.opts.Kustomize.Helm.Charts[kc.Key()]
		if !ok {
			return nil, &Error{File: file, Line: line, Err: &Unavailable{Chart: &kc,
				Reason: fmt.Sprintf("helmCharts %s is not fetched: %s", kc, remote.OffReason)}}
		}
		where = fmt.Sprintf("%s-%s", ch.Name, fetched.Version)
		if csb, err = sb.mount(fetched.Dir, where, "helmchart-"+where); err != nil {
			return nil, err
		}
		defer csb.Close()
		cdir = "."
	}

	// The values file kustomize hands helm with -f.
	var vsb, vfile = csb, path.Join(cdir, "values.yaml")
	if userValues != "" {
		vsb, vfile = sb, userValues
	}
	readValues := func(s *sandbox, f string) ([]byte, error) {
		data, err := s.readFile(f)
		if err != nil {
			return nil, err
		}
		if err := checkYAML(data, s.at(f)); err != nil {
			return nil, err
		}
		return data, nil
	}
	vdata, err := readValues(vsb, vfile)
	if err != nil {
		return nil, fail("reading its values file (kustomize reads valuesFile, by default the chart's values.yaml): %w", err)
	}
	var vals map[string]any
	if len(ch.ValuesInline) > 0 && merge == valuesMergeReplace {
		vals = ch.ValuesInline
	} else if len(ch.ValuesInline) > 0 {
		if vals, err = mergeInline(vdata, ch.ValuesInline, merge); err != nil {
			return nil, fail("%w", err)
		}
	} else if err := sigsyaml.Unmarshal(vdata, &vals); err != nil {
		return nil, &Error{File: vsb.at(vfile), Err: fmt.Errorf("values file: %w", err)}
	}
	if vals == nil {
		vals = map[string]any{}
	}
	for _, p := range additional {
		data, err := readValues(sb, p)
		if err != nil {
			return nil, fail("reading additionalValuesFiles: %w", err)
		}
		var m map[string]any
		if err := sigsyaml.Unmarshal(data, &m); err != nil {
			return nil, &Error{File: sb.at(p), Err: fmt.Errorf("values file: %w", err)}
		}
		vals = mergeValues(vals, m)
	}
	// helm reads -f files as JSON-typed values (sigs.k8s.io/yaml): numbers
	// are float64 there, as in the chart's own values.yaml.
	if vals, err = jsonValues(vals); err != nil {
		return nil, fail("values: %w", err)
	}

	release := ch.ReleaseName
	if release == "" && ch.NameTemplate != "" {
		if release, err = templateName(ch.NameTemplate); err != nil {
			return nil, fail("nameTemplate: %w", err)
		}
	}
	if release == "" {
		release = "release-name"
	}
	if ns == "" {
		ns = "default"
	}
	kv, apis := ch.KubeVersion, ch.ApiVersions
	if kh := h.opts.Kustomize.Helm; kh.KubeVersion != "" {
		kv = kh.KubeVersion
	}
	if kh := h.opts.Kustomize.Helm; len(kh.APIVersions) > 0 {
		apis = kh.APIVersions
	}
	if kv == "" {
		kv = h.opts.Helm.KubeVersion
	}
	o := h.opts
	o.Namespace = ns
	o.Helm = HelmOptions{Values: vals, SkipCRDs: !ch.IncludeCRDs, KubeVersion: kv,
		inflate: &inflation{skipHooks: ch.SkipHooks, skipTests: ch.SkipTests, apiVersions: apis}}
	set, err := renderHelm(h.ctx, csb, cdir, release, o)
	if err != nil {
		if re, ok := errors.AsType[*Error](err); ok && (csb != k.sb || where != "") {
			if where != "" {
				// A file of the fetched chart: name the chart and the entry.
				return nil, &Error{File: file, Line: line, Err: fmt.Errorf("helmCharts %s: %s: %w", ch.Name, at(path.Join(where, re.File), re.Line), re.Err)}
			}
			re.File = csb.at(re.File)
		}
		return nil, err
	}
	k.mu.Lock()
	k.notes = append(k.notes, set.Notes...)
	k.mu.Unlock()
	var out bytes.Buffer
	for _, obj := range set.Objects {
		u := obj.Obj.DeepCopy()
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[konfig.HelmGeneratedAnnotation] = "true"
		u.SetAnnotations(ann)
		y, err := sigsyaml.Marshal(u.Object)
		if err != nil {
			return nil, fail("%w", err)
		}
		out.WriteString("---\n")
		out.Write(y)
	}
	return out.Bytes(), nil
}

// mergeInline merges valuesInline with the values file as kustomize's
// replaceValuesInline does: merge2.Merge(src, dest) keeps dest's fields that
// src lacks and takes src's otherwise, so override passes the inline values
// as src and merge passes the file's.
func mergeInline(file []byte, inline map[string]any, how string) (map[string]any, error) {
	chValues, err := kyaml.Parse(string(file))
	if err != nil {
		return nil, fmt.Errorf("could not parse values file into rnode: %w", err)
	}
	inlineValues, err := kyaml.FromMap(inline)
	if err != nil {
		return nil, fmt.Errorf("could not parse values inline into rnode: %w", err)
	}
	var merged *kyaml.RNode
	if how == valuesMergeOverride {
		merged, err = merge2.Merge(inlineValues, chValues.Copy(), kyaml.MergeOptions{})
	} else {
		merged, err = merge2.Merge(chValues, inlineValues.Copy(), kyaml.MergeOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("could not merge values: %w", err)
	}
	m, err := merged.Map()
	if err != nil {
		return nil, fmt.Errorf("could not parse merged values into map: %w", err)
	}
	return m, nil
}

// jsonValues gives v the types helm's values have: JSON's.
func jsonValues(v map[string]any) (map[string]any, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// templateName is helm's action.TemplateName: the release name from
// --name-template, a Go template with sprig's functions and no data.
func templateName(nameTemplate string) (string, error) {
	t, err := template.New("name-template").Funcs(sprig.TxtFuncMap()).Parse(nameTemplate)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}
