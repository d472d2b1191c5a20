package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
)

// errNoDNS is what getHostByName gives: a render must not depend on the network.
var errNoDNS = errors.New("getHostByName is disabled: driftpreview renders charts without network access; pass the address as a value instead")

// renderHelm renders the chart in dir the way `helm template` does, but from files
// read through the sandbox, with dependencies only from the vendored charts/
// folder, no lookup results and no DNS.
func renderHelm(ctx context.Context, sb *sandbox, dir, release string, opts Options) (ObjectSet, error) {
	ch, err := loadChart(ctx, sb, dir, opts.Helm.deps)
	if err != nil {
		return ObjectSet{}, err
	}
	if err := checkVendored(sb, dir, ch); err != nil {
		return ObjectSet{}, err
	}

	vals, err := valuesFiles(sb, opts.Helm)
	if err != nil {
		return ObjectSet{}, err
	}
	if opts.Helm.FluxValuesFiles {
		// Flux: the merged valuesFiles are the chart's new values.yaml;
		// the release's values go over them (helm-controller).
		if fv := opts.Helm.ValuesFiles; !(len(fv) == 1 && path.Clean(fv[0]) == "values.yaml") && len(fv) > 0 {
			ch.Values = vals
		}
		vals = map[string]any{}
	}
	vals = mergeValues(vals, copyValues(opts.Helm.Values))

	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	caps := common.DefaultCapabilities.Copy()
	kv, err := common.ParseKubeVersion(opts.Helm.KubeVersion)
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: kube version %q: %w", dir, opts.Helm.KubeVersion, err)
	}
	caps.KubeVersion = *kv
	if inf := opts.Helm.inflate; inf != nil {
		caps.APIVersions = append(caps.APIVersions, inf.apiVersions...)
	}
	chartFile := path.Join(dir, "Chart.yaml")
	if c := ch.Metadata.KubeVersion; c != "" && !chartutil.IsCompatibleRange(c, kv.String()) {
		return ObjectSet{}, &Error{File: chartFile, Line: lineOf(sb, chartFile, "kubeVersion:"), Err: fmt.Errorf("the chart requires Kubernetes %s, but renders against %s; set the target's helm.kubeVersion", c, kv.String())}
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return ObjectSet{}, &Error{File: chartFile, Err: fmt.Errorf("processing dependencies: %w", err)}
	}
	// Schema validation is skipped: values.schema.json may $ref URLs, and a render
	// never touches the network.
	rvals, err := util.ToRenderValuesWithSchemaValidation(ch, vals,
		common.ReleaseOptions{Name: release, Namespace: ns, Revision: 1, IsInstall: true}, caps, true)
	if err != nil {
		return ObjectSet{}, &Error{File: dir, Err: fmt.Errorf("preparing values: %w", err)}
	}
	eng := engine.Engine{
		CustomTemplateFuncs: map[string]any{
			"getHostByName": func(string) (string, error) { return "", errNoDNS },
		},
	}
	// Without a client provider, lookup is helm's placeholder that returns an
	// empty map, as in `helm template`.
	out, err := eng.RenderWithContext(ctx, ch, rvals)
	if err != nil {
		return ObjectSet{}, templateError(dir, err)
	}

	var size int64
	for _, content := range out {
		size += int64(len(content))
	}
	if opts.Helm.inflate == nil {
		// A helmCharts chart's output is counted once, as kustomize's.
		if err := sb.output(dir, size); err != nil {
			return ObjectSet{}, err
		}
	}

	var set ObjectSet
	var all, tmpl []parsedObject
	if !opts.Helm.SkipCRDs {
		for _, crd := range ch.CRDObjects() {
			objs, notes, err := parse(crd.File.Data, crd.Filename)
			if err != nil {
				return ObjectSet{}, relocate(dir, err)
			}
			all = append(all, objs...)
			set.Notes = append(set.Notes, notes...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		content := out[name]
		if err := sb.charge(name, int64(len(content))); err != nil {
			return ObjectSet{}, relocate(dir, err)
		}
		if strings.TrimSpace(content) == "" {
			continue
		}
		objs, notes, err := parse([]byte(content), name)
		if err != nil {
			var re *Error
			if errors.As(err, &re) && re.Line > 0 {
				// The line is in the rendered output, not in the template.
				return ObjectSet{}, &Error{File: chartPath(dir, name), Err: fmt.Errorf("rendered output line %d: %w", re.Line, re.Err)}
			}
			return ObjectSet{}, relocate(dir, err)
		}
		tmpl = append(tmpl, objs...)
		set.Notes = append(set.Notes, notes...)
	}
	tmpl, err = postRender(ctx, sb, dir, tmpl, opts.Helm)
	if err != nil {
		return ObjectSet{}, err
	}
	all = append(all, tmpl...)
	if err := addAll(&set, all); err != nil {
		return ObjectSet{}, err
	}
	switch inf := opts.Helm.inflate; {
	case inf == nil || inf.skipHooks:
		dropHooks(&set, isHelmHook, "Helm")
	case inf.skipTests:
		// `helm template --skip-tests`: test hooks are not printed; the
		// other hooks are (kustomize's helmCharts output holds them).
		set.Objects = slices.DeleteFunc(set.Objects, isHelmTestHook)
	}
	return set, nil
}

// isHelmTestHook says whether o is a Helm test hook: a helm.sh/hook event
// "test" (helm's isTestHook, pkg/cmd/template.go; "test-success" is its
// older name, which helm still reads as test).
func isHelmTestHook(o Object) bool {
	if o.Obj == nil {
		return false
	}
	for e := range strings.SplitSeq(o.Obj.GetAnnotations()[helmHookAnnotation], ",") {
		if e = strings.TrimSpace(e); e == "test" || e == "test-success" {
			return true
		}
	}
	return false
}

// valuesFiles merges the values files of h in order, as helm merges -f files
// (and source-controller its valuesFiles); missing ones are skipped with
// IgnoreMissingValuesFiles.
func valuesFiles(sb *sandbox, h HelmOptions) (map[string]any, error) {
	vals := map[string]any{}
	for _, vf := range h.ValuesFiles {
		if v, ok := h.checkoutValues[vf]; ok {
			vals = mergeValues(vals, copyValues(v))
			continue
		}
		if h.IgnoreMissingValuesFiles {
			if c, err := cleanRel(vf); err == nil {
				if _, err := sb.rootStat(c); errors.Is(err, fs.ErrNotExist) {
					continue
				}
			}
		}
		data, err := sb.readFile(vf)
		if err != nil {
			return nil, fmt.Errorf("reading values file: %w", err)
		}
		docs, err := DecodeYAML(data, vf)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			m, ok := d.Value.(map[string]any)
			if !ok {
				return nil, &Error{File: vf, Line: d.Line, Err: errors.New("a values file must be a YAML mapping")}
			}
			vals = mergeValues(vals, m)
		}
	}
	return vals, nil
}

