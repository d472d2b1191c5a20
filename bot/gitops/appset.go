package gitops

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

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
		TemplatePatch     *string                      `json:"templatePatch"`
		SyncPolicy        *struct {
			PreserveResourcesOnDeletion bool   `json:"preserveResourcesOnDeletion"`
			ApplicationsSync            string `json:"applicationsSync"`
		} `json:"syncPolicy"`
	} `json:"spec"`
}

// resourcesFinalizer is Argo CD's resources finalizer (argoappsv1.ResourcesFinalizerName).
const resourcesFinalizer = diffing.ArgoCDResourcesFinalizer

// SetInfo is what discovery knows about one ApplicationSet at one side of the PR:
// the Applications it generates (by name, as Argo CD renders them) and how its
// controller treats them. Complete is false when a generator could not be
// expanded, so an Application missing from Apps may still be generated.
type SetInfo struct {
	Name, Namespace, File string
	Apps                  map[string]map[string]any
	Complete              bool
	// Policy is spec.syncPolicy.applicationsSync ("" means sync).
	Policy string
	// Preserve is spec.syncPolicy.preserveResourcesOnDeletion.
	Preserve bool
}

// AllowsDelete follows ApplicationsSyncPolicy.AllowDelete (argo-cd
// pkg/apis/application/v1alpha1/applicationset_types.go): only sync (the
// default) and create-delete let the ApplicationSet controller delete an
// Application its generators no longer produce.
func (s SetInfo) AllowsDelete() bool {
	return s.Policy == "" || s.Policy == "sync" || s.Policy == "create-delete"
}

// AllowsUpdate follows ApplicationsSyncPolicy.AllowUpdate: sync and create-update.
func (s SetInfo) AllowsUpdate() bool {
	return s.Policy == "" || s.Policy == "sync" || s.Policy == "create-update"
}

// expandAppSet turns an ApplicationSet into the Applications Argo CD generates from
// it (applicationset/controllers/template/template.go GenerateApplications).
// Generators driftpreview cannot expand become not-rendered entries and notes;
// the others are still expanded. Every template runs in a render process
// (Options.Templates), once per ApplicationSet and discovery: build runs again
// after each round of rendering, and takes the same Applications.
func (d *discovery) expandAppSet(m *manifest) (apps []*manifest, notRendered []config.Target, notes []string, info SetInfo) {
	ns := m.namespaceOr(defaultArgoNS)
	info = SetInfo{Name: m.Name, Namespace: ns, File: m.File, Apps: map[string]map[string]any{}, Complete: true}
	key := render.ObjectKey{Group: groupArgo, Kind: diffing.ArgoCDApplicationSet.Kind, Namespace: ns, Name: m.Name}
	var reasons []string
	skip := func(reason string) {
		info.Complete = false
		if slices.Contains(reasons, reason) {
			return
		}
		reasons = append(reasons, reason)
		notRendered = append(notRendered, config.Target{
			Name:       m.Name,
			Controller: &diffing.Controller{Kind: diffing.ArgoCDApplicationSet.Kind, Name: m.Name, Namespace: ns, Source: m.File},
			Skip:       reason,
			Findings:   []diffing.Finding{notRenderedFinding(key, fmt.Sprintf("ApplicationSet %s is not rendered: %s", m.Name, reason))},
		})
		notes = append(notes, fmt.Sprintf("ApplicationSet %s (%s): %s", m.Name, m.where(), reason))
	}
	if d.sets == nil {
		d.sets = map[*manifest]*setGen{}
	}
	g := d.sets[m]
	if g == nil {
		g = d.generateSet(m, ns)
		d.sets[m] = g
	}
	info.Policy, info.Preserve = g.policy, g.preserve
	notes = append(notes, g.notes...)
	for _, r := range g.skips {
		skip(r)
	}
	if g.failed {
		return nil, notRendered, notes, info
	}
	// Applications are created in name order (Reconcile sorts validApps); two
	// with the same name are one Application, the last one rendered winning.
	byName := map[string]*manifest{}
	for _, gen := range g.objs {
		obj := deepCopyMap(gen)
		obj["apiVersion"] = "argoproj.io/v1alpha1"
		obj["kind"] = "Application"
		md, _ := obj["metadata"].(map[string]any)
		if md == nil {
			md = map[string]any{}
			obj["metadata"] = md
		}
		// The app's namespace must be the ApplicationSet's (template.go).
		md["namespace"] = ns
		app := newManifest(obj)
		if app == nil {
			skip("template gives an Application without a name")
			continue
		}
		app.File, app.Line, app.Parent, app.Cluster, app.Generator = m.File, m.Line, m.Parent, m.Cluster, m.Name
		app.parentKey = m.parentKey
		app.generatorKeeps = !info.AllowsDelete()
		if _, dup := byName[app.Name]; dup {
			notes = append(notes, fmt.Sprintf("ApplicationSet %s (%s): two parameter sets generate Application %s; Argo CD keeps one", m.Name, m.where(), app.Name))
		}
		byName[app.Name] = app
		info.Apps[app.Name] = obj
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		apps = append(apps, byName[n])
	}
	return apps, notRendered, notes, info
}

