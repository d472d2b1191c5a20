package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/driftpreview/driftpreview/render"
)

// ArgoCluster is one cluster Argo CD knows: a Secret labelled
// argocd.argoproj.io/secret-type: cluster. Only the fields the clusters generator
// gives its template are kept (name, server, project, labels, annotations); the
// Secret's credentials (config) are never read into it.
type ArgoCluster struct {
	Name, Server, Project string
	Labels, Annotations   map[string]string
	// Secret is the Secret's own name, to order Secrets that share a cluster name.
	Secret string
}

// ClusterLister lists the cluster Secrets in namespace of the cluster Argo CD runs
// in. An error (no access, forbidden) makes every clusters generator of that
// namespace not rendered, with the error as the reason.
type ClusterLister func(ctx context.Context, namespace string) ([]ArgoCluster, error)

// noClusterLister is the reason a clusters generator is not expanded when no way to
// read Argo CD's cluster Secrets is configured.
const noClusterLister = "the clusters generator reads Argo CD's cluster Secrets, and driftpreview has no access to the cluster Argo CD runs in (argocdCluster in the server config, --argocd-context or --kubeconfig on the CLI) nor a static list (argocd.clusters in the server config)"

// notExpanded is a generator driftpreview cannot expand: the ApplicationSet is
// listed as not rendered with the reason, and its other generators still expand.
type notExpanded struct{ reason string }

func (n *notExpanded) Error() string { return n.reason }

// expander expands the generators of one ApplicationSet.
type expander struct {
	d      *discovery
	goTpl  bool
	goOpts []string
	ns     string
	// name names the set in errors of the render process.
	name string
	// lim are the limits of the set's templates (Options.TemplateLimits);
	// room is what is left of lim.MaxTotalBytes.
	lim  render.TemplateLimits
	room int64
	// maxApps is Options.MaxAppsPerSet; cut counts the parameter sets a
	// matrix did not make past it.
	maxApps int
	cut     int
}

// maxNesting is how deep matrix and merge nest: a top-level matrix or merge may
// hold one more matrix or merge, whose children are terminal generators
// (ApplicationSetNestedGenerator / ApplicationSetTerminalGenerator in
// pkg/apis/application/v1alpha1/applicationset_types.go).
const maxNesting = 1