// chartPath maps a helm file name ("mychart/templates/x.yaml") to the file in the
// checkout ("apps/mychart/templates/x.yaml").
func chartPath(dir, name string) string {
	_, rest, ok := strings.Cut(name, "/")
	if !ok {
		return path.Join(dir, name)
	}
	return path.Join(dir, rest)
}

// relocate rewrites an *Error's chart-relative file to the checkout-relative one.
func relocate(dir string, err error) error {
	var re *Error
	if errors.As(err, &re) {
		return &Error{File: chartPath(dir, re.File), Line: re.Line, Err: re.Err}
	}
	return err
}

var tplPos = regexp.MustCompile(`([^\s:"()]+\.(?:yaml|yml|tpl|txt|json)):(\d+)(?::\d+)?`)

// templateError turns a helm template error into an *Error at the template file and
// line it names.
func templateError(dir string, err error) error {
	msg := err.Error()
	if m := tplPos.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[2])
		return &Error{File: chartPath(dir, m[1]), Line: line, Err: fmt.Errorf("rendering template: %s", cleanTemplateMsg(msg))}
	}
	return &Error{File: dir, Err: fmt.Errorf("rendering chart: %s", cleanTemplateMsg(msg))}
}

// cleanTemplateMsg shortens a template error to its root cause: nested includes
// repeat the whole call chain, which can run to megabytes.
func cleanTemplateMsg(msg string) string {
	msg = strings.ReplaceAll(msg, "HELM_ERR_START", "")
	msg = strings.ReplaceAll(msg, "HELM_ERR_END", "")
	msg = strings.Join(strings.Fields(msg), " ")
	if i := strings.LastIndex(msg, "error calling "); i >= 0 {
		msg = msg[i:]
	}
	return Shorten(strings.TrimSpace(msg), 400)
}