// setGen is what an ApplicationSet's generators and templates made, kept for
// the rounds of discovery that follow: the rendered Applications (without
// apiVersion, kind and namespace), the reasons it is not (wholly) rendered,
// notes, and whether generation failed (nothing of it is applied).
type setGen struct {
	objs         []map[string]any
	skips, notes []string
	failed       bool
	policy       string
	preserve     bool
}

// generateSet runs m's generators and templates.
func (d *discovery) generateSet(m *manifest, ns string) *setGen {
	g := &setGen{}
	var as appSet
	if err := m.decode(&as); err != nil {
		g.skips = append(g.skips, fmt.Sprintf("invalid ApplicationSet: %v", err))
		g.failed = true
		return g
	}
	if sp := as.Spec.SyncPolicy; sp != nil {
		g.policy, g.preserve = sp.ApplicationsSync, sp.PreserveResourcesOnDeletion
	}
	lim := d.opts.TemplateLimits
	if lim.MaxTotalBytes <= 0 {
		lim.MaxTotalBytes = render.DefaultTemplateLimits().MaxTotalBytes
	}
	e := &expander{d: d, goTpl: as.Spec.GoTemplate, goOpts: as.Spec.GoTemplateOptions, ns: ns,
		name: "ApplicationSet " + m.Name, lim: lim, room: lim.MaxTotalBytes, maxApps: d.opts.MaxAppsPerSet}
	type generated struct {
		params   []map[string]any
		template map[string]any
	}
	var all []generated
	var failed error
	total := 0
	for i, gs := range as.Spec.Generators {
		kinds := generatorKinds(gs)
		if len(kinds) == 0 {
			// CheckInvalidGenerators (applicationset/utils/utils.go): Argo CD
			// logs an unrecognized generator and generates nothing from it.
			g.notes = append(g.notes, fmt.Sprintf("ApplicationSet %s (%s): generator %d names no generator Argo CD knows; Argo CD ignores it", m.Name, m.where(), i+1))
			continue
		}
		for _, kind := range kinds {
			params, err := e.generate(kind, gs, nil, 0)
			var ne *notExpanded
			switch {
			case errors.As(err, &ne):
				g.skips = append(g.skips, ne.reason)
				continue
			case err != nil:
				failed = fmt.Errorf("generator %s: %w", kind, err)
			}
			if failed != nil {
				break
			}
			// Past the Applications one set may generate: counted, not
			// rendered.
			if keep := max(0, e.maxApps-total); len(params) > keep {
				e.cut += len(params) - keep
				params = params[:keep]
			}
			total += len(params)
			// mergeGeneratorTemplate (generator_spec_processor.go): the
			// generator's own template, filled in from the ApplicationSet's.
			tpl := deepCopyMap(as.Spec.Template)
			if gt := generatorTemplate(gs[kind]); gt != nil {
				tpl = fillFrom(gt, tpl)
			}
			all = append(all, generated{params: params, template: tpl})
		}
		if failed != nil {
			break
		}
	}
	if failed == nil {
		for _, gen := range all {
			objs, err := e.renderApps(gen.template, gen.params, as.Spec.TemplatePatch, g.preserve)
			if err != nil {
				failed = err
				break
			}
			g.objs = append(g.objs, objs...)
		}
	}
	if failed != nil {
		// GenerateApplications returns its first error and the controller then
		// creates, updates and deletes nothing (applicationset_controller.go
		// Reconcile): the set is not rendered, and its live Applications stay.
		g.skips = append(g.skips, fmt.Sprintf("%v (Argo CD applies nothing of an ApplicationSet whose generation fails)", failed))
		g.failed = true
		return g
	}
	if e.cut > 0 {
		g.skips = append(g.skips, fmt.Sprintf("its generators make %d parameter sets, over the limit of %d Applications per ApplicationSet: the first %d are previewed and %d are left out", total+e.cut, e.maxApps, total, e.cut))
	}
	return g
}

// generatorKinds are the generators one entry of spec.generators names
// (GetRelevantGenerators: every field but the selector), in a stable order.
func generatorKinds(g map[string]json.RawMessage) []string {
	var kinds []string
	for k, v := range g {
		if k == "selector" || string(v) == "null" {
			continue
		}
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// generatorTemplate is the template a generator carries (git.template, …).
func generatorTemplate(raw json.RawMessage) map[string]any {
	var g struct {
		Template map[string]any `json:"template"`
	}
	if json.Unmarshal(raw, &g) != nil || len(g.Template) == 0 {
		return nil
	}
	return g.Template
}

// fillFrom fills the fields dst lacks (or has empty) from src, recursing into
// maps: mergo.Merge without override, as mergeGeneratorTemplate uses it.
func fillFrom(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		dv, ok := dst[k]
		if !ok || isZero(dv) {
			dst[k] = sv
			continue
		}
		if dm, ok := dv.(map[string]any); ok {
			if sm, ok := sv.(map[string]any); ok {
				dst[k] = fillFrom(dm, sm)
			}
		}
	}
	return dst
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	out, _ := deepCopy(m).(map[string]any)
	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	}
	return v
}