// generate runs one generator of kind of the spec entry (Transform in
// applicationset/generators/generator_spec_processor.go): the generator spec
// (interpolated with a matrix's first child's parameters when it is a
// matrix's second child: spec, else nil) is expanded, then filtered by the
// entry's selector on the flattened parameters.
func (e *expander) generate(kind string, entry map[string]json.RawMessage, spec any, depth int) ([]map[string]any, error) {
	if spec == nil {
		if err := json.Unmarshal(entry[kind], &spec); err != nil {
			return nil, fmt.Errorf("reading %s generator: %w", kind, err)
		}
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	var params []map[string]any
	switch kind {
	case "list":
		params, err = e.list(raw)
	case "git":
		params, err = e.git(raw)
	case "clusters":
		params, err = e.clusters(raw)
	case "matrix", "merge":
		if depth > maxNesting {
			return nil, fmt.Errorf("a %s generator nested more than two levels deep: Argo CD reads only terminal generators (list, clusters, git, …) at the third level, so this child generates no parameters", kind)
		}
		if kind == "matrix" {
			params, err = e.matrix(raw, depth)
		} else {
			params, err = e.merge(raw, depth)
		}
	case "pullRequest", "scmProvider":
		// pull_request.go and scm_provider.go list pull requests and
		// repositories through GitHub, GitLab, Gitea, Bitbucket or Azure DevOps.
		return nil, &notExpanded{fmt.Sprintf("generator %s needs the host's API: Argo CD lists pull requests or repositories through the Git host's API, which driftpreview does not call", kind)}
	case "plugin":
		// plugin.go calls an HTTP service configured in a ConfigMap.
		return nil, &notExpanded{"generator plugin asks a plugin service over HTTP for its parameters, which driftpreview does not call"}
	case "clusterDecisionResource":
		return nil, &notExpanded{"generator clusterDecisionResource reads a duck-typed placement resource through Argo CD's cluster, which driftpreview does not read"}
	default:
		return nil, &notExpanded{fmt.Sprintf("generator %s is not known to driftpreview", kind)}
	}
	if err != nil {
		return nil, err
	}
	sel, ok := entry["selector"]
	if !ok || string(sel) == "null" {
		return params, nil
	}
	var ls metav1.LabelSelector
	if err := json.Unmarshal(sel, &ls); err != nil {
		return nil, fmt.Errorf("error parsing label selector: %w", err)
	}
	var out []map[string]any
	for _, p := range params {
		ok, err := selectorMatches(ls, flattenParams(p))
		if err != nil {
			return nil, fmt.Errorf("error parsing label selector: %w", err)
		}
		if ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// selectorMatches matches a generator's selector against flattened parameters.
// Argo CD uses its own copy of LabelSelectorAsSelector without the label value
// restrictions, so that cluster URLs can be matched (utils/selector.go).
func selectorMatches(ls metav1.LabelSelector, flat map[string]string) (bool, error) {
	for k, v := range ls.MatchLabels {
		if got, ok := flat[k]; !ok || got != v {
			return false, nil
		}
	}
	for _, r := range ls.MatchExpressions {
		got, has := flat[r.Key]
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			if !has || !slices.Contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpNotIn:
			if has && slices.Contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpExists:
			if !has {
				return false, nil
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if has {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%q is not a valid label selector operator", r.Operator)
		}
	}
	return true, nil
}

// flattenParams is flattenParameters (generator_spec_processor.go): nested maps
// and lists become dotted keys (jeremywohl/flatten DotStyle: a.b, list.0), values
// are printed with %v; empty maps and lists give no key.
func flattenParams(in map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "." + k
		}
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(join(k), e)
			}
		case map[string]string:
			for k, e := range x {
				out[join(k)] = e
			}
		case []any:
			for i, e := range x {
				walk(join(strconv.Itoa(i)), e)
			}
		default:
			out[prefix] = fmt.Sprintf("%v", x)
		}
	}
	walk("", in)
	return out
}

// exec executes trees with each parameter set in a render process
// (render.ExecuteTemplates, or Options.Templates), under the limits the set
// has left: what one ApplicationSet's templates produce together is bounded by
// TemplateLimits.MaxTotalBytes.
func (e *expander) exec(trees []render.TemplateTree, params []map[string]any) ([][]any, error) {
	if len(params) == 0 {
		return nil, nil
	}
	lim := e.lim
	lim.MaxTotalBytes = e.room
	if lim.MaxTotalBytes <= 0 {
		return nil, fmt.Errorf("the templates produce more than %d bytes in all (the limit for one ApplicationSet's templates); look for templates that generate huge values, or generators that make many parameter sets", e.lim.MaxTotalBytes)
	}
	req := render.TemplateRequest{Name: e.name, GoTemplate: e.goTpl, Options: e.goOpts, Trees: trees, Params: params}
	res, err := e.d.templates(e.d.ctx, req, lim)
	e.room -= res.Bytes
	if err != nil {
		return nil, err
	}
	return res.Out, nil
}

// interpolateAll renders every string of a generator spec with each of a
// matrix's first child's parameter sets (RenderGeneratorParams in
// applicationset/utils/utils.go): one spec per set. A generator's own values
// are resolved with missingkey=error and kept as written when a key is
// missing, so they can still refer to the generator's own parameters.
func (e *expander) interpolateAll(spec any, interps []map[string]any) ([]any, error) {
	m, ok := spec.(map[string]any)
	if !ok {
		out, err := e.exec([]render.TemplateTree{{Tree: spec}}, interps)
		if err != nil {
			return nil, err
		}
		specs := make([]any, len(out))
		for i, o := range out {
			specs[i] = o[0]
		}
		return specs, nil
	}
	vals, hasVals := m["values"].(map[string]any)
	rest := maps.Clone(m)
	delete(rest, "values")
	trees := []render.TemplateTree{{Tree: rest}}
	if hasVals {
		trees = append(trees, render.TemplateTree{Tree: vals, Values: true})
	}
	out, err := e.exec(trees, interps)
	if err != nil {
		return nil, err
	}
	specs := make([]any, len(out))
	for i, o := range out {
		r, _ := o[0].(map[string]any)
		if r == nil {
			r = map[string]any{}
		}
		if hasVals {
			r["values"] = o[1]
		}
		specs[i] = r
	}
	return specs, nil
}

