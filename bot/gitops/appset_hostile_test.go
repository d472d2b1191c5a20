package gitops

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// appSetHeader starts an ApplicationSet of this repository's tests.
const appSetHeader = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: bomb, namespace: argocd}
spec:
`

// appTemplate is the template of the hostile sets: small, so what they make
// comes from the generators and the templates they hold.
const appTemplate = `  template:
    metadata: {name: 'app-{{ .i }}'}
    spec:
      project: default
      source: {repoURL: ` + appSetRepo + `, path: apps, targetRevision: HEAD}
      destination: {server: https://kubernetes.default.svc, namespace: x}
`

// listOf is a list generator of n elements {i: 0..n-1}.
func listOf(n int, extra string) string {
	var b strings.Builder
	b.WriteString("  - list:\n      elements:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {i: %d%s}\n", i, extra)
	}
	return b.String()
}

// discoverBombs discovers files with the given limits and returns the
// ApplicationSet bomb's Applications and not-rendered reasons.
func discoverBombs(t *testing.T, ctx context.Context, files map[string]string, opts Options) (info SetInfo, skips []string, err error) {
	t.Helper()
	root := writeFiles(t, files)
	opts.RepoURLs = []string{appSetRepo}
	res, err := Discover(ctx, root, opts)
	if err != nil {
		return SetInfo{}, nil, err
	}
	for _, nr := range res.NotRendered {
		skips = append(skips, nr.Skip)
	}
	return res.Sets["argocd/bomb"], skips, nil
}

// TestAppSetHostile expands the hostile ApplicationSets of issue 20: each ends
// in the render process with the set listed as not rendered (or, for the
// matrix, capped) with a reason that says what was hit, and none allocates in
// the test process what it asks for (before, the repeat set killed the process
// with "fatal error: out of memory" and the loop never ended).
func TestAppSetHostile(t *testing.T) {
	small := render.TemplateLimits{MaxMemoryBytes: 256 << 20, MaxCPUTime: 5 * time.Second, Timeout: 5 * time.Second}
	mib := strings.Repeat("y", 1<<20)
	var labels strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&labels, "        l%06d: v\n", i)
	}
	gitFiles := map[string]string{}
	for i := range 400 {
		gitFiles[fmt.Sprintf("config/c%03d/config.json", i)] = fmt.Sprintf(`{"i": %d, "pad": %q}`, i, strings.Repeat("p", 100<<10))
	}
	tests := []struct {
		name     string
		set      string
		files    map[string]string
		opts     Options
		wantApps int
		wantSkip []string
	}{
		{
			name:     "500-byte goTemplate repeat",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(1, "") + strings.Replace(appTemplate, "app-{{ .i }}", `{{ repeat 100000000000 "x" }}`, 1),
			wantSkip: []string{"failed to execute go template", "repeat", "limit per template output", "Argo CD applies nothing"},
		},
		{
			name:     "goTemplate loop without output",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(1, "") + strings.Replace(appTemplate, "app-{{ .i }}", `app{{ range 1000000000000 }}{{ end }}`, 1),
			opts:     Options{TemplateLimits: render.TemplateLimits{Timeout: 2 * time.Second}},
			wantSkip: []string{"executing the templates took longer than 2s", "loop"},
		},
		{
			name:     "Sprig genPrivateKey",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(1, "") + strings.Replace(appTemplate, "app-{{ .i }}", `app-{{ genPrivateKey "dsa" | sha256sum }}`, 1),
			wantSkip: []string{"genPrivateKey is not run by driftpreview"},
		},
		{
			name: "14 KB matrix of two lists: 90,000 Applications",
			set: appSetHeader + "  goTemplate: true\n  generators:\n  - matrix:\n      generators:\n" +
				indent(listOf(300, ""), 6) + indent(strings.ReplaceAll(listOf(300, ""), "{i: ", "{j: "), 6) +
				strings.Replace(appTemplate, "app-{{ .i }}", "app-{{ .i }}-{{ .j }}", 1),
			opts:     Options{MaxAppsPerSet: 500},
			wantApps: 500,
			wantSkip: []string{"make 90000 parameter sets, over the limit of 500 Applications per ApplicationSet", "the first 500 are previewed and 89500 are left out"},
		},
		{
			name:     "1 MiB literal x 3,000 list elements",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(3000, "") + appTemplate + "      info: [{name: big, value: " + mib + "}]\n",
			wantSkip: []string{"more than 33554432 bytes in all"},
		},
		{
			name:     "templatePatch of 100k labels x 200 Applications",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(200, "") + appTemplate + "  templatePatch: |\n    metadata:\n      labels:\n" + labels.String(),
			wantSkip: []string{"more than 33554432 bytes in all"},
		},
		{
			name:     "git files generator over 400 files of 100 KiB",
			set:      appSetHeader + "  goTemplate: true\n  generators:\n  - git: {repoURL: " + appSetRepo + ", revision: HEAD, files: [{path: 'config/**/config.json'}]}\n" + appTemplate,
			files:    gitFiles,
			wantSkip: []string{"the git files generator reads more than 33554432 bytes of files", "match fewer or smaller files"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"argocd/bomb.yaml": tc.set, "apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"}
			for k, v := range tc.files {
				files[k] = v
			}
			opts := tc.opts
			if opts.TemplateLimits.MaxMemoryBytes == 0 {
				opts.TemplateLimits.MaxMemoryBytes, opts.TemplateLimits.MaxCPUTime = small.MaxMemoryBytes, small.MaxCPUTime
			}
			if opts.TemplateLimits.Timeout == 0 {
				opts.TemplateLimits.Timeout = small.Timeout
			}
			start := time.Now()
			info, skips, err := discoverBombs(t, t.Context(), files, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s, %d bytes", tc.name, time.Since(start), len(tc.set))
			if len(info.Apps) != tc.wantApps {
				t.Errorf("%d Applications, want %d", len(info.Apps), tc.wantApps)
			}
			if info.Complete {
				t.Error("the set is complete, want incomplete")
			}
			all := strings.Join(skips, "\n")
			for _, m := range tc.wantSkip {
				if !strings.Contains(all, m) {
					t.Errorf("not-rendered reasons %q do not say %q", all, m)
				}
			}
		})
	}
}

// TestAppSetLoopCancelled: a goTemplate loop without output ends when the
// discovery's context does (the render process is killed), promptly, not at
// the 60 s limits.
func TestAppSetLoopCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	set := appSetHeader + "  goTemplate: true\n  generators:\n" + listOf(1, "") + strings.Replace(appTemplate, "app-{{ .i }}", `app{{ range 1000000000000 }}{{ end }}`, 1)
	start := time.Now()
	_, _, err := discoverBombs(t, ctx, map[string]string{"argocd/bomb.yaml": set}, Options{})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("error = %v, want the context's", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s", took)
	}
}

func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pad + l
	}
	return strings.Join(lines, "\n") + "\n"
}
