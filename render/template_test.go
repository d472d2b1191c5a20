package render_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

// smallTemplateLimits keep the hostile cases quick: what the production limits
// stop after seconds these stop after a fraction.
func smallTemplateLimits() render.TemplateLimits {
	return render.TemplateLimits{MaxOutputBytes: 64 << 10, MaxTotalBytes: 1 << 20, MaxListLen: 1000,
		MaxMemoryBytes: 256 << 20, MaxCPUTime: 5 * time.Second, Timeout: 5 * time.Second}
}

func TestExecuteTemplates(t *testing.T) {
	params := []map[string]any{
		{"name": "a", "n": float64(1), "owners": []any{"x", "y"}},
		{"name": "b", "n": float64(2), "owners": []any{"z"}},
	}
	tree := map[string]any{
		"metadata": map[string]any{"name": "{{ .name }}-{{ add .n 1 }}", "labels": map[string]any{"{{ .name }}": "{{ .owners | join \"-\" }}", "slug": "{{ slugify 5 true \"Hello World Again\" }}"}},
		"spec":     map[string]any{"n": float64(3), "drop": nil, "list": []any{"{{ upper .name }}", true}},
	}
	res, err := render.ExecuteTemplates(t.Context(), render.TemplateRequest{Name: "ApplicationSet t", GoTemplate: true, Trees: []render.TemplateTree{{Tree: tree}, {Tree: "patch {{ .name }}"}}, Params: params}, smallTemplateLimits())
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{
		{map[string]any{
			"metadata": map[string]any{"name": "a-2", "labels": map[string]any{"a": "x-y", "slug": "hello"}},
			"spec":     map[string]any{"n": float64(3), "list": []any{"A", true}},
		}, "patch a"},
		{map[string]any{
			"metadata": map[string]any{"name": "b-3", "labels": map[string]any{"b": "z", "slug": "hello"}},
			"spec":     map[string]any{"n": float64(3), "list": []any{"B", true}},
		}, "patch b"},
	}
	if diff := cmp.Diff(want, res.Out); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if res.Bytes == 0 {
		t.Error("Bytes = 0")
	}

	// fasttemplate, and a values map as a matrix interpolates it: a missing
	// key keeps the value as written.
	res, err = render.ExecuteTemplates(t.Context(), render.TemplateRequest{Name: "s", Trees: []render.TemplateTree{{Tree: "{{name}}/{{ other }}"}}, Params: params[:1]}, smallTemplateLimits())
	if err != nil || res.Out[0][0] != "a/{{ other }}" {
		t.Errorf("fasttemplate: %v, %v", res.Out, err)
	}
	res, err = render.ExecuteTemplates(t.Context(), render.TemplateRequest{Name: "s", GoTemplate: true, Options: []string{"missingkey=zero"},
		Trees: []render.TemplateTree{{Tree: map[string]any{"a": "{{ .name }}", "b": "{{ .path.basename }}"}, Values: true}}, Params: params[:1]}, smallTemplateLimits())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"a": "a", "b": "{{ .path.basename }}"}, res.Out[0][0]); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}

	// The first failing template is named by parameter set and tree.
	_, err = render.ExecuteTemplates(t.Context(), render.TemplateRequest{Name: "s", GoTemplate: true,
		Trees: []render.TemplateTree{{Tree: "ok"}, {Tree: `{{ if eq .name "b" }}{{ fail "no b" }}{{ end }}`}}, Params: params}, smallTemplateLimits())
	te, ok := errors.AsType[*render.TemplateError](err)
	if !ok || te.Param != 1 || te.Tree != 1 || !strings.Contains(err.Error(), "no b") {
		t.Errorf("error = %#v (%v), want a TemplateError at set 1, tree 1", err, err)
	}
}

