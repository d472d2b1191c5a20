package config

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// NewTarget gives the defaults of a target: render.DefaultOptions, prune on, and the
// DefaultManager field manager.
func NewTarget(p string) Target {
	return Target{Name: p, Path: p, Render: render.DefaultOptions(), Sync: Sync{Prune: true, Manager: DefaultManager}}
}

// target reads one targets[] entry. It returns the line of the target's name (or of
// the entry when the name defaults to the path) for duplicate-name errors.
func (p *parser) target(n *yaml.Node, field string) (Target, int, bool) {
	before := len(p.errs)
	t := NewTarget("")
	var name string
	nameLine := n.Line
	var valuesFiles []*yaml.Node
	var valuesField string
	sawPath := false
	ok := p.object(n, field, keysTarget, func(key string, k, v *yaml.Node) {
		f := join(field, key)
		switch key {
		case "name":
			name, _ = p.nonEmpty(v, f)
			nameLine = k.Line
		case "path":
			sawPath = true
			t.Path, _ = p.repoPath(v, f)
		case "renderer":
			if r, ok := p.enum(v, f, renderers, "renderer"); ok {
				t.Render.Renderer = render.Renderer(r)
			}
		case "namespace":
			t.Namespace, _ = p.str(v, f)
			t.Render.Namespace = t.Namespace
		case "cluster":
			t.Cluster, _ = p.str(v, f)
		case "helm":
			valuesField = join(f, "valuesFiles")
			p.object(v, f, keysHelm, func(key string, k, v *yaml.Node) {
				f := join(f, key)
				h := &t.Render.Helm
				switch key {
				case "releaseName":
					h.ReleaseName, _ = p.str(v, f)
				case "valuesFiles":
					p.list(v, f, func(i int, item *yaml.Node) { valuesFiles = append(valuesFiles, item) })
				case "values":
					h.Values = p.anyMap(v, f)
				case "skipCrds":
					h.SkipCRDs, _ = p.boolean(v, f)
				case "kubeVersion":
					if s, ok := p.str(v, f); ok {
						if !kubeVersion.MatchString(s) {
							p.fail(v, f, "want a Kubernetes version like v1.37.0, got %s", display(s))
							return
						}
						h.KubeVersion = s
					}
				}
			})
		case "kustomize":
			p.object(v, f, keysKustomize, func(key string, k, v *yaml.Node) {
				f := join(f, key)
				ko := &t.Render.Kustomize
				switch key {
				case "namePrefix":
					ko.NamePrefix, _ = p.str(v, f)
				case "nameSuffix":
					ko.NameSuffix, _ = p.str(v, f)
				case "images":
					ko.Images = p.strings(v, f, nil)
				case "commonLabels":
					ko.CommonLabels = p.stringMap(v, f)
				case "commonAnnotations":
					ko.CommonAnnotations = p.stringMap(v, f)
				}
			})
		case "directory":
			p.object(v, f, keysDirectory, func(key string, k, v *yaml.Node) {
				f := join(f, key)
				d := &t.Render.Plain
				switch key {
				case "recurse":
					d.Recurse, _ = p.boolean(v, f)
				case "include":
					d.Include = p.globs(v, f)
				case "exclude":
					d.Exclude = p.globs(v, f)
				}
			})
		case "sync":
			p.object(v, f, keysSync, func(key string, k, v *yaml.Node) {
				f := join(f, key)
				switch key {
				case "prune":
					t.Sync.Prune, _ = p.boolean(v, f)
				case "selfHeal":
					t.Sync.SelfHeal, _ = p.boolean(v, f)
				case "manager":
					t.Sync.Manager, _ = p.nonEmpty(v, f)
				case "replace":
					t.Sync.Replace, _ = p.boolean(v, f)
				}
			})
		case "ignore":
			t.Ignore = p.ignoreRules(v, f)
		case "watch":
			t.Watch = p.globs(v, f)
		}
	})
	if ok && !sawPath {
		p.fail(n, join(field, "path"), "missing; say which directory to render, relative to the repository root")
	}
	// Values files are written relative to the target, as Argo CD's valueFiles are
	// relative to the chart; render wants them relative to the repository root.
	if len(valuesFiles) > 0 {
		t.Render.Helm.ValuesFiles = []string{}
	}
	for i, v := range valuesFiles {
		f := index(valuesField, i)
		s, ok := p.nonEmpty(v, f)
		if !ok {
			continue
		}
		if strings.HasPrefix(s, "/") || strings.Contains(s, `\`) {
			p.fail(v, f, "%s must be relative to the target path, with / separators", display(s))
			continue
		}
		joined := path.Join(t.Path, s)
		if t.Path != "" && BadRepoPath(joined) != "" {
			p.fail(v, f, "%s leaves the repository (it resolves to %s)", display(s), display(joined))
			continue
		}
		t.Render.Helm.ValuesFiles = append(t.Render.Helm.ValuesFiles, joined)
	}
	t.Name = name
	if t.Name == "" {
		t.Name = t.Path
	}
	return t, nameLine, ok && len(p.errs) == before
}

// anyMap reads free-form values (helm.values). Their content is never quoted in
// errors: values files are where secrets tend to be pasted.
func (p *parser) anyMap(n *yaml.Node, field string) map[string]any {
	if n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping, got %s", describe(n))
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		p.fail(n, field, "cannot be read: look for duplicate keys, or anchors and aliases that expand too far")
		return nil
	}
	m, _ := normalise(v).(map[string]any)
	return m
}

// normalise turns the map[any]any that YAML gives for non-string keys into
// map[string]any, as Helm expects.
func normalise(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalise(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = normalise(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = normalise(e)
		}
		return x
	}
	return v
}

func (p *parser) policy(n *yaml.Node) diffing.Policy {
	pol := diffing.DefaultPolicy()
	p.object(n, "policy", keysPolicy, func(key string, k, v *yaml.Node) {
		f := join("policy", key)
		switch key {
		case "fail":
			pol.Fail = p.rules(v, f)
		case "severity":
			if v.Kind != yaml.MappingNode {
				p.fail(v, f, "want a mapping of rule: severity, got %s", describe(v))
				return
			}
			pol.Severity = map[diffing.Rule]diffing.Severity{}
			for _, kv := range p.pairs(v, f) {
				r, ok := p.rule(kv.key, f)
				val := p.deref(kv.val)
				if val == nil {
					return
				}
				name, sok := p.str(val, join(f, kv.key.Value))
				if !sok {
					continue
				}
				if !slices.Contains(severities, name) {
					hint := ""
					if name == "none" {
						hint = "; to silence a rule, add an ignore rule with rules: [" + kv.key.Value + "] and a reason"
					}
					p.fail(val, join(f, kv.key.Value), "unknown severity %s (want one of: %s)%s", display(name), strings.Join(severities, ", "), hint)
					continue
				}
				sev, _ := diffing.ParseSeverity(name)
				if ok {
					pol.Severity[r] = sev
				}
			}
		}
	})
	return pol
}

func (p *parser) statefulKind(n *yaml.Node, field string) (schema.GroupKind, bool) {
	var gk schema.GroupKind
	sawKind := false
	ok := p.object(n, field, keysStatefulKind, func(key string, k, v *yaml.Node) {
		switch key {
		case "group":
			gk.Group, _ = p.str(v, join(field, key))
		case "kind":
			sawKind = true
			gk.Kind, _ = p.nonEmpty(v, join(field, key))
		}
	})
	if ok && !sawKind {
		p.fail(n, join(field, "kind"), "missing; name the kind, e.g. {group: postgresql.cnpg.io, kind: Cluster}")
		return gk, false
	}
	return gk, ok && gk.Kind != ""
}

func (p *parser) ignoreRules(n *yaml.Node, field string) []diffing.IgnoreRule {
	out := []diffing.IgnoreRule{}
	p.list(n, field, func(i int, v *yaml.Node) {
		if r, ok := p.ignoreRule(v, index(field, i)); ok {
			out = append(out, r)
		}
	})
	return out
}

func (p *parser) ignoreRule(n *yaml.Node, field string) (diffing.IgnoreRule, bool) {
	before := len(p.errs)
	r := diffing.IgnoreRule{Origin: fmt.Sprintf("%s:%d", p.file, n.Line)}
	sawReason, matchers := false, 0
	ok := p.object(n, field, keysIgnore, func(key string, k, v *yaml.Node) {
		f := join(field, key)
		if key != "reason" && key != "expires" {
			matchers++
		}
		switch key {
		case "group":
			r.Group, _ = p.str(v, f)
		case "kind":
			r.Kind, _ = p.nonEmpty(v, f)
		case "namespace":
			r.Namespace, _ = p.nonEmpty(v, f)
		case "name":
			r.Name, _ = p.nonEmpty(v, f)
		case "paths":
			r.Paths = p.strings(v, f, func(s string, v *yaml.Node, f string) bool {
				if !strings.HasPrefix(s, "/") {
					p.fail(v, f, "%s is not a JSON pointer; write it like /spec/replicas", display(s))
					return false
				}
				return true
			})
		case "managers":
			r.Managers = p.strings(v, f, nil)
		case "rules":
			r.Rules = p.rules(v, f)
		case "reason":
			sawReason = true
			r.Reason, _ = p.nonEmpty(v, f)
		case "expires":
			r.Expires, _ = p.date(v, f)
		}
	})
	if !ok {
		return r, false
	}
	if !sawReason {
		p.fail(n, join(field, "reason"), "missing; every ignore rule must say why the finding is acceptable")
	}
	if matchers == 0 {
		p.fail(n, field, "matches everything; name at least one of group, kind, namespace, name, paths, managers or rules")
	}
	return r, len(p.errs) == before
}

// date reads a YYYY-MM-DD day as midnight UTC.
func (p *parser) date(n *yaml.Node, field string) (time.Time, bool) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!timestamp") {
		p.fail(n, field, "want a date like 2027-03-01 (YYYY-MM-DD), got %s", describe(n))
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, n.Value)
	if err != nil || !dateRE.MatchString(n.Value) {
		p.fail(n, field, "want a date like 2027-03-01 (YYYY-MM-DD), got %s", display(n.Value))
		return time.Time{}, false
	}
	return d.UTC(), true
}