// appendValues adds a generator's values to each parameter set, each rendered
// with its set (appendTemplatedValues in value_interpolation.go): values.<key>
// without Go templates, a values map with them. All sets are rendered in one
// batch; a failing template's error says which set (index) it was.
func (e *expander) appendValues(values map[string]string, sets []map[string]any) (int, error) {
	if len(values) == 0 || len(sets) == 0 {
		return 0, nil
	}
	// The keys are not templates: the values are executed as a list.
	keys := slices.Sorted(maps.Keys(values))
	list := make([]any, len(keys))
	for i, k := range keys {
		list[i] = values[k]
	}
	out, err := e.exec([]render.TemplateTree{{Tree: list}}, sets)
	if err != nil {
		if te, ok := errors.AsType[*render.TemplateError](err); ok {
			return te.Param, fmt.Errorf("failed to replace templated string: %w", te.Err)
		}
		return -1, err
	}
	for i, params := range sets {
		got, _ := out[i][0].([]any)
		tmp := map[string]any{}
		vm := map[string]any{}
		for j, k := range keys {
			r, _ := got[j].(string)
			if e.goTpl {
				vm[k] = r
			} else {
				tmp["values."+k] = r
			}
		}
		if e.goTpl {
			tmp["values"] = vm
		}
		maps.Copy(params, tmp)
	}
	return 0, nil
}

// list is the list generator (list.go): elements as they are with Go templates;
// otherwise every value must be a string, and a values map gives values.<key>.
// elementsYaml is appended as parsed.
func (e *expander) list(raw []byte) ([]map[string]any, error) {
	var lg struct {
		Elements     []map[string]any `json:"elements"`
		ElementsYaml string           `json:"elementsYaml"`
	}
	if err := json.Unmarshal(raw, &lg); err != nil {
		return nil, fmt.Errorf("error unmarshling list element %w", err)
	}
	var res []map[string]any
	for _, el := range lg.Elements {
		if e.goTpl {
			res = append(res, el)
			continue
		}
		params := map[string]any{}
		for k, v := range el {
			if k == "values" {
				vals, ok := v.(map[string]any)
				if !ok {
					return nil, errors.New("error parsing values map")
				}
				for vk, vv := range vals {
					s, ok := vv.(string)
					if !ok {
						return nil, fmt.Errorf("error parsing value as string: values.%s is %v", vk, vv)
					}
					params["values."+vk] = s
				}
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("error parsing value as string: %s is %v (without goTemplate every list element value must be a string)", k, v)
			}
			params[k] = s
		}
		res = append(res, params)
	}
	if lg.ElementsYaml != "" {
		var more []map[string]any
		if err := render.UnmarshalYAML([]byte(lg.ElementsYaml), "elementsYaml", &more); err != nil {
			return nil, fmt.Errorf("error unmarshling decoded ElementsYaml %w", err)
		}
		res = append(res, more...)
	}
	return res, nil
}

type gitPathItem struct {
	Path    string `json:"path"`
	Exclude bool   `json:"exclude"`
}

