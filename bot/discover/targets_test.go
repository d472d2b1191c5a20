package discover

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing"
)

const setRepo = "https://github.com/example/fleet.git"

// appSet is an ApplicationSet over a list of environments; label is set on every
// generated Application.
func appSet(envs []string, label string) string {
	var els []string
	for _, e := range envs {
		els = append(els, "{env: "+e+"}")
	}
	return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: envs, namespace: argocd}
spec:
  generators:
    - list: {elements: [` + strings.Join(els, ", ") + `]}
  template:
    metadata: {name: 'web-{{env}}', labels: {team: ` + label + `}}
    spec:
      project: default
      source: {repoURL: ` + setRepo + `, path: web}
      destination: {server: https://kubernetes.default.svc, namespace: '{{env}}'}
      syncPolicy: {automated: {prune: true}}
`
}

func setTargets(t *testing.T, base, head string) *Result {
	t.Helper()
	dirs := map[string]string{}
	for side, set := range map[string]string{"base": base, "head": head} {
		d := t.TempDir()
		write(t, d, "web/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n")
		write(t, d, "argocd/envs.yaml", set)
		dirs[side] = d
	}
	opts := gitops.DefaultOptions()
	opts.RepoURLs = []string{setRepo}
	res, err := FromControllers(t.Context(), dirs["base"], dirs["head"], opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A change to the template touches every generated Application: the report says
// how many, on each of them; an Application the set no longer generates is
// deleted, one it newly generates is new.
func TestSetChanges(t *testing.T) {
	res := setTargets(t, appSet([]string{"dev", "qa", "prod"}, "a"), appSet([]string{"dev", "qa", "prod"}, "b"))
	want := "ApplicationSet argocd/envs: this PR changes every one of its 3 existing Applications."
	if !slices.Contains(res.Notes, want) {
		t.Errorf("notes %q lack %q", res.Notes, want)
	}
	for _, tg := range res.Targets {
		if !slices.Contains(tg.Notes, want) {
			t.Errorf("target %s: notes %q lack %q", tg.Name, tg.Notes, want)
		}
	}

	res = setTargets(t, appSet([]string{"dev", "prod"}, "a"), appSet([]string{"dev", "qa"}, "a"))
	want = "ApplicationSet argocd/envs: this PR generates 1 new Application it did not (web-qa); no longer generates 1 Application (web-prod), which its controller deletes."
	if !slices.Contains(res.Notes, want) {
		t.Errorf("notes %q lack %q", res.Notes, want)
	}
	deleted := map[string]bool{}
	for _, tg := range res.Targets {
		deleted[tg.Name] = tg.Controller.Deleted
		if tg.Controller.Generator != "envs" {
			t.Errorf("target %s: generator %q, want envs", tg.Name, tg.Controller.Generator)
		}
	}
	if !deleted["web-prod"] || deleted["web-dev"] || deleted["web-qa"] {
		t.Errorf("deleted = %v; only web-prod is deleted", deleted)
	}
	if !res.AtBase[Key(res.Targets[0])] {
		t.Errorf("web-dev is declared at base")
	}
}

// With applicationsSync create-update the ApplicationSet controller deletes no
// Application, and a set that cannot be fully expanded at head deletes none.
func TestSetKeepsApplications(t *testing.T) {
	keep := func(s string) string {
		return strings.Replace(s, "spec:\n  generators:", "spec:\n  syncPolicy: {applicationsSync: create-update}\n  generators:", 1)
	}
	unexpanded := func(s string) string {
		return strings.Replace(s, "  generators:\n", "  generators:\n    - pullRequest: {github: {owner: example, repo: shop}}\n", 1)
	}
	for name, c := range map[string][2]string{
		"create-update":      {keep(appSet([]string{"dev", "prod"}, "a")), keep(appSet([]string{"dev"}, "a"))},
		"unexpanded-at-head": {appSet([]string{"dev", "prod"}, "a"), unexpanded(appSet([]string{"dev"}, "a"))},
	} {
		t.Run(name, func(t *testing.T) {
			res := setTargets(t, c[0], c[1])
			for _, tg := range res.Targets {
				if tg.Controller != nil && tg.Controller.Deleted {
					t.Errorf("%s is marked deleted", tg.Name)
				}
			}
		})
	}
}

// TestMarkDeletedScopesIncompleteHead: a head whose discovery could not render
// one target hides only the deletions that target may hide (what base found
// through it, directly or through what it declares), never the others
// (issue 21: one unrelated render gap cancelled every deletion).
func TestMarkDeletedScopesIncompleteHead(t *testing.T) {
	app := func(name, declaredBy string) config.Target {
		return config.Target{Name: name, Cluster: "in-cluster", DeclaredBy: declaredBy,
			Controller: &diffing.Controller{Kind: "Application", Name: name, Namespace: "argocd"}}
	}
	root := gitops.TargetKey("in-cluster", "root")
	child := gitops.TargetKey("in-cluster", "child-root")
	base := &gitops.Result{Targets: []config.Target{
		app("root", ""), app("child-root", root), app("grandchild", child),
		app("declared-by-file", ""), app("gone-from-root", root),
	}}
	head := &gitops.Result{Targets: []config.Target{app("root", "")}, Incomplete: true, Unsearched: map[string]bool{root: true}}
	targets := slices.Clone(base.Targets)
	for i := range targets {
		c := *targets[i].Controller
		targets[i].Controller = &c
	}
	markDeleted(targets, base, head)
	var got []string
	for _, tr := range targets {
		if tr.Controller.Deleted {
			got = append(got, tr.Name)
		}
	}
	if want := []string{"declared-by-file"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v: only what root (unsearched at head) may declare is unknown", got, want)
	}
	// A complete head knows every deletion.
	head.Incomplete, head.Unsearched = false, nil
	markDeleted(targets, base, head)
	got = got[:0]
	for _, tr := range targets {
		if tr.Controller.Deleted {
			got = append(got, tr.Name)
		}
	}
	if want := []string{"child-root", "grandchild", "declared-by-file", "gone-from-root"}; !slices.Equal(got, want) {
		t.Errorf("deleted %v, want %v", got, want)
	}
}
