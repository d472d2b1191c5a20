package gitops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// appSet is the part of an Argo CD ApplicationSet discovery reads.
type appSet struct {
	Spec struct {
		GoTemplate        bool                         `json:"goTemplate"`
		GoTemplateOptions []string                     `json:"goTemplateOptions"`
		Generators        []map[string]json.RawMessage `json:"generators"`
		Template          map[string]any               `json:"template"`
		TemplatePatch     string                       `json:"templatePatch"`
	} `json:"spec"`
}

type listGenerator struct {
	Elements []map[string]any `json:"elements"`
}

type gitGenerator struct {
	RepoURL     string `json:"repoURL"`
	Revision    string `json:"revision"`
	Directories []struct {
		Path    string `json:"path"`
		Exclude bool   `json:"exclude"`
	} `json:"directories"`
	Files []json.RawMessage `json:"files"`
}

// expandAppSet turns an ApplicationSet into the Applications its list and git
// directory generators produce. Generators driftpreview does not expand become
// not-rendered entries and notes.
func (d *discovery) expandAppSet(m *manifest) (apps []*manifest, notRendered []config.Target, notes []string) {
	ns := m.namespaceOr(defaultArgoNS)
	key := render.ObjectKey{Group: groupArgo, Kind: "ApplicationSet", Namespace: ns, Name: m.Name}
	skip := func(reason string) {
		notRendered = append(notRendered, config.Target{
			Name:       m.Name,
			Controller: &diffing.Controller{Kind: "ApplicationSet", Name: m.Name, Namespace: ns, Source: m.File},
			Skip:       reason,
			Findings:   []diffing.Finding{notRenderedFinding(key, fmt.Sprintf("ApplicationSet %s is not rendered: %s", m.Name, reason))},
		})
		notes = append(notes, fmt.Sprintf("ApplicationSet %s (%s): %s", m.Name, m.where(), reason))
	}
	var as appSet
	if err := m.decode(&as); err != nil {
		skip(fmt.Sprintf("invalid ApplicationSet: %v", err))
		return nil, notRendered, notes
	}
	if as.Spec.TemplatePatch != "" {
		notes = append(notes, fmt.Sprintf("ApplicationSet %s (%s): templatePatch is not applied by driftpreview", m.Name, m.where()))
	}
	var paramSets []map[string]any
	for _, g := range as.Spec.Generators {
		kinds := make([]string, 0, len(g))
		for k := range g {
			if k != "selector" {
				kinds = append(kinds, k)
			}
		}
		sort.Strings(kinds)
		for _, kind := range kinds {
			switch kind {
			case "list":
				var lg listGenerator
				if err := json.Unmarshal(g[kind], &lg); err != nil {
					skip(fmt.Sprintf("list generator: %v", err))
					continue
				}
				paramSets = append(paramSets, lg.Elements...)
			case "git":
				var gg gitGenerator
				if err := json.Unmarshal(g[kind], &gg); err != nil {
					skip(fmt.Sprintf("git generator: %v", err))
					continue
				}
				if len(gg.Files) > 0 || len(gg.Directories) == 0 {
					skip("ApplicationSet generator git files is not expanded by driftpreview")
					continue
				}
				if !d.thisRepo(argoSource{RepoURL: gg.RepoURL, Path: "."}) {
					skip("source outside this repo: " + gg.RepoURL)
					continue
				}
				dirs, err := d.matchDirs(gg)
				if err != nil {
					skip(fmt.Sprintf("git generator: %v", err))
					continue
				}
				for _, dir := range dirs {
					paramSets = append(paramSets, pathParams(dir, as.Spec.GoTemplate))
				}
			default:
				skip(fmt.Sprintf("ApplicationSet generator %s is not expanded by driftpreview", kind))
			}
		}
	}
	for _, params := range paramSets {
		obj, err := applyTemplate(as.Spec.Template, params, as.Spec.GoTemplate, as.Spec.GoTemplateOptions)
		if err != nil {
			skip(fmt.Sprintf("template: %v", err))
			continue
		}
		obj["apiVersion"] = "argoproj.io/v1alpha1"
		obj["kind"] = "Application"
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		md["namespace"] = ns
		app := newManifest(obj)
		if app == nil {
			skip("template gives an Application without a name")
			continue
		}
		app.File, app.Line, app.Parent, app.Cluster, app.Generator = m.File, m.Line, m.Parent, m.Cluster, m.Name
		apps = append(apps, app)
	}
	return apps, notRendered, notes
}