// git is the git generator (git.go), over this repository's checkout.
func (e *expander) git(raw []byte) ([]map[string]any, error) {
	var gg struct {
		RepoURL         string            `json:"repoURL"`
		Revision        string            `json:"revision"`
		Directories     []gitPathItem     `json:"directories"`
		Files           []gitPathItem     `json:"files"`
		Values          map[string]string `json:"values"`
		PathParamPrefix string            `json:"pathParamPrefix"`
	}
	if err := json.Unmarshal(raw, &gg); err != nil {
		return nil, fmt.Errorf("reading git generator: %w", err)
	}
	if !e.d.thisRepo(argoSource{RepoURL: gg.RepoURL, Path: "."}) {
		return nil, &notExpanded{"source outside this repo: " + gg.RepoURL}
	}
	switch {
	case len(gg.Directories) > 0:
		dirs, err := e.d.repoDirs()
		if err != nil {
			return nil, err
		}
		var res []map[string]any
		for _, dir := range filterDirs(gg.Directories, dirs) {
			res = append(res, e.dirParams(dir, gg.PathParamPrefix))
		}
		if _, err := e.appendValues(gg.Values, res); err != nil {
			return nil, fmt.Errorf("failed to append templated values: %w", err)
		}
		return res, nil
	case len(gg.Files) > 0:
		return e.gitFiles(gg.Files, gg.Values, gg.PathParamPrefix, gg.RepoURL)
	}
	return nil, errors.New("ApplicationSet git generator names neither directories nor files")
}

// filterDirs keeps the directories a pattern includes and none excludes, whatever
// the order of the patterns (filterApps in git.go, path.Match as written).
func filterDirs(items []gitPathItem, all []string) []string {
	var res []string
	for _, dir := range all {
		in, out := false, false
		for _, it := range items {
			ok, err := path.Match(it.Path, dir)
			if err != nil || !ok {
				continue
			}
			if it.Exclude {
				out = true
			} else {
				in = true
			}
		}
		if in && !out {
			res = append(res, dir)
		}
	}
	return res
}

