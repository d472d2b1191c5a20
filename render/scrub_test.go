package render_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// TestRenderErrorsHideSecrets renders kustomizations and charts whose errors,
// as the libraries word them, quote secret material from the PR: every
// distinctive value below must be gone from the error, which must still say
// what is wrong.
func TestRenderErrorsHideSecrets(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		target  string
		opts    func(*render.Options)
		wantMsg []string
		secrets []string
	}{
		{
			name: "secretGenerator literal without a value, next to a valid one",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "secretGenerator:\n  - name: s\n    literals:\n" +
					"      - password=VALIDSECRET-a1b2\n      - token=\"QUOTEDSECRET-x9y8\"\n      - BADLITERAL-c3d4\n",
			},
			target:  "app",
			wantMsg: []string{"invalid literal source", "expected key=value"},
			secrets: []string{"VALIDSECRET-a1b2", "QUOTEDSECRET-x9y8", "BADLITERAL-c3d4"},
		},
		{
			name: "env file line with invalid UTF-8",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "secretGenerator:\n  - name: s\n    envs:\n      - secret.env\n",
				"app/secret.env":         "TOKEN=ENVSECRET-e5f6\nBAD=\xff\xfeENVBAD-g7h8\n",
			},
			target:  "app",
			wantMsg: []string{"invalid utf8"},
			// ENVBAD as bytes, as kustomize prints the line
			secrets: []string{"ENVSECRET-e5f6", "ENVBAD-g7h8", "69 78 86 66 65 68"},
		},
		{
			name: "patch that is not valid YAML",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "resources:\n  - secret.yaml\npatches:\n  - patch: |-\n" +
					"      apiVersion: v1\n      kind: Secret\n      metadata:\n        name: s\n      stringData:\n        key: [PATCHSECRET-i9j0\n",
				"app/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  key: RESOURCESECRET-k1l2\n",
			},
			target:  "app",
			wantMsg: []string{"unable to parse SM or JSON patch"},
			secrets: []string{"PATCHSECRET-i9j0", "RESOURCESECRET-k1l2"},
		},
		{
			name: "helm template error quoting a value from a values file",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/templates/cm.yaml": cm + "data:\n  x: {{ include .Values.password . | quote }}\n",
				"values/prod.yaml":        "password: VALUESECRET-m3n4\n",
			},
			target:  "chart",
			opts:    func(o *render.Options) { o.Helm.ValuesFiles = []string{"values/prod.yaml"} },
			wantMsg: []string{"no template"},
			secrets: []string{"VALUESECRET-m3n4"},
		},
		{
			name: "helm template error quoting a value given to the target",
			files: map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/templates/cm.yaml": cm + "data:\n  x: {{ include .Values.db.password . | quote }}\n",
			},
			target: "chart",
			opts: func(o *render.Options) {
				o.Helm.Values = map[string]any{"db": map[string]any{"password": "GIVENSECRET-o5p6"}}
			},
			wantMsg: []string{"no template"},
			secrets: []string{"GIVENSECRET-o5p6"},
		},
		{
			// kustomize quotes the replacement source's value, which for a
			// generated Secret is the base64 of the generator's value
			name: "replacement quoting a secretGenerator literal, base64-encoded",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "secretGenerator:\n  - name: s\n    options:\n      disableNameSuffixHash: true\n    literals:\n      - password=GENLITERAL-q7r8\n" +
					replaceFrom("data.password"),
				"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: y\n",
			},
			target:  "app",
			wantMsg: []string{"options.index 5 is out of bounds"},
			secrets: []string{"GENLITERAL-q7r8", b64("GENLITERAL-q7r8")},
		},
		{
			name: "replacement quoting a secretGenerator env-file value, base64-encoded",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "secretGenerator:\n  - name: s\n    options:\n      disableNameSuffixHash: true\n    envs:\n      - secret.env\n" +
					replaceFrom("data.TOKEN"),
				"app/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: y\n",
				"app/secret.env": "# a comment\nTOKEN=GENENV-s9t0\n",
			},
			target:  "app",
			wantMsg: []string{"options.index 5 is out of bounds"},
			secrets: []string{"GENENV-s9t0", b64("GENENV-s9t0")},
		},
		{
			name: "replacement quoting a secretGenerator file, base64-encoded",
			files: map[string]string{
				"app/kustomization.yaml": kustHeader + "secretGenerator:\n  - name: s\n    options:\n      disableNameSuffixHash: true\n    files:\n      - key=cert.pem\n" +
					replaceFrom("data.key"),
				"app/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  x: y\n",
				"app/cert.pem": "GENFILE-u1v2\nline two\n",
			},
			target:  "app",
			wantMsg: []string{"options.index 5 is out of bounds"},
			secrets: []string{"GENFILE-u1v2", b64("GENFILE-u1v2\nline two\n")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, tc.files)
			opts := render.DefaultOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			_, err := render.Render(t.Context(), root, tc.target, opts)
			var re *render.Error
			if !errors.As(err, &re) {
				t.Fatalf("got %v, want a *render.Error", err)
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			for _, w := range tc.wantMsg {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q", w)
				}
			}
			for _, s := range tc.secrets {
				if strings.Contains(msg, s) {
					t.Errorf("error shows secret material %q", s)
				}
			}
		})
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// replaceFrom is a replacement from the Secret s's field whose options.index is
// out of bounds: kustomize's error quotes the source value.
func replaceFrom(field string) string {
	return "resources:\n  - cm.yaml\nreplacements:\n  - source:\n      kind: Secret\n      name: s\n      fieldPath: " + field +
		"\n      options:\n        delimiter: ','\n        index: 5\n    targets:\n      - select:\n          kind: ConfigMap\n        fieldPaths:\n          - data.x\n"
}

