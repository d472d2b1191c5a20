package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRunRender(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		".git/HEAD": "ref: refs/heads/main\n",
		"plain/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"plain/notes.yaml":           "just: data\n",
		"plain/secret.yaml":          "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: hunter2\n",
		"base/kustomization.yaml":    "resources:\n  - cm.yaml\n",
		"base/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
		"overlay/kustomization.yaml": "resources:\n  - ../base\nnamePrefix: prod-\n",
		"chart/Chart.yaml":           "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"chart/values.yaml":          "size: small\n",
		"chart/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n" +
			"data:\n  size: {{ .Values.size }}\n",
		"bad/x.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n",
	})
	// The values file lives outside the repository: CLI values are trusted.
	valuesDir := t.TempDir()
	writeFiles(t, valuesDir, map[string]string{
		"v1.yaml": "size: medium\n",
		"v2.yaml": "size: large\n",
	})

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantErrHas []string
	}{
		{
			name:     "plain directory in key order with hidden secrets",
			args:     []string{"render", filepath.Join(repo, "plain"), "--namespace", "shop"},
			wantCode: exitOK,
			wantOut: "---\n# Source: plain/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: shop\n" +
				"---\n# Source: plain/a.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: shop\n" +
				"---\n# Source: plain/secret.yaml\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: shop\nstringData:\n  password: (hidden)\n",
			wantErrHas: []string{"note: plain/notes.yaml:1: skipped"},
		},
		{
			name:     "kustomize overlay reaching its base inside the checkout",
			args:     []string{"render", filepath.Join(repo, "overlay")},
			wantCode: exitOK,
			wantOut:  "---\n# Source: base/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: prod-settings\n",
		},
		{
			name: "helm with values files merged in order and flags after DIR",
			args: []string{"render", filepath.Join(repo, "chart"), "--release-name", "web",
				"--helm-values", filepath.Join(valuesDir, "v1.yaml"), "--helm-values", filepath.Join(valuesDir, "v2.yaml")},
			wantCode: exitOK,
			wantOut:  "---\n# Source: app/templates/cm.yaml\napiVersion: v1\ndata:\n  size: large\nkind: ConfigMap\nmetadata:\n  name: web\n",
		},
		{
			name:     "forced renderer",
			args:     []string{"render", "--renderer", "plain", filepath.Join(repo, "base")},
			wantCode: exitOK,
			wantOut:  "---\n# Source: base/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n",
		},
		{
			name:       "invalid YAML names file and line",
			args:       []string{"render", filepath.Join(repo, "bad")},
			wantCode:   exitError,
			wantErrHas: []string{"bad/x.yaml:4: invalid YAML"},
		},
		{
			name:       "missing DIR",
			args:       []string{"render"},
			wantCode:   exitError,
			wantErrHas: []string{"want exactly one DIR", "usage: driftpreview render"},
		},
		{
			name:       "unknown renderer",
			args:       []string{"render", repo, "--renderer", "jsonnet"},
			wantCode:   exitError,
			wantErrHas: []string{`unknown renderer "jsonnet"`},
		},
		{
			name:       "unknown flag",
			args:       []string{"render", repo, "--bogus"},
			wantCode:   exitError,
			wantErrHas: []string{"flag provided but not defined: -bogus"},
		},
		{
			name:       "missing values file",
			args:       []string{"render", filepath.Join(repo, "chart"), "--helm-values", filepath.Join(valuesDir, "nope.yaml")},
			wantCode:   exitError,
			wantErrHas: []string{"reading values file"},
		},
		{
			name:       "DIR outside --root",
			args:       []string{"render", valuesDir, "--root", repo},
			wantCode:   exitError,
			wantErrHas: []string{"is not inside the root"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := run(ctx, tc.args, &out, &errb)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.wantCode, errb.String())
			}
			if diff := cmp.Diff(tc.wantOut, out.String()); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
			for _, w := range tc.wantErrHas {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr %q does not contain %q", errb.String(), w)
				}
			}
		})
	}
}