// renderApps renders one Application from the template per parameter set
// (utils.Render.RenderTemplateParams), applies templatePatch
// (controllers/template/patch.go) and adds the resources finalizer the way
// Argo CD does. The template and the patch of every set are executed in one
// batch in a render process.
func (e *expander) renderApps(tpl map[string]any, sets []map[string]any, patch *string, preserve bool) ([]map[string]any, error) {
	trees := []render.TemplateTree{{Tree: tpl}}
	if patch != nil {
		trees = append(trees, render.TemplateTree{Tree: *patch})
	}
	out, err := e.exec(trees, sets)
	if te, ok := errors.AsType[*render.TemplateError](err); ok && te.Tree == 1 {
		return nil, fmt.Errorf("error replacing values in templatePatch: %w", te.Err)
	}
	if err != nil {
		return nil, err
	}
	apps := make([]map[string]any, 0, len(out))
	for _, o := range out {
		obj, _ := o[0].(map[string]any)
		if obj == nil {
			obj = map[string]any{}
		}
		// The template's metadata fields are the Application's (GetTempApplication).
		app := map[string]any{"metadata": map[string]any{}}
		md := app["metadata"].(map[string]any)
		if tm, ok := obj["metadata"].(map[string]any); ok {
			for _, k := range []string{"name", "namespace", "labels", "annotations", "finalizers"} {
				if v, ok := tm[k]; ok && v != nil {
					md[k] = v
				}
			}
		}
		if spec, ok := obj["spec"]; ok {
			app["spec"] = spec
		}
		// RenderTemplateParams adds the resources finalizer when the template has no
		// finalizers and the set does not preserve resources on deletion.
		if fs, _ := md["finalizers"].([]any); len(fs) == 0 && !preserve {
			md["finalizers"] = []any{resourcesFinalizer}
		}
		if patch != nil {
			s, _ := o[1].(string)
			app, err = applyTemplatePatch(app, s)
			if err != nil {
				return nil, err
			}
		}
		apps = append(apps, app)
	}
	return apps, nil
}

// applyTemplatePatch applies a rendered templatePatch the way patch.go does: a
// strategic merge patch onto the Application. The Application type has no
// list-merge strategies of its own, so maps merge, lists are replaced and null
// deletes; metadata.finalizers merges (ObjectMeta's patchStrategy). The project
// cannot be changed by a patch.
func applyTemplatePatch(app map[string]any, patch string) (map[string]any, error) {
	var p map[string]any
	if err := render.UnmarshalYAML([]byte(patch), "templatePatch", &p); err != nil {
		return nil, fmt.Errorf("invalid templatePatch: %w", err)
	}
	project := getPath(app, "spec", "project")
	out := strategicMerge(app, p, "")
	if project != nil {
		if spec, ok := out["spec"].(map[string]any); ok {
			spec["project"] = project
		}
	} else if spec, ok := out["spec"].(map[string]any); ok {
		delete(spec, "project")
	}
	return out, nil
}

func strategicMerge(dst, patch map[string]any, at string) map[string]any {
	out := deepCopyMap(dst)
	for k, pv := range patch {
		where := at + "/" + k
		if pv == nil {
			delete(out, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = strategicMerge(dm, pm, where)
				continue
			}
			out[k] = strategicMerge(map[string]any{}, pm, where)
			continue
		}
		if where == "/metadata/finalizers" {
			if pl, ok := pv.([]any); ok {
				merged, _ := out[k].([]any)
				merged = slices.Clone(merged)
				for _, f := range pl {
					if !slices.Contains(merged, f) {
						merged = append(merged, f)
					}
				}
				out[k] = merged
				continue
			}
		}
		out[k] = deepCopy(pv)
	}
	return out
}

func getPath(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// GeneratedTouches compares what one ApplicationSet generates at base and at head:
// how many Applications the PR creates, deletes and changes, out of how many.
func GeneratedTouches(base, head SetInfo) (created, deleted, changed, total int) {
	for name, h := range head.Apps {
		b, ok := base.Apps[name]
		switch {
		case !ok:
			created++
		case !jsonEqual(b, h):
			changed++
		}
	}
	for name := range base.Apps {
		if _, ok := head.Apps[name]; !ok {
			deleted++
		}
	}
	return created, deleted, changed, len(head.Apps)
}

func jsonEqual(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

// SetKey names an ApplicationSet across base and head.
func SetKey(namespace, name string) string { return namespace + "/" + name }