// TestHelmSecretTransformsHidden fails a chart with a password from its values
// passed through the template functions a PR could use to get it past a scrub
// of the value as written: each transformed form must be gone from the error,
// which must still say it failed.
func TestHelmSecretTransformsHidden(t *testing.T) {
	const pw = "Hunter-Secret-42x"
	tests := []struct {
		name, expr string
		shown      string // the form the template prints
	}{
		{"lower", `lower .Values.db.password`, "hunter-secret-42x"},
		{"upper", `upper .Values.db.password`, "HUNTER-SECRET-42X"},
		{"b64enc", `b64enc .Values.db.password`, b64(pw)},
		{"spaced out", `.Values.db.password | splitList "" | join " "`, "H u n t e r - S e c r e t - 4 2 x"},
		{"separators removed", `.Values.db.password | replace "-" ""`, "HunterSecret42x"},
		{"dotted and upper", `.Values.db.password | replace "-" "" | splitList "" | join "." | upper`, "H.U.N.T.E.R.S.E.C.R.E.T.4.2.X"},
		{"under a secret-looking parent key", `.Values.secrets.github | replace "_" " " | upper`, "GHP AB12CD34EF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := writeTree(t, map[string]string{
				"chart/Chart.yaml":        chartYAML,
				"chart/values.yaml":       "db:\n  password: " + pw + "\nsecrets:\n  github: ghp_ab12cd34ef\n",
				"chart/templates/cm.yaml": cm + "data:\n  x: {{ fail (" + tc.expr + ") }}\n",
			})
			_, err := render.Render(t.Context(), root, "chart", render.DefaultOptions())
			if err == nil {
				t.Fatal("the render succeeded")
			}
			msg := err.Error()
			t.Logf("error: %s", msg)
			if !strings.Contains(msg, "cm.yaml") || !strings.Contains(msg, "(hidden)") {
				t.Errorf("error does not name the template or the hidden value")
			}
			if strings.Contains(msg, tc.shown) {
				t.Errorf("error shows the password as %q", tc.shown)
			}
		})
	}
}
