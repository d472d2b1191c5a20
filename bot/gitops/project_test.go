package gitops

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// proj is the compact projection of a target the discovery tests compare: what a
// reviewer of the fixture repos can check by reading them.
type proj struct {
	Name, Path, Namespace, Cluster string
	Renderer                       render.Renderer
	Prune, SelfHeal, Replace       bool
	Manager                        string
	Ignore                         []string
	Notes                          []string
	Skip                           string
	Findings                       []string
	Controller                     string
}

func project(ts []config.Target) []proj {
	var out []proj
	for _, t := range ts {
		p := proj{
			Name: t.Name, Path: t.Path, Namespace: t.Namespace, Cluster: t.Cluster, Renderer: t.Render.Renderer,
			Prune: t.Sync.Prune, SelfHeal: t.Sync.SelfHeal, Replace: t.Sync.Replace, Manager: t.Sync.Manager,
			Ignore: ignoreStrings(t.Ignore), Notes: t.Notes, Skip: t.Skip,
		}
		for _, f := range t.Findings {
			p.Findings = append(p.Findings, fmt.Sprintf("%s/%s %s: %s", f.Rule, f.Severity, f.Key, f.Message))
		}
		if c := t.Controller; c != nil {
			p.Controller = fmt.Sprintf("%s %s/%s in %s auto=%t prune=%t selfHeal=%t suspended=%t replace=%t",
				c.Kind, c.Namespace, c.Name, c.Source, c.AutoSync, c.Prune, c.SelfHeal, c.Suspended, c.Replace)
		}
		out = append(out, p)
	}
	return out
}

func ignoreStrings(rules []diffing.IgnoreRule) []string {
	var out []string
	for _, r := range rules {
		jq := ""
		if len(r.JQ) > 0 {
			jq = " jq=" + strings.Join(r.JQ, ",")
		}
		out = append(out, fmt.Sprintf("%s/%s %s/%s paths=%s managers=%s%s: %s",
			r.Group, r.Kind, r.Namespace, r.Name, strings.Join(r.Paths, ","), strings.Join(r.Managers, ","), jq, r.Reason))
	}
	return out
}

// renderProj is the part of the render options both discovery and
// .driftpreview.yaml can express, for the equivalence test.
type renderProj struct {
	Name, Path, Namespace, Cluster string
	Renderer                       render.Renderer
	RenderNamespace                string
	Sync                           config.Sync
	ReleaseName                    string
	ValuesFiles                    []string
	Values                         string // JSON, so YAML ints and JSON floats compare equal
	SkipCRDs                       bool
	NamePrefix, NameSuffix         string
	Images                         []string
	CommonLabels                   map[string]string
	CommonAnnotations              map[string]string
	Recurse                        bool
	Include, Exclude               []string
	Ignore                         []string
}

func projectRender(ts []config.Target) []renderProj {
	var out []renderProj
	for _, t := range ts {
		o := t.Render
		values := ""
		if len(o.Helm.Values) > 0 {
			b, _ := json.Marshal(o.Helm.Values)
			values = string(b)
		}
		out = append(out, renderProj{
			Name: t.Name, Path: t.Path, Namespace: t.Namespace, Cluster: t.Cluster, Renderer: o.Renderer,
			RenderNamespace: o.Namespace, Sync: t.Sync,
			ReleaseName: o.Helm.ReleaseName, ValuesFiles: nilIfEmpty(o.Helm.ValuesFiles), Values: values, SkipCRDs: o.Helm.SkipCRDs,
			NamePrefix: o.Kustomize.NamePrefix, NameSuffix: o.Kustomize.NameSuffix, Images: nilIfEmpty(o.Kustomize.Images),
			CommonLabels: nilIfEmptyMap(o.Kustomize.CommonLabels), CommonAnnotations: nilIfEmptyMap(o.Kustomize.CommonAnnotations),
			Recurse: o.Plain.Recurse, Include: nilIfEmpty(o.Plain.Include), Exclude: nilIfEmpty(o.Plain.Exclude),
			Ignore: ignoreStrings(t.Ignore),
		})
	}
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilIfEmptyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
