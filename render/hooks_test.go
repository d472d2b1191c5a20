package render_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

func keys(set render.ObjectSet) []string {
	var out []string
	for _, o := range set.Objects {
		out = append(out, o.Key.String())
	}
	return out
}

// A chart's helm.sh/hook objects (here a test Pod named with randAlphaNum) are not
// part of the release: two renders give the same set, without the hook, and a note
// counts what was left out.
func TestHelmHooksLeftOut(t *testing.T) {
	opts := render.DefaultOptions()
	opts.Helm.ReleaseName = "web"
	var sets []render.ObjectSet
	for range 2 {
		set, err := render.Render(t.Context(), "testdata/helm", "chart", opts)
		if err != nil {
			t.Fatalf("Render: %v", err)
		}
		sets = append(sets, set)
	}
	for _, k := range keys(sets[0]) {
		if strings.HasPrefix(k, "Pod/") || strings.Contains(k, "migrate") {
			t.Errorf("hook object %s is in the rendered set", k)
		}
	}
	if a, b := keys(sets[0]), keys(sets[1]); !slices.Equal(a, b) {
		t.Errorf("two renders differ:\n%v\n%v", a, b)
	}
	want := "2 Helm hook objects (Job, Pod) left out of the comparison"
	if !slices.ContainsFunc(sets[0].Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
		t.Errorf("no note %q in %q", want, sets[0].Notes)
	}
}

// Under Argo CD, argocd.argoproj.io/hook and helm.sh/hook objects of any source
// type are sync hooks, except a hook of type Skip alone; other renders keep them.
func TestArgoCDHooksLeftOut(t *testing.T) {
	opts := render.DefaultOptions()
	set, err := render.Render(t.Context(), "testdata/hooks", "app", opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if got := len(set.Objects); got != 4 {
		t.Errorf("without ArgoCDHooks: %d objects %v, want all 4", got, keys(set))
	}
	opts.ArgoCDHooks = true
	set, err = render.Render(t.Context(), "testdata/hooks", "app", opts)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []string{"ConfigMap/settings", "ConfigMap/skipped-hook"}
	if got := keys(set); !slices.Equal(got, want) {
		t.Errorf("with ArgoCDHooks: %v, want %v", got, want)
	}
	if len(set.Notes) != 1 || !strings.HasPrefix(set.Notes[0], "2 Argo CD hook objects (Job, Pod)") {
		t.Errorf("notes %q", set.Notes)
	}
}

// A chart whose Chart.yaml names a dependency that charts/ does not hold cannot be
// rendered offline, but its controller builds the dependency when it syncs: the
// error says so precisely and is *render.Unavailable, so the target is listed as not
// rendered rather than failing as a render error.
func TestUnvendoredDependencyIsUnavailable(t *testing.T) {
	_, err := render.Render(t.Context(), "testdata/unvendored", "app", render.DefaultOptions())
	reason, ok := render.IsUnavailable(err)
	if !ok {
		t.Fatalf("error %v (%T) is not render.Unavailable", err, err)
	}
	want := "app/Chart.yaml:7: chart dependency cache (version 1.2.3 from https://charts.example.com/stable) is not vendored in app/charts/: " +
		"the GitOps controller builds chart dependencies when it syncs (helm dependency build), and driftpreview fetches it only with remote sources on " +
		"(remote.mode: public, the default, or allowlist with its repository in remote.allow / --allow-remote; they are off with --offline or remote.mode: off); " +
		"or run helm dependency build and commit charts/"
	if reason != want {
		t.Errorf("reason\n%s\nwant\n%s", reason, want)
	}
	if _, ok := render.IsUnavailable(&render.Error{File: "x", Err: errors.New("broken")}); ok {
		t.Errorf("a plain *render.Error is Unavailable")
	}
}