// TestExecuteTemplatesHostile runs the templates of hostile ApplicationSets:
// each ends with a clear error, in the render process, within its limits; the
// test process allocates nothing of it.
func TestExecuteTemplatesHostile(t *testing.T) {
	mib := strings.Repeat("x", 1<<20)
	many := func(n int) []map[string]any {
		ps := make([]map[string]any, n)
		for i := range ps {
			ps[i] = map[string]any{"i": float64(i)}
		}
		return ps
	}
	tests := []struct {
		name     string
		tpl      any
		params   []map[string]any
		lim      func(*render.TemplateLimits)
		wantMsg  []string
		template bool // a *TemplateError (else an *Error: a limit of the request)
	}{
		{name: "repeat", tpl: `{{ repeat 100000000000 "x" }}`, template: true,
			wantMsg: []string{"repeat", "limit per template output"}},
		{name: "repeat of a long string", tpl: `{{ repeat 5000 (repeat 5000 "x") }}`, template: true,
			wantMsg: []string{"repeat", "limit per template output"}},
		{name: "output past the limit per template, in a loop", tpl: `{{ range 100000000 }}xxxxxxxxxxxxxxxx{{ end }}`, template: true,
			wantMsg: []string{"more than 65536 bytes", "limit per template output"}},
		{name: "randAlphaNum", tpl: `{{ randAlphaNum 100000000 }}`, template: true, wantMsg: []string{"randAlphaNum", "limit per template output"}},
		{name: "randBytes", tpl: `{{ randBytes 100000000 }}`, template: true, wantMsg: []string{"randBytes", "limit"}},
		{name: "indent", tpl: `{{ indent 100000000 "a\nb" }}`, template: true, wantMsg: []string{"indent", "limit"}},
		{name: "until", tpl: `{{ range until 1000000000 }}{{ end }}`, template: true, wantMsg: []string{"until", "over the limit of 1000"}},
		{name: "untilStep", tpl: `{{ untilStep 0 1000000000 1 }}`, template: true, wantMsg: []string{"untilStep", "over the limit"}},
		{name: "seq", tpl: `{{ seq 1000000000 }}`, template: true, wantMsg: []string{"seq", "over the limit"}},
		{name: "genPrivateKey", tpl: `{{ genPrivateKey "rsa" }}`, template: true, wantMsg: []string{"genPrivateKey is not run by driftpreview"}},
		{name: "genCA", tpl: `{{ genCA "x" 365 }}`, template: true, wantMsg: []string{"genCA is not run"}},
		{name: "a template that calls itself", tpl: `{{ define "a" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, template: true,
			wantMsg: []string{"exceeded maximum template depth"}},
		{name: "a template that calls itself twice per level",
			tpl:     `{{ define "a" }}{{ if lt (len .) 40 }}{{ template "a" (append . 1) }}{{ template "a" (append . 1) }}{{ end }}{{ end }}{{ template "a" (list) }}`,
			lim:     func(l *render.TemplateLimits) { l.Timeout = 2 * time.Second },
			wantMsg: []string{"executing the templates took longer than 2s"}},
		{name: "a loop without output", tpl: `{{ range 1000000000000 }}{{ end }}`,
			lim:     func(l *render.TemplateLimits) { l.Timeout = 2 * time.Second },
			wantMsg: []string{"executing the templates took longer than 2s", "loop"}},
		{name: "a loop without output, past the CPU-time limit", tpl: `{{ range 1000000000000 }}{{ end }}`,
			lim:     func(l *render.TemplateLimits) { l.MaxCPUTime, l.Timeout = time.Second, time.Minute },
			wantMsg: []string{"CPU-time limit"}},
		{name: "memory: a list that doubles", tpl: `{{ $l := list 1 }}{{ range until 40 }}{{ $l = concat $l $l }}{{ end }}`,
			lim:     func(l *render.TemplateLimits) { l.MaxMemoryBytes = 128 << 20; l.Timeout = 20 * time.Second },
			wantMsg: []string{"memory limit"}},
		// At the default limit, where a render process reserves heap for huge
		// pages (render/hugeheap.go): the limits still stop these as named.
		{name: "a template that calls itself, at the default memory limit", tpl: `{{ define "a" }}{{ template "a" . }}{{ end }}{{ template "a" . }}`, template: true,
			lim:     func(l *render.TemplateLimits) { l.MaxMemoryBytes = render.DefaultTemplateLimits().MaxMemoryBytes },
			wantMsg: []string{"exceeded maximum template depth"}},
		{name: "memory: a list that doubles, at the default memory limit", tpl: `{{ $l := list 1 }}{{ range until 40 }}{{ $l = concat $l $l }}{{ end }}`,
			lim: func(l *render.TemplateLimits) {
				l.MaxMemoryBytes, l.Timeout = render.DefaultTemplateLimits().MaxMemoryBytes, 20*time.Second
			},
			wantMsg: []string{"memory limit"}},
		{name: "1 MiB literal x 3,000 parameter sets", tpl: map[string]any{"data": mib}, params: many(3000),
			lim:     func(l *render.TemplateLimits) { *l = render.TemplateLimits{} },
			wantMsg: []string{"more than 33554432 bytes in all"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lim := smallTemplateLimits()
			if tc.lim != nil {
				tc.lim(&lim)
			}
			params := tc.params
			if params == nil {
				params = many(1)
			}
			start := time.Now()
			_, err := render.ExecuteTemplates(t.Context(), render.TemplateRequest{Name: "ApplicationSet bomb", GoTemplate: true,
				Trees: []render.TemplateTree{{Tree: tc.tpl}}, Params: params}, lim)
			if err == nil {
				t.Fatal("want an error")
			}
			_, isTpl := errors.AsType[*render.TemplateError](err)
			if isTpl != tc.template {
				t.Errorf("error %v: a TemplateError is %v, want %v", err, isTpl, tc.template)
			}
			if re, ok := errors.AsType[*render.Error](err); !tc.template && (!ok || re.File != "ApplicationSet bomb") {
				t.Errorf("error %#v: want a render.Error naming the ApplicationSet", err)
			}
			for _, m := range tc.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			if took := time.Since(start); took > lim.Timeout+5*time.Second {
				t.Errorf("took %s", took)
			}
		})
	}
}

// TestExecuteTemplatesCancel: a template that loops without output stops
// when the caller's context ends (the render process is killed), not at its
// limits.
func TestExecuteTemplatesCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	lim := smallTemplateLimits()
	lim.Timeout, lim.MaxCPUTime = time.Minute, time.Minute
	start := time.Now()
	_, err := render.ExecuteTemplates(ctx, render.TemplateRequest{Name: "s", GoTemplate: true,
		Trees: []render.TemplateTree{{Tree: `{{ range 1000000000000 }}{{ end }}`}}, Params: []map[string]any{{}}}, lim)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the context's", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s after the context ended", took)
	}
}

// TestRenderSubstituteBomb: a 1 MiB postBuild variable used 3,000 times stops
// at the limit of rendered manifests per target, in the render process, with
// an error naming the object and the limit, never the value.
func TestRenderSubstituteBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "  k%04d: ${big}\n", i)
	}
	root := writeTree(t, map[string]string{"app/cm.yaml": b.String()})
	value := "V" + strings.Repeat("v", 1<<20)
	start := time.Now()
	_, err := render.Render(t.Context(), root, "app", render.Options{Substitute: map[string]string{"big": value}})
	re, ok := errors.AsType[*render.Error](err)
	if !ok {
		t.Fatalf("error = %v, want a render.Error", err)
	}
	for _, m := range []string{"ConfigMap/big", "after substitution", "33554432 bytes"} {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not say %q", err, m)
		}
	}
	if re.File != "app/cm.yaml" || strings.Contains(err.Error(), "Vvvv") {
		t.Errorf("error %q: want it to name app/cm.yaml and not the value", err)
	}
	t.Logf("stopped after %s", time.Since(start))

	// Within the limit, the render process substitutes.
	set, err := render.Render(t.Context(), root, "app", render.Options{Substitute: map[string]string{"big": "small"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Objects[0].Obj.Object["data"].(map[string]any)["k2999"]; got != "small" {
		t.Errorf("k2999 = %v, want small", got)
	}
}
