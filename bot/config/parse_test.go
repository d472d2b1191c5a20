package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{
			name: "unknown key at top level",
			yaml: "version: 1\npolcy: {}\n",
			want: []string{`.driftpreview.yaml:2: unknown key "polcy"; did you mean "policy"? (allowed: version, targets, policy, statefulKinds, humanManagers, ignore, argocd, noise)`},
		},
		{
			name: "unknown key in a target",
			yaml: "version: 1\ntargets:\n  - path: a\n    chart: x\n",
			want: []string{`.driftpreview.yaml:4: targets[0]: unknown key "chart" (allowed: name, path, renderer, namespace, cluster, helm, kustomize, directory, sync, ignore, watch)`},
		},
		{
			name: "unknown key in sync",
			yaml: "version: 1\ntargets:\n  - path: a\n    sync:\n      prunee: true\n",
			want: []string{`.driftpreview.yaml:5: targets[0].sync: unknown key "prunee"; did you mean "prune"? (allowed: prune, selfHeal, manager, replace)`},
		},
		{
			name: "unknown key in an ignore rule",
			yaml: "version: 1\nignore:\n  - kind: Pod\n    reason: r\n    path: /spec\n",
			want: []string{`.driftpreview.yaml:5: ignore[0]: unknown key "path"; did you mean "paths"? (allowed: group, kind, namespace, name, paths, managers, rules, reason, expires)`},
		},
		{
			name: "unknown keys in helm, kustomize, directory and policy",
			yaml: "version: 1\ntargets:\n  - path: a\n    helm: {release: x}\n    kustomize: {prefix: x}\n    directory: {recursive: true}\npolicy: {failOn: []}\n",
			want: []string{
				`.driftpreview.yaml:4: targets[0].helm: unknown key "release" (allowed: releaseName, valuesFiles, values, skipCrds, kubeVersion)`,
				`.driftpreview.yaml:5: targets[0].kustomize: unknown key "prefix" (allowed: namePrefix, nameSuffix, images, commonLabels, commonAnnotations)`,
				`.driftpreview.yaml:6: targets[0].directory: unknown key "recursive"; did you mean "recurse"? (allowed: recurse, include, exclude)`,
				`.driftpreview.yaml:7: policy: unknown key "failOn"; did you mean "fail"? (allowed: fail, severity)`,
			},
		},
		{
			name: "missing reason",
			yaml: "version: 1\nignore:\n  - {kind: Deployment, paths: [/spec/replicas]}\n",
			want: []string{`.driftpreview.yaml:3: ignore[0].reason: missing; every ignore rule must say why the finding is acceptable`},
		},
		{
			name: "blank reason in a target's ignore rule",
			yaml: "version: 1\ntargets:\n  - path: a\n    ignore:\n      - kind: Pod\n        reason: \"  \"\n",
			want: []string{`.driftpreview.yaml:6: targets[0].ignore[0].reason: must not be empty`},
		},
		{
			name: "bad dates",
			yaml: "version: 1\nignore:\n  - {kind: A, reason: r, expires: 2027-02-30}\n  - {kind: B, reason: r, expires: 2027-3-1}\n  - {kind: C, reason: r, expires: 20270301}\n",
			want: []string{
				`.driftpreview.yaml:3: ignore[0].expires: want a date like 2027-03-01 (YYYY-MM-DD), got "2027-02-30"`,
				`.driftpreview.yaml:4: ignore[1].expires: want a date like 2027-03-01 (YYYY-MM-DD), got "2027-3-1"`,
				`.driftpreview.yaml:5: ignore[2].expires: want a date like 2027-03-01 (YYYY-MM-DD), got a number`,
			},
		},
		{
			name: "bad version",
			yaml: "version: 2\n",
			want: []string{`.driftpreview.yaml:1: version: unsupported version 2; this driftpreview reads version 1`},
		},
		{
			name: "version as a string",
			yaml: "version: \"1\"\n",
			want: []string{`.driftpreview.yaml:1: version: want the number 1, got a string`},
		},
		{
			name: "missing version",
			yaml: "targets:\n  - path: a\n",
			want: []string{`.driftpreview.yaml:1: version: missing; add "version: 1" at the top`},
		},
		{
			name: "bad rule IDs in fail, severity and ignore",
			yaml: "version: 1\npolicy:\n  fail: [prune-statefull]\n  severity: {drift: error}\nignore:\n  - {rules: [secret], reason: r}\n",
			want: []string{
				`.driftpreview.yaml:3: policy.fail[0]: unknown rule "prune-statefull"; did you mean "prune-stateful"?`,
				`.driftpreview.yaml:4: policy.severity: unknown rule "drift" (want one of: ` + strings.Join(ruleNames(), ", ") + `)`,
				`.driftpreview.yaml:6: ignore[0].rules[0]: unknown rule "secret" (want one of: ` + strings.Join(ruleNames(), ", ") + `)`,
			},
		},
		{
			name: "bad severities",
			yaml: "version: 1\npolicy:\n  severity:\n    prune: fatal\n    orphan: none\n",
			want: []string{
				`.driftpreview.yaml:4: policy.severity.prune: unknown severity "fatal" (want one of: info, warning, error)`,
				`.driftpreview.yaml:5: policy.severity.orphan: unknown severity "none" (want one of: info, warning, error); to silence a rule, add an ignore rule with rules: [orphan] and a reason`,
			},
		},
		{
			name: "bad paths",
			yaml: "version: 1\ntargets:\n  - path: ../x\n  - path: /abs\n  - path: apps/../../x\n  - path: apps/shop/\n  - path: ./apps\n  - path: apps\\shop\n  - name: n\n",
			want: []string{
				`.driftpreview.yaml:3: targets[0].path: "../x" must not use ".."; the path must stay inside the repository`,
				`.driftpreview.yaml:4: targets[1].path: "/abs" is absolute; write it relative to the repository root`,
				`.driftpreview.yaml:5: targets[2].path: "apps/../../x" must not use ".."; the path must stay inside the repository`,
				`.driftpreview.yaml:6: targets[3].path: "apps/shop/" is not clean; write "apps/shop"`,
				`.driftpreview.yaml:7: targets[4].path: "./apps" is not clean; write "apps"`,
				`.driftpreview.yaml:8: targets[5].path: "apps\\shop" uses backslashes; separate directories with /`,
				`.driftpreview.yaml:9: targets[6].path: missing; say which directory to render, relative to the repository root`,
			},
		},
		{
			name: "values file leaving the repository",
			yaml: "version: 1\ntargets:\n  - path: charts/a\n    helm:\n      valuesFiles: [../../../x.yaml, /etc/v.yaml, ../b/values.yaml]\n",
			want: []string{
				`.driftpreview.yaml:5: targets[0].helm.valuesFiles[0]: "../../../x.yaml" leaves the repository (it resolves to "../x.yaml")`,
				`.driftpreview.yaml:5: targets[0].helm.valuesFiles[1]: "/etc/v.yaml" must be relative to the target path, with / separators`,
			},
		},
		{
			name: "duplicate target names",
			yaml: "version: 1\ntargets:\n  - name: shop\n    path: a\n  - path: b\n  - name: shop\n    path: c\n  - path: b\n",
			want: []string{
				`.driftpreview.yaml:6: targets[2].name: duplicate target name "shop" (also targets[0] at line 3); give each target a unique name`,
				`.driftpreview.yaml:8: targets[3].name: duplicate target name "b" (also targets[1] at line 5); give each target a unique name`,
			},
		},
		{
			name: "wrong types",
			yaml: "version: 1\ntargets:\n  - path: a\n    namespace: 7\n    sync: {prune: maybe, selfHeal: \"true\", manager: [x]}\n    helm: {values: [1], skipCrds: 1}\n  - path: [b]\n    renderer: Helm\nhumanManagers: lens\nstatefulKinds: [{group: x}]\n",
			want: []string{
				`.driftpreview.yaml:4: targets[0].namespace: want a string, got a number (quote it to make it a string)`,
				`.driftpreview.yaml:5: targets[0].sync.prune: want true or false, got "maybe"`,
				`.driftpreview.yaml:5: targets[0].sync.selfHeal: want true or false, got "true"`,
				`.driftpreview.yaml:5: targets[0].sync.manager: want a string, got a list`,
				`.driftpreview.yaml:6: targets[0].helm.values: want a mapping, got a list`,
				`.driftpreview.yaml:6: targets[0].helm.skipCrds: want true or false, got a number`,
				`.driftpreview.yaml:7: targets[1].path: want a string, got a list`,
				`.driftpreview.yaml:8: targets[1].renderer: unknown renderer "Helm"; did you mean "helm"?`,
				`.driftpreview.yaml:9: humanManagers: want a list, got a string`,
				`.driftpreview.yaml:10: statefulKinds[0].kind: missing; name the kind, e.g. {group: postgresql.cnpg.io, kind: Cluster}`,
			},
		},
		{
			name: "helm values are never quoted",
			yaml: "version: 1\ntargets:\n  - path: a\n    helm:\n      values:\n        password: hunter2\n        password: hunter3\n",
			want: []string{`.driftpreview.yaml:7: invalid YAML: duplicate key "password" (first defined on line 6)`},
		},
		{
			name: "null where a mapping belongs",
			yaml: "version: 1\ntargets:\n  - path: a\n    sync:\n",
			want: []string{`.driftpreview.yaml:4: targets[0].sync: want a mapping, got nothing (null)`},
		},
		{
			name: "duplicate keys",
			yaml: "version: 1\nversion: 1\ntargets:\n  - path: a\n    path: b\n",
			// render.DecodeYAML refuses the file at the first duplicate.
			want: []string{`.driftpreview.yaml:2: invalid YAML: duplicate key "version" (first defined on line 1)`},
		},
		{
			name: "a duplicate key that looks like a token is hidden",
			yaml: "version: 1\ntargets:\n  - path: a\n    ghp_AbCdEf0123456789AbCdEf0123456789: x\n    ghp_AbCdEf0123456789AbCdEf0123456789: y\n",
			want: []string{`.driftpreview.yaml:5: invalid YAML: duplicate key (value hidden: it looks like a secret) (first defined on line 4)`},
		},
		{
			name: "nested deeper than render allows",
			yaml: "version: 1\nignore: " + strings.Repeat("[", render.MaxDepth+1) + strings.Repeat("]", render.MaxDepth+1) + "\n",
			want: []string{fmt.Sprintf(".driftpreview.yaml:2: invalid YAML: nested more than %d levels deep", render.MaxDepth)},
		},
		{
			name: "syntax error",
			yaml: "version: 1\ntargets:\n  - path: a\n   bad: [\n",
			want: []string{`.driftpreview.yaml:3: invalid YAML: did not find expected '-' indicator (in the collection that starts on this line)`},
		},
		{
			name: "two documents",
			yaml: "version: 1\n---\nversion: 1\n",
			want: []string{`.driftpreview.yaml:3: only one YAML document is allowed; remove the "---" separator`},
		},
		{
			name: "not a mapping",
			yaml: "- version: 1\n",
			want: []string{`.driftpreview.yaml:1: want a mapping, got a list`},
		},
		{
			name: "ignore details",
			yaml: "version: 1\nignore:\n  - {kind: Deployment, paths: [spec.replicas], reason: r}\n  - {reason: r, expires: 2027-01-01}\n",
			want: []string{
				`.driftpreview.yaml:3: ignore[0].paths[0]: "spec.replicas" is not a JSON pointer; write it like /spec/replicas`,
				`.driftpreview.yaml:4: ignore[1]: matches everything; name at least one of group, kind, namespace, name, paths, managers or rules`,
			},
		},
		{
			name: "kubeVersion and globs",
			yaml: "version: 1\ntargets:\n  - path: a\n    helm: {kubeVersion: latest}\n    directory: {include: \"[a\", exclude: [\"\"]}\n",
			want: []string{
				`.driftpreview.yaml:4: targets[0].helm.kubeVersion: want a Kubernetes version like v1.37.0, got "latest"`,
				`.driftpreview.yaml:5: targets[0].directory.include: bad glob pattern "[a": syntax error in pattern`,
				`.driftpreview.yaml:5: targets[0].directory.exclude[0]: must not be empty`,
			},
		},
		{
			name: "chart metadata patterns",
			yaml: "version: 1\nnoise:\n  chartMetadata: [\"checksum/[\"]\n  folded: true\n",
			want: []string{
				`.driftpreview.yaml:3: noise.chartMetadata[0]: bad glob pattern "checksum/[": syntax error in pattern`,
				`.driftpreview.yaml:4: noise: unknown key "folded" (allowed: chartMetadata)`,
			},
		},
		{
			name: "secret-looking values are never echoed",
			yaml: "version: 1\ntargets:\n  - path: a\n    sync: {prune: ghp_AbCdEf0123456789AbCdEf0123456789}\n    ghp_AbCdEf0123456789AbCdEf0123456789: x\n",
			want: []string{
				`.driftpreview.yaml:4: targets[0].sync.prune: want true or false, got (value hidden: it looks like a secret)`,
				`.driftpreview.yaml:5: targets[0]: unknown key (value hidden: it looks like a secret) (allowed: name, path, renderer, namespace, cluster, helm, kustomize, directory, sync, ignore, watch)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml), FileName)
			if err == nil {
				t.Fatalf("Parse succeeded, want errors; config: %+v", cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config alongside errors")
			}
			var got []string
			for _, e := range Errors(err) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got, ignoreRenderState); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(strings.Join(tt.want, "\n"), err.Error()); diff != "" {
				t.Errorf("joined message mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseAliasBomb feeds merge keys that would expand to 10^7 nodes: Parse must
// stop at render.DecodeYAML's expansion limit with an error instead of walking them all.
func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nignore:\n  - &m0 {kind: Pod, reason: r}\n")
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "  - &m%d {<<: [", i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*m%d", i-1)
		}
		b.WriteString("]}\n")
	}
	_, err := Parse([]byte(b.String()), FileName)
	// render.DecodeYAML's expansion limit stops it before the parser walks it.
	want := ".driftpreview.yaml:8: invalid YAML: aliases expand the document to more than 500000 nodes (a YAML alias bomb?)"
	if err == nil || err.Error() != want {
		t.Fatalf("Parse error = %v, want %q", err, want)
	}
}

func TestParseFull(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "full.valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, FileName)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	ro := func(mod func(*render.Options)) render.Options {
		o := render.DefaultOptions()
		mod(&o)
		return o
	}
	want := &Config{
		Version: 1,
		Targets: []Target{
			{
				Name: "shop-prod", Path: "apps/shop/overlays/prod", Namespace: "shop", Cluster: "prod",
				Render: ro(func(o *render.Options) {
					o.Renderer = render.RendererKustomize
					o.Namespace = "shop"
					o.Kustomize = render.KustomizeOptions{
						NamePrefix: "prod-", NameSuffix: "-v2", Images: []string{"nginx=nginx:1.27"},
						CommonLabels: map[string]string{"team": "shop"}, CommonAnnotations: map[string]string{"owner": "shop@example.com"},
					}
				}),
				Sync: Sync{Prune: true, SelfHeal: true, Manager: "kustomize-controller"},
				Ignore: []diffing.IgnoreRule{{
					Kind: "ConfigMap", Name: "flags", Paths: []string{"/data"}, Reason: "flags are toggled live", Origin: ".driftpreview.yaml:17",
				}},
			},
			{
				Name: "charts/payments", Path: "charts/payments",
				Render: ro(func(o *render.Options) {
					o.Renderer = render.RendererHelm
					o.Helm = render.HelmOptions{
						ReleaseName: "payments",
						ValuesFiles: []string{"charts/payments/values-prod.yaml", "charts/common/values.yaml"},
						Values:      map[string]any{"replicas": 3, "image": map[string]any{"tag": "1.2.3"}},
						SkipCRDs:    true, KubeVersion: "v1.33.0",
					}
				}),
				Sync: Sync{Prune: false, Manager: "driftpreview", Replace: true},
			},
			{
				Name: "raw", Path: "manifests",
				Render: ro(func(o *render.Options) {
					o.Renderer = render.RendererPlain
					o.Plain = render.PlainOptions{Recurse: true, Include: []string{"*.yaml"}, Exclude: []string{"secret-*.yaml", "test/*"}}
				}),
				Sync: Sync{Prune: true, Manager: "driftpreview"},
			},
		},
		Policy: diffing.Policy{
			Fail:     []diffing.Rule{diffing.RulePruneStateful, diffing.RulePruneCascade, diffing.RuleDataLoss, diffing.RuleImmutableField},
			Severity: map[diffing.Rule]diffing.Severity{diffing.RuleFieldConflict: diffing.SeverityError, diffing.RuleOrphan: diffing.SeverityWarning},
		},
		StatefulKinds: []schema.GroupKind{{Group: "postgresql.cnpg.io", Kind: "Cluster"}, {Kind: "ConfigMap"}},
		HumanManagers: []string{"lens", "k9s"},
		Ignore: []diffing.IgnoreRule{
			{Kind: "Deployment", Paths: []string{"/spec/replicas"}, Reason: "HPA owns replicas", Expires: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), Origin: ".driftpreview.yaml:41"},
			{Managers: []string{"istio-sidecar-injector"}, Reason: "mesh injects sidecars", Origin: ".driftpreview.yaml:42"},
			{Group: "apps", Namespace: "shop", Rules: []diffing.Rule{diffing.RuleLiveDrift, diffing.RuleFieldConflict}, Reason: "known drift while we migrate",
				Expires: time.Date(2026, 12, 31, 0, 0, 0, 0, time.UTC), Origin: ".driftpreview.yaml:43"},
		},
	}
	if diff := cmp.Diff(want, got, ignoreRenderState); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want *Config
	}{
		{"empty file", "", &Config{Version: 1, Discovered: true}},
		{"only comments", "# nothing yet\n", &Config{Version: 1, Discovered: true}},
		{"no targets", "version: 1\nhumanManagers: [lens]\n", &Config{Version: 1, Discovered: true, HumanManagers: []string{"lens"}}},
		{"empty targets", "version: 1\ntargets: []\n", &Config{Version: 1, Discovered: true}},
		{"argocd build options", "version: 1\nargocd:\n  kustomizeBuildOptions: --enable-helm\n", &Config{Version: 1, Discovered: true, ArgoKustomizeBuildOptions: func() *string { s := "--enable-helm"; return &s }()}},
		{"chart metadata", "version: 1\nnoise:\n  chartMetadata: [\"example.com/*\", helm.sh/chart]\n", &Config{Version: 1, Discovered: true, ChartMetadata: []string{"example.com/*", "helm.sh/chart"}}},
		{"chart metadata off", "version: 1\nnoise: {chartMetadata: []}\n", &Config{Version: 1, Discovered: true, ChartMetadata: []string{}}},
		{"target defaults", "version: 1\ntargets:\n  - path: apps/web\n", &Config{Version: 1, Targets: []Target{NewTarget("apps/web")}}},
		{"repository root", "version: 1\ntargets:\n  - {name: all, path: .}\n", &Config{Version: 1, Targets: []Target{func() Target { t := NewTarget("."); t.Name = "all"; return t }()}}},
		{"anchors and merge keys", "version: 1\ntargets:\n  - {path: a, sync: &s {prune: false, manager: flux}}\n  - path: b\n    sync: {<<: *s, manager: argo}\n",
			&Config{Version: 1, Targets: []Target{
				func() Target { t := NewTarget("a"); t.Sync = Sync{Manager: "flux"}; return t }(),
				func() Target { t := NewTarget("b"); t.Sync = Sync{Manager: "argo"}; return t }(),
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.yaml), FileName)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRenderState); diff != "" {
				t.Errorf("Parse mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Run("absent file means discover", func(t *testing.T) {
		got, err := Load(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&Config{Version: 1, Discovered: true}, got, ignoreRenderState); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("reads the file", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, FileName, "version: 1\ntargets:\n  - path: apps/web\n")
		got, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&Config{Version: 1, Targets: []Target{NewTarget("apps/web")}}, got, ignoreRenderState); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("errors are typed", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, FileName, "version: 1\nbogus: true\n")
		_, err := Load(dir)
		errs := Errors(err)
		if len(errs) != 1 || errs[0].Line != 2 || errs[0].File != FileName {
			t.Fatalf("Load error = %v, want one *Error at %s:2", err, FileName)
		}
	})
	t.Run("too large", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, FileName, "version: 1\n#"+strings.Repeat("x", MaxFileBytes)+"\n")
		_, err := Load(dir)
		if errs := Errors(err); len(errs) != 1 || !strings.Contains(errs[0].Reason, "larger than") {
			t.Fatalf("Load error = %v, want a size error", err)
		}
	})
	t.Run("symlink out of the repository", func(t *testing.T) {
		outside := t.TempDir()
		write(t, outside, "secret.yaml", "version: 1\n")
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, FileName)); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		if err == nil || Errors(err) != nil {
			t.Fatalf("Load through an escaping symlink: err = %v, want a plain I/O error", err)
		}
	})
}

func TestErrorsUnwrap(t *testing.T) {
	a := &Error{File: "f", Line: 1, Field: "x", Reason: "bad"}
	b := &Error{File: "f", Reason: "worse"}
	err := errors.Join(a, errors.New("other"), fmtWrap(errors.Join(b)))
	if diff := cmp.Diff([]*Error{a, b}, Errors(err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, want := b.Error(), "f: worse"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if Errors(nil) != nil || Errors(errors.New("x")) != nil {
		t.Errorf("Errors of a non-config error should be nil")
	}
}

type wrapped struct{ err error }

func (w wrapped) Error() string { return "wrapped: " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }

func fmtWrap(err error) error { return wrapped{err} }

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ignoreRenderState skips render.HelmOptions' unexported fields: state the
// render fills in itself (fetched dependencies), never parsed from a config.
var ignoreRenderState = cmpopts.IgnoreUnexported(render.HelmOptions{})