// matchDirs lists the repository directories a git directory generator selects.
func (d *discovery) matchDirs(gg gitGenerator) ([]string, error) {
	var all []string
	err := filepath.WalkDir(d.root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() || p == d.root {
			return nil
		}
		if e.Name() == ".git" || e.Name() == "node_modules" {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(d.root, p)
		all = append(all, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing directories: %w", err)
	}
	var out []string
	for _, dir := range all {
		in := false
		for _, g := range gg.Directories {
			ok, err := path.Match(strings.TrimPrefix(g.Path, "./"), dir)
			if err != nil {
				return nil, fmt.Errorf("directory pattern %q: %w", g.Path, err)
			}
			if ok {
				if g.Exclude {
					in = false
					break
				}
				in = true
			}
		}
		if in {
			out = append(out, dir)
		}
	}
	slices.Sort(out)
	return out, nil
}

// pathParams are the parameters a git directory generator gives its template.
func pathParams(dir string, goTemplate bool) map[string]any {
	segs := strings.Split(dir, "/")
	base := segs[len(segs)-1]
	if goTemplate {
		s := make([]any, len(segs))
		for i, v := range segs {
			s[i] = v
		}
		return map[string]any{"path": map[string]any{
			"path": dir, "basename": base, "basenameNormalized": normalizeName(base), "segments": s,
		}}
	}
	p := map[string]any{"path": dir, "path.basename": base, "path.basenameNormalized": normalizeName(base)}
	for i, v := range segs {
		p["path["+strconv.Itoa(i)+"]"] = v
	}
	return p
}

var nonDNS = regexp.MustCompile(`[^a-z0-9-.]+`)

// normalizeName is Argo CD's basenameNormalized: a DNS-1123 friendly name.
func normalizeName(s string) string { return nonDNS.ReplaceAllString(strings.ToLower(s), "-") }

var fastTag = regexp.MustCompile(`\{\{\s*([^{}]+?)\s*\}\}`)

// applyTemplate renders an ApplicationSet template with one parameter set, string
// by string, the way Argo CD does (fasttemplate {{param}}, or Go templates).
func applyTemplate(tpl map[string]any, params map[string]any, goTemplate bool, goOpts []string) (map[string]any, error) {
	var subst func(string) (string, error)
	if goTemplate {
		subst = func(s string) (string, error) {
			if !strings.Contains(s, "{{") {
				return s, nil
			}
			t := template.New("template").Funcs(templateFuncs)
			for _, o := range goOpts {
				t = t.Option(o)
			}
			t, err := t.Parse(s)
			if err != nil {
				return "", err
			}
			var buf bytes.Buffer
			if err := t.Execute(&buf, params); err != nil {
				return "", err
			}
			return buf.String(), nil
		}
	} else {
		flat := map[string]string{}
		flatten("", params, flat)
		subst = func(s string) (string, error) {
			return fastTag.ReplaceAllStringFunc(s, func(tag string) string {
				name := strings.TrimSpace(tag[2 : len(tag)-2])
				if v, ok := flat[name]; ok {
					return v
				}
				return tag // Argo CD leaves unknown parameters as they are
			}), nil
		}
	}
	out, err := substTree(tpl, subst)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func substTree(v any, subst func(string) (string, error)) (any, error) {
	switch x := v.(type) {
	case string:
		return subst(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			s, err := substTree(e, subst)
			if err != nil {
				return nil, err
			}
			out[k] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			s, err := substTree(e, subst)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(key, e, out)
		}
	case string:
		out[prefix] = x
	case nil:
		out[prefix] = ""
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
}

// templateFuncs are the Sprig-style functions ApplicationSet Go templates use most;
// a template calling another function fails to parse and is reported.
var templateFuncs = template.FuncMap{
	"lower":      strings.ToLower,
	"upper":      strings.ToUpper,
	"trim":       strings.TrimSpace,
	"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
	"trimPrefix": func(p, s string) string { return strings.TrimPrefix(s, p) },
	"trimSuffix": func(p, s string) string { return strings.TrimSuffix(s, p) },
	"normalize":  normalizeName,
	"quote":      strconv.Quote,
	"join": func(sep string, v []any) string {
		s := make([]string, len(v))
		for i, e := range v {
			s[i] = fmt.Sprint(e)
		}
		return strings.Join(s, sep)
	},
	"default": func(def any, v ...any) any {
		if len(v) == 0 || v[0] == nil || v[0] == "" {
			return def
		}
		return v[0]
	},
	"toYaml": func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		return strings.TrimSuffix(string(b), "\n"), err
	},
}