// loadChart reads the chart's files through the sandbox, honouring .helmignore,
// and lets helm assemble them.
func loadChart(ctx context.Context, sb *sandbox, dir string, deps []localDependency) (*chart.Chart, error) {
	rules := ignore.Empty()
	ignoreFile := path.Join(dir, ignore.HelmIgnore)
	if _, err := sb.stat(ignoreFile); err == nil {
		data, err := sb.readFile(ignoreFile)
		if err != nil {
			return nil, err
		}
		if rules, err = ignore.Parse(bytes.NewReader(data)); err != nil {
			return nil, &Error{File: ignoreFile, Err: fmt.Errorf("parsing: %w", err)}
		}
	}
	rules.AddDefaults()

	var files []*archive.BufferedFile
	err := fs.WalkDir(sb.fsys(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return sb.explain(p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		n := p
		if dir != "." {
			n = p[len(dir)+1:]
		}
		fi, err := d.Info()
		if err != nil {
			return sb.explain(p, err)
		}
		if d.IsDir() {
			if rules.Ignore(n, fi) {
				return fs.SkipDir
			}
			return nil
		}
		if rules.Ignore(n, fi) {
			return nil
		}
		data, err := sb.readFile(p)
		if err != nil {
			return err
		}
		// Templates are not YAML yet; everything else that is YAML is parsed by
		// helm, so refuse bombs before it sees them.
		if hasExt(n, ".yaml", ".yml") && !isTemplate(n) {
			if err := checkYAML(data, p); err != nil {
				return err
			}
		}
		files = append(files, &archive.BufferedFile{Name: n, ModTime: fi.ModTime(), Data: bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	files, err = addDependencies(files, deps, sb.maxFile)
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, loadError(dir, err)
	}
	if ch.Metadata == nil {
		return nil, &Error{File: path.Join(dir, "Chart.yaml"), Err: errors.New("chart has no Chart.yaml")}
	}
	return ch, nil
}

// addDependencies adds the dependency archives the parent fetched (prefetch) to
// the chart's charts/ folder, as helm dependency build leaves them. They live in
// the remote cache, outside the checkout, and are read directly; the fetcher
// capped and checked them.
func addDependencies(files []*archive.BufferedFile, deps []localDependency, max int64) ([]*archive.BufferedFile, error) {
	for _, d := range deps {
		name := "charts/" + d.Name + "-" + d.Version + ".tgz"
		if slices.ContainsFunc(files, func(f *archive.BufferedFile) bool { return f.Name == name }) {
			continue
		}
		f, err := os.Open(d.Archive)
		if err != nil {
			return nil, fmt.Errorf("reading the fetched dependency %s %s: %w", d.Name, d.Version, err)
		}
		data, err := io.ReadAll(io.LimitReader(f, max+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the fetched dependency %s %s: %w", d.Name, d.Version, err)
		}
		if int64(len(data)) > max {
			return nil, fmt.Errorf("the fetched dependency %s %s is over the %d-byte file limit", d.Name, d.Version, max)
		}
		files = append(files, &archive.BufferedFile{Name: name, Data: data})
	}
	return files, nil
}

func isTemplate(n string) bool {
	return strings.HasPrefix(n, "templates/") || strings.Contains(n, "/templates/")
}

var loadFile = regexp.MustCompile(`cannot load ([^\s:]+)`)
var loadLine = regexp.MustCompile(`line (\d+)`)

// loadError places a chart loading error on the file it names.
func loadError(dir string, err error) error {
	msg := err.Error()
	file := path.Join(dir, "Chart.yaml")
	if m := loadFile.FindStringSubmatch(msg); m != nil {
		file = path.Join(dir, m[1])
	}
	line := 0
	if m := loadLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return &Error{File: file, Line: line, Err: fmt.Errorf("loading chart: %w", err)}
}

// checkVendored fails when Chart.yaml lists a dependency that charts/ does not
// hold: a render never downloads one. The controllers do: Argo CD's repo server
// runs `helm dependency build` before it renders a chart from git, and Flux's
// source-controller builds the dependencies of a chart from a GitRepository. So
// the failure is *Unavailable (the target is not rendered), not a broken chart.
func checkVendored(sb *sandbox, dir string, ch *chart.Chart) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	for _, d := range ch.Metadata.Dependencies {
		if d == nil || have[d.Name] {
			continue
		}
		file := path.Join(dir, "Chart.yaml")
		from := ""
		switch {
		case d.Repository != "" && d.Version != "":
			from = fmt.Sprintf(" (version %s from %s)", d.Version, d.Repository)
		case d.Repository != "":
			from = fmt.Sprintf(" (from %s)", d.Repository)
		}
		// The dependency's list entry, not the chart's own name (often the same).
		line := lineOf(sb, file, "- name: "+d.Name)
		if line == 0 {
			line = lineOf(sb, file, "name: "+d.Name)
		}
		return &Error{File: file, Line: line,
			Err: &Unavailable{Reason: fmt.Sprintf("chart dependency %s%s is not vendored in %s: the GitOps controller builds chart dependencies when it syncs (helm dependency build), and driftpreview fetches it only with remote sources on (remote.mode: public, the default, or allowlist with its repository in remote.allow / --allow-remote; they are off with --offline or remote.mode: off); or run helm dependency build and commit charts/",
				d.Name, from, path.Join(dir, "charts")+"/")}}
	}
	for _, d := range ch.Dependencies() {
		if err := checkVendored(sb, path.Join(dir, "charts", d.Name()), d); err != nil {
			return err
		}
	}
	return nil
}

// lineOf finds the first line of file containing needle, or 0.
func lineOf(sb *sandbox, file, needle string) int {
	data, err := sb.root.ReadFile(file)
	if err != nil {
		return 0
	}
	for i, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, needle) {
			return i + 1
		}
	}
	return 0
}

// mergeValues merges src over dst recursively, as helm does for -f files and --set.
func mergeValues(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}

// copyValues deep-copies maps so the caller's Values are never modified.
func copyValues(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = copyValues(vm)
		}
		out[k] = v
	}
	return out
}
