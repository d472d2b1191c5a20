package render_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

// jsonnetOpts is an Argo CD directory application with directory.jsonnet set.
func jsonnetOpts() render.Options {
	opts := render.DefaultOptions()
	opts.Plain.Jsonnet = &render.JsonnetOptions{
		ExtVars: []render.JsonnetVar{{Name: "env", Value: "prod"}, {Name: "level", Value: "debug"}},
		TLAs:    []render.JsonnetVar{{Name: "replicas", Value: "3", Code: true}},
		Libs:    []string{"vendor/lib"},
	}
	return opts
}

// A directory application's .jsonnet files are evaluated like Argo CD does: ext
// vars, TLAs, imports next to the file and from the library paths; .libsonnet files
// are only imported; YAML files next to them are read as usual.
func TestRenderJsonnet(t *testing.T) {
	set, err := render.Render(t.Context(), "testdata/jsonnet", "app", jsonnetOpts())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	golden.Check(t, filepath.Join("testdata", "jsonnet.golden.yaml"), []byte(printed(t, set)))

	// With directory.recurse, a file in a subdirectory imports next to itself.
	opts := jsonnetOpts()
	opts.Plain.Recurse = true
	opts.Plain.Include = []string{"sub/*"}
	set, err = render.Render(t.Context(), "testdata/jsonnet", "app", opts)
	if err != nil {
		t.Fatalf("Render with recurse: %v", err)
	}
	if got := keys(set); len(got) != 1 || got[0] != "ConfigMap/nested" {
		t.Errorf("recurse with include sub/*: %v, want ConfigMap/nested", got)
	}
}

// Without jsonnet options (a Flux Kustomization or a plain directory) the .jsonnet
// files are not evaluated, and a note says so: never a silently empty target.
func TestRenderJsonnetOffIsNoted(t *testing.T) {
	set, err := render.Render(t.Context(), "testdata/jsonnet", "app", render.DefaultOptions())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if got := keys(set); len(got) != 1 || got[0] != "ServiceAccount/api" {
		t.Errorf("objects %v, want only ServiceAccount/api", got)
	}
	want := "app/main.jsonnet, app/settings.jsonnet not evaluated: only an Argo CD directory application renders .jsonnet files"
	if len(set.Notes) != 1 || set.Notes[0] != want {
		t.Errorf("notes %q, want %q", set.Notes, want)
	}
}

// Jsonnet from a pull request is untrusted: imports stay inside the checkout, bad
// code and bad output are errors naming the file (and line), and the limits hold.
func TestRenderJsonnetHostile(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.libsonnet"), []byte("{ leaked: 'OUTSIDE-MARKER' }"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, root string)
		libs  []string
		limit int64
		want  []string // the error contains each
		file  string   // the error's file
		line  int
	}{
		{
			name:  "import leaving the checkout",
			files: map[string]string{"app/a.jsonnet": "import '../../../../../../../../etc/passwd'"},
			want:  []string{"leads outside the repository"}, file: "app/a.jsonnet",
		},
		{
			name:  "absolute import",
			files: map[string]string{"app/a.jsonnet": "import '/etc/passwd'"},
			want:  []string{"absolute path", "only files inside the repository"}, file: "app/a.jsonnet",
		},
		{
			name:  "import through a symlink out of the checkout",
			files: map[string]string{"app/a.jsonnet": "(import 'out/secret.libsonnet').leaked"},
			setup: func(t *testing.T, root string) {
				if err := os.Symlink(outside, filepath.Join(root, "app", "out")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"symlink"}, file: "app/a.jsonnet",
		},
		{
			name:  "library path leaving the checkout",
			files: map[string]string{"app/a.jsonnet": "{}"},
			libs:  []string{"../.."},
			want:  []string{`jsonnet library path "../.." leads outside the repository`}, file: "app/a.jsonnet",
		},
		{
			name:  "missing import",
			files: map[string]string{"app/a.jsonnet": "import 'nope.libsonnet'"},
			want:  []string{`couldn't open import "nope.libsonnet"`}, file: "app/a.jsonnet",
		},
		{
			name:  "runtime error",
			files: map[string]string{"app/a.jsonnet": "local x = 1;\n\nerror 'replicas must be set'\n"},
			want:  []string{"evaluating jsonnet", "replicas must be set"}, file: "app/a.jsonnet", line: 3,
		},
		{
			name:  "syntax error",
			files: map[string]string{"app/a.jsonnet": "{\n  a: ,\n}\n"},
			want:  []string{"evaluating jsonnet"}, file: "app/a.jsonnet", line: 2,
		},
		{
			name:  "output that is not an object",
			files: map[string]string{"app/a.jsonnet": "[{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'a'}}, 'x']"},
			want:  []string{"item 1 of the output array is not a Kubernetes object"}, file: "app/a.jsonnet",
		},
		{
			name:  "endless recursion",
			files: map[string]string{"app/a.jsonnet": "local f(x) = f(x + 1) + 1;\nf(0)\n"},
			want:  []string{"max stack frames exceeded"}, file: "app/a.jsonnet",
		},
		{
			name:  "output over the per-target limit",
			files: map[string]string{"app/a.jsonnet": "{apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'a'}, data: {x: std.join('', std.makeArray(200000, function(i) 'xxxxxxxxxx'))}}"},
			limit: 1 << 20,
			want:  []string{"more than 1048576 bytes"}, file: "app/a.jsonnet",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				full := filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.setup != nil {
				tc.setup(t, root)
			}
			opts := render.DefaultOptions()
			opts.Timeout = 20 * time.Second
			opts.Plain.Jsonnet = &render.JsonnetOptions{Libs: tc.libs}
			if tc.limit > 0 {
				opts.MaxTotalBytes = tc.limit
			}
			set, err := render.Render(t.Context(), root, "app", opts)
			if err == nil {
				t.Fatalf("Render succeeded with %v, want an error", keys(set))
			}
			re, ok := err.(*render.Error)
			if !ok {
				t.Fatalf("error %q (%T) is not a *render.Error", err, err)
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if re.File != tc.file || (tc.line > 0 && re.Line != tc.line) {
				t.Errorf("error at %s:%d, want %s:%d", re.File, re.Line, tc.file, tc.line)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, leak := range []string{"OUTSIDE-MARKER", "root:x:0:0", root} {
				if strings.Contains(msg, leak) {
					t.Errorf("error leaks %q", leak)
				}
			}
			if len(msg) > 1000 {
				t.Errorf("error is %d bytes long", len(msg))
			}
		})
	}
}