// dirParams are the parameters of one directory (generateParamsFromApps).
func (e *expander) dirParams(dir, prefix string) map[string]any {
	params := map[string]any{}
	if e.goTpl {
		p := map[string]any{
			"path": dir, "basename": path.Base(dir), "basenameNormalized": render.SanitizeName(path.Base(dir)),
			"segments": stringsToAny(strings.Split(dir, "/")),
		}
		if prefix != "" {
			params[prefix] = map[string]any{"path": p}
		} else {
			params["path"] = p
		}
		return params
	}
	name := "path"
	if prefix != "" {
		name = prefix + ".path"
	}
	params[name] = dir
	params[name+".basename"] = path.Base(dir)
	params[name+".basenameNormalized"] = render.SanitizeName(path.Base(dir))
	for i, s := range strings.Split(dir, "/") {
		if s != "" {
			params[name+"["+strconv.Itoa(i)+"]"] = s
		}
	}
	return params
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// gitFiles is the git files generator (generateParamsForGitFiles): the files the
// include patterns match minus those an exclude pattern matches, in path order;
// each file is one object or a list of objects, and each object one parameter set.
func (e *expander) gitFiles(items []gitPathItem, values map[string]string, prefix, repoURL string) ([]map[string]any, error) {
	files, err := e.d.repoFiles()
	if err != nil {
		return nil, err
	}
	picked := map[string]bool{}
	for _, it := range items {
		if !it.Exclude {
			for _, f := range files {
				if pathspecMatch(it.Path, f) {
					picked[f] = true
				}
			}
		}
	}
	for _, it := range items {
		if it.Exclude {
			for f := range picked {
				if pathspecMatch(it.Path, f) {
					delete(picked, f)
				}
			}
		}
	}
	paths := slices.Sorted(maps.Keys(picked))
	var res []map[string]any
	var from []string // the file of each parameter set
	read := int64(0)
	for _, f := range paths {
		full := filepath.Join(e.d.root, filepath.FromSlash(f))
		st, err := os.Stat(full)
		if err != nil {
			return nil, fmt.Errorf("unable to process file '%s' from repository '%s': %w", f, repoURL, err)
		}
		if st.Size() > maxScanBytes {
			return nil, fmt.Errorf("unable to process file '%s' from repository '%s': larger than %d MiB", f, repoURL, maxScanBytes>>20)
		}
		// What the files give goes to the templates in one batch: their
		// bytes together are held to the set's template output limit.
		if read += st.Size(); read > e.lim.MaxTotalBytes {
			return nil, fmt.Errorf("the git files generator reads more than %d bytes of files (the limit for one ApplicationSet's templates), at '%s'; match fewer or smaller files", e.lim.MaxTotalBytes, f)
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("unable to process file '%s' from repository '%s': %w", f, repoURL, err)
		}
		ps, err := e.fileParams(f, b, prefix)
		if err != nil {
			return nil, fmt.Errorf("unable to process file '%s' from repository '%s': %w", f, repoURL, err)
		}
		res = append(res, ps...)
		for range ps {
			from = append(from, f)
		}
	}
	if i, err := e.appendValues(values, res); err != nil {
		if i < 0 {
			return nil, err
		}
		return nil, fmt.Errorf("unable to process file '%s' from repository '%s': failed to append templated values: %w", from[i], repoURL, err)
	}
	return res, nil
}

// fileParams is generateParamsFromGitFile: the file's keys (flattened to dotted
// keys without Go templates) plus the path parameters of the file.
func (e *expander) fileParams(file string, content []byte, prefix string) ([]map[string]any, error) {
	var objs []map[string]any
	single := map[string]any{}
	if err := render.UnmarshalYAML(content, file, &single); err == nil {
		objs = append(objs, single)
	} else if err := render.UnmarshalYAML(content, file, &objs); err != nil {
		return nil, fmt.Errorf("unable to parse file: %w", err)
	}
	dir := path.Dir(file)
	var res []map[string]any
	for _, obj := range objs {
		params := map[string]any{}
		if e.goTpl {
			maps.Copy(params, obj)
			p := map[string]any{
				"path": dir, "basename": path.Base(dir), "filename": path.Base(file),
				"basenameNormalized": render.SanitizeName(path.Base(dir)), "filenameNormalized": render.SanitizeName(path.Base(file)),
				"segments": stringsToAny(strings.Split(dir, "/")),
			}
			if prefix != "" {
				params[prefix] = map[string]any{"path": p}
			} else {
				params["path"] = p
			}
		} else {
			for k, v := range flattenParams(obj) {
				params[k] = v
			}
			name := "path"
			if prefix != "" {
				name = prefix + ".path"
			}
			params[name] = dir
			params[name+".basename"] = path.Base(dir)
			params[name+".filename"] = path.Base(file)
			params[name+".basenameNormalized"] = render.SanitizeName(path.Base(dir))
			params[name+".filenameNormalized"] = render.SanitizeName(path.Base(file))
			for i, s := range strings.Split(dir, "/") {
				if s != "" {
					params[name+"["+strconv.Itoa(i)+"]"] = s
				}
			}
		}
		res = append(res, params)
	}
	return res, nil
}

// pathspecMatch matches a repository file against a git files pattern the way
// Argo CD's repo server lists them by default (`git ls-files -- <pattern>`,
// util/git/client.go LsFiles): a pattern without wildcards names a file or a
// directory prefix; with wildcards it is an fnmatch pattern whose * and ? also
// match / (git pathspecs without the :(glob) magic).
func pathspecMatch(pattern, file string) bool {
	pattern = strings.TrimPrefix(pattern, "./")
	if !strings.ContainsAny(pattern, "*?[") {
		p := strings.TrimSuffix(pattern, "/")
		return file == p || strings.HasPrefix(file, p+"/")
	}
	re, err := pathspecRegexp(pattern)
	if err != nil {
		return false
	}
	return re.MatchString(file)
}

func pathspecRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(pattern[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// repoDirs lists the checkout's directories (the repo server's directory list:
// every directory but .git, root-relative), sorted.
func (d *discovery) repoDirs() ([]string, error) {
	if d.dirs == nil {
		if err := d.listRepo(); err != nil {
			return nil, err
		}
	}
	return d.dirs, nil
}

// repoFiles lists the checkout's files, root-relative and sorted.
func (d *discovery) repoFiles() ([]string, error) {
	if d.files == nil {
		if err := d.listRepo(); err != nil {
			return nil, err
		}
	}
	return d.files, nil
}

func (d *discovery) listRepo() error {
	dirs, files := []string{}, []string{}
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == d.root {
			return nil
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(d.root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case e.IsDir():
			dirs = append(dirs, rel)
		case e.Type().IsRegular():
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the repository: %w", err)
	}
	sort.Strings(dirs)
	sort.Strings(files)
	d.dirs, d.files = dirs, files
	return nil
}

// clusters is the clusters generator (cluster.go): one parameter set per cluster
// Secret its selector matches, then the in-cluster one unless the selector is
// non-empty or a matching Secret already names the in-cluster server. Argo CD
// iterates a map of Secrets by cluster name; driftpreview orders them by name.
func (e *expander) clusters(raw []byte) ([]map[string]any, error) {
	var cg struct {
		Selector metav1.LabelSelector `json:"selector"`
		Values   map[string]string    `json:"values"`
		FlatList bool                 `json:"flatList"`
	}
	if err := json.Unmarshal(raw, &cg); err != nil {
		return nil, fmt.Errorf("reading clusters generator: %w", err)
	}
	all, err := e.d.argoClusters(e.ns)
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(&cg.Selector)
	if err != nil {
		return nil, fmt.Errorf("error converting label selector: %w", err)
	}
	ignoreLocal := len(cg.Selector.MatchLabels) > 0 || len(cg.Selector.MatchExpressions) > 0
	byName := map[string]ArgoCluster{}
	for _, c := range all {
		if sel.Matches(labels.Set(c.Labels)) {
			byName[c.Name] = c // the last Secret of a name wins, as in getSecretsByClusterName
		}
	}
	names := slices.Sorted(maps.Keys(byName))
	var res []map[string]any
	hasLocal := false
	for _, n := range names {
		c := byName[n]
		if c.Server == inClusterURL {
			hasLocal = true
		}
		params := map[string]any{"name": c.Name, "nameNormalized": render.SanitizeName(c.Name), "server": c.Server, "project": c.Project}
		if e.goTpl {
			meta := map[string]any{}
			if len(c.Annotations) > 0 {
				meta["annotations"] = deepCopy(c.Annotations)
			}
			if len(c.Labels) > 0 {
				meta["labels"] = deepCopy(c.Labels)
			}
			params["metadata"] = meta
		} else {
			for k, v := range c.Annotations {
				params["metadata.annotations."+k] = v
			}
			for k, v := range c.Labels {
				params["metadata.labels."+k] = v
			}
		}
		res = append(res, params)
	}
	local := -1
	if !ignoreLocal && !hasLocal {
		local = len(res)
		res = append(res, map[string]any{"name": inClusterName, "nameNormalized": inClusterName, "server": inClusterURL, "project": ""})
	}
	if i, err := e.appendValues(cg.Values, res); err != nil {
		switch {
		case i < 0:
			return nil, err
		case i == local:
			return nil, fmt.Errorf("error appending templated values for local cluster: %w", err)
		}
		return nil, fmt.Errorf("error appending templated values for cluster: %w", err)
	}
	if cg.FlatList {
		list := make([]any, len(res))
		for i, p := range res {
			list[i] = p
		}
		return []map[string]any{{"clusters": list}}, nil
	}
	return res, nil
}

// argoClusters lists Argo CD's cluster Secrets in namespace once per discovery.
func (d *discovery) argoClusters(namespace string) ([]ArgoCluster, error) {
	if d.opts.Clusters == nil {
		return nil, &notExpanded{noClusterLister}
	}
	if c, ok := d.clusterCache[namespace]; ok {
		return c.list, c.err
	}
	list, err := d.opts.Clusters(d.ctx, namespace)
	if err != nil {
		err = &notExpanded{fmt.Sprintf("the clusters generator reads Argo CD's cluster Secrets in namespace %s, which could not be read: %v", namespace, err)}
	}
	if d.clusterCache == nil {
		d.clusterCache = map[string]clusterList{}
	}
	d.clusterCache[namespace] = clusterList{list, err}
	return list, err
}

type clusterList struct {
	list []ArgoCluster
	err  error
}

type nestedGenerators struct {
	Generators []map[string]json.RawMessage `json:"generators"`
	MergeKeys  []string                     `json:"mergeKeys"`
}

// child runs one child of a matrix or merge (getParams in matrix.go and merge.go):
// it names exactly one generator, whose own template is ignored. spec, when not
// nil, is the generator's spec interpolated (childSpecs).
func (e *expander) child(entry map[string]json.RawMessage, spec any, depth int) ([]map[string]any, error) {
	kind, err := childKind(entry)
	if err != nil {
		return nil, err
	}
	return e.generate(kind, entry, spec, depth+1)
}

// childKind is the one generator a child of a matrix or merge names; its own
// template is dropped.
func childKind(entry map[string]json.RawMessage) (string, error) {
	kinds := generatorKinds(entry)
	delete(entry, "template")
	switch {
	case len(kinds) == 0:
		return "", errors.New("child generator generated no parameters")
	case len(kinds) > 1:
		return "", errors.New("found more than one generator in matrix.Generators")
	}
	return kinds[0], nil
}

// childSpecs interpolates a matrix's second child with each parameter set of
// the first (RenderGeneratorParams, in Transform), in one batch: specs[i] is
// the spec for interps[i], nil where interps[i] is empty (not interpolated).
func (e *expander) childSpecs(entry map[string]json.RawMessage, interps []map[string]any) ([]any, error) {
	kind, err := childKind(entry)
	if err != nil {
		return nil, err
	}
	var spec any
	if err := json.Unmarshal(entry[kind], &spec); err != nil {
		return nil, fmt.Errorf("reading %s generator: %w", kind, err)
	}
	var idx []int
	var sets []map[string]any
	for i, p := range interps {
		if len(p) > 0 {
			idx = append(idx, i)
			sets = append(sets, p)
		}
	}
	out, err := e.interpolateAll(spec, sets)
	if err != nil {
		return nil, fmt.Errorf("failed to replace parameters in generator: %w", err)
	}
	specs := make([]any, len(interps))
	for j, i := range idx {
		specs[i] = out[j]
	}
	return specs, nil
}

// matrix is the matrix generator (matrix.go): exactly two children; the second is
// interpolated with each parameter set of the first, and each pair combined: with
// Go templates the first child's values win in a deep merge, without them a key
// both give with different values is an error (utils.CombineStringMaps).
func (e *expander) matrix(raw []byte, depth int) ([]map[string]any, error) {
	var mg nestedGenerators
	if err := json.Unmarshal(raw, &mg); err != nil {
		return nil, fmt.Errorf("reading matrix generator: %w", err)
	}
	switch {
	case len(mg.Generators) < 2:
		return nil, errors.New("found less than two generators, Matrix support only two")
	case len(mg.Generators) > 2:
		return nil, errors.New("found more than two generators, Matrix support only two")
	}
	g0, err := e.child(mg.Generators[0], nil, depth)
	if err != nil {
		return nil, wrapChild(err, "error failed to get params for first generator in matrix generator")
	}
	second := maps.Clone(mg.Generators[1])
	specs, err := e.childSpecs(maps.Clone(second), g0)
	if err != nil {
		return nil, wrapChild(err, "failed to get params for second generator in the matrix generator")
	}
	res := []map[string]any{}
	size := int64(0)
	for i, a := range g0 {
		g1, err := e.child(maps.Clone(second), specs[i], depth)
		if err != nil {
			return nil, wrapChild(err, "failed to get params for second generator in the matrix generator")
		}
		for _, b := range g1 {
			if len(res) >= e.maxApps {
				// Past the Applications one set may generate: counted, not
				// made (a matrix multiplies).
				e.cut++
				continue
			}
			var c map[string]any
			if e.goTpl {
				c = deepMerge(deepCopyMap(b), deepCopyMap(a))
			} else if c, err = combineStringMaps(a, b); err != nil {
				return nil, fmt.Errorf("failed to combine string maps with merging params for the matrix generator: %w", err)
			}
			if size += paramSize(c); size > e.lim.MaxTotalBytes {
				return nil, fmt.Errorf("the matrix generator makes more than %d bytes of parameters (the limit for one ApplicationSet's templates); combine smaller generators", e.lim.MaxTotalBytes)
			}
			res = append(res, c)
		}
	}
	return res, nil
}

// paramSize is about the size of a parameter set as JSON: its strings and keys,
// and a few bytes per other value.
func paramSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + 2
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			n += int64(len(k)) + 4 + paramSize(e)
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range x {
			n += 1 + paramSize(e)
		}
		return n
	}
	return 8
}

// wrapChild keeps a child's notExpanded reason as it is: the matrix or merge is
// then not rendered for that reason.
func wrapChild(err error, msg string) error {
	var ne *notExpanded
	if errors.As(err, &ne) {
		return err
	}
	return fmt.Errorf("%s: %w", msg, err)
}

func combineStringMaps(a, b map[string]any) (map[string]any, error) {
	res := map[string]any{}
	for k, v := range a {
		res[k] = fmt.Sprintf("%v", v)
	}
	for k, v := range b {
		s := fmt.Sprintf("%v", v)
		if cur, ok := res[k]; ok && cur != s {
			return nil, fmt.Errorf("found duplicate key %s with different value, a: %s ,b: %s", k, cur, s)
		}
		res[k] = s
	}
	return res, nil
}

// merge is the merge generator (merge.go): the first child's parameter sets, each
// overridden by the sets of the later children that have the same values for all
// mergeKeys (top-level parameter names). Sets no later child matches stay; sets
// of later children that match no base set are dropped. Argo CD returns them in
// map order; driftpreview keeps the first child's order.
func (e *expander) merge(raw []byte, depth int) ([]map[string]any, error) {
	var mg nestedGenerators
	if err := json.Unmarshal(raw, &mg); err != nil {
		return nil, fmt.Errorf("reading merge generator: %w", err)
	}
	if len(mg.Generators) < 2 {
		return nil, errors.New("found less than two generators, Merge requires two or more")
	}
	var sets [][]map[string]any
	for i, g := range mg.Generators {
		ps, err := e.child(g, nil, depth)
		if err != nil {
			return nil, wrapChild(err, fmt.Sprintf("error getting params from generator %d of %d", i+1, len(mg.Generators)))
		}
		sets = append(sets, ps)
	}
	baseKeys, base, err := byMergeKey(mg.MergeKeys, sets[0])
	if err != nil {
		return nil, err
	}
	for _, ps := range sets[1:] {
		_, over, err := byMergeKey(mg.MergeKeys, ps)
		if err != nil {
			return nil, err
		}
		for _, k := range baseKeys {
			o, ok := over[k]
			if !ok {
				continue
			}
			if e.goTpl {
				base[k] = deepMerge(base[k], deepCopyMap(o))
			} else {
				maps.Copy(base[k], o)
			}
		}
	}
	res := make([]map[string]any, 0, len(baseKeys))
	for _, k := range baseKeys {
		res = append(res, base[k])
	}
	return res, nil
}

// byMergeKey is getParamSetsByMergeKey: each set keyed by the JSON of its
// mergeKeys' values; two sets with the same key are an error.
func byMergeKey(mergeKeys []string, sets []map[string]any) ([]string, map[string]map[string]any, error) {
	if len(mergeKeys) == 0 {
		return nil, nil, errors.New("no merge keys were specified, Merge requires at least one")
	}
	var order []string
	out := map[string]map[string]any{}
	for _, s := range sets {
		key := map[string]any{}
		for _, mk := range mergeKeys {
			key[mk] = s[mk]
		}
		b, err := json.Marshal(key)
		if err != nil {
			return nil, nil, fmt.Errorf("error marshalling param set key json: %w", err)
		}
		if _, dup := out[string(b)]; dup {
			return nil, nil, fmt.Errorf("the parameters from a generator were not unique by the given mergeKeys, Merge requires all param sets to be unique. Duplicate key was %s", b)
		}
		out[string(b)] = deepCopyMap(s)
		order = append(order, string(b))
	}
	return order, out, nil
}
