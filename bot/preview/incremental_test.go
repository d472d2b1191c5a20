package preview

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// incrementalRepo is a repository of five targets: a kustomize overlay (a base,
// a component, a generator file), a chart with a values file outside it, a plain
// directory, a kustomization with a generators: entry (which the input walker
// does not follow), and a plain directory that watches shared/**.
var incrementalRepo = map[string]string{
	".driftpreview.yaml": `version: 1
targets:
  - {name: overlay, path: apps/overlay}
  - {name: chart, path: charts/web, helm: {valuesFiles: [../../env/prod.yaml]}}
  - {name: plain, path: plain}
  - {name: gen, path: gen}
  - {name: watched, path: watched, watch: ["shared/**"]}
`,
	"apps/base/kustomization.yaml":     "resources: [cm.yaml]\n",
	"apps/base/cm.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {a: '1'}\n",
	"apps/comp/kustomization.yaml":     "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n",
	"apps/comp/extra.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: '1'}\n",
	"apps/overlay/kustomization.yaml":  "resources: [../base]\ncomponents: [../comp]\nconfigMapGenerator:\n- name: gen\n  files: [conf/app.properties]\n",
	"apps/overlay/conf/app.properties": "a=1\n",
	"apps/overlay/README.md":           "not read by kustomize\n",
	"charts/web/Chart.yaml":            "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"charts/web/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {r: '{{ .Values.r }}'}\n",
	"env/prod.yaml":                    "r: 1\n",
	"plain/cm.yaml":                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
	"gen/kustomization.yaml":           "generators: [g.yaml]\n",
	"gen/g.yaml":                       "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: g}\nliterals: [a=1]\n",
	"watched/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: watched}\n",
	"shared/settings.txt":              "x\n",
	"README.md":                        "fleet\n",
}

func writeFiles(t *testing.T, files map[string]string, edits map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if e, ok := edits[name]; ok {
			content = e
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestIncrementalTargets: a target is rendered only when the PR changes a file
// its render reads (through bases, components, generator files, values files
// outside the chart) or one its watch globs match; a target whose inputs the
// walker cannot tell is always rendered; the others are listed as not affected.
func TestIncrementalTargets(t *testing.T) {
	base := writeFiles(t, incrementalRepo, nil)
	cases := []struct {
		name     string
		edits    map[string]string
		rendered []string
	}{
		{"component file", map[string]string{"apps/comp/extra.yaml": strings.Replace(incrementalRepo["apps/comp/extra.yaml"], "'1'", "'2'", 1)}, []string{"gen", "overlay"}},
		{"generator file", map[string]string{"apps/overlay/conf/app.properties": "a=2\n"}, []string{"gen", "overlay"}},
		{"base file", map[string]string{"apps/base/cm.yaml": strings.Replace(incrementalRepo["apps/base/cm.yaml"], "'1'", "'2'", 1)}, []string{"gen", "overlay"}},
		{"values file", map[string]string{"env/prod.yaml": "r: 2\n"}, []string{"chart", "gen"}},
		{"watched file", map[string]string{"shared/settings.txt": "y\n"}, []string{"gen", "watched"}},
		{"unread file", map[string]string{"apps/overlay/README.md": "still not read\n", "README.md": "the fleet\n"}, []string{"gen"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := gitRepo(t, base, writeFiles(t, incrementalRepo, c.edits))
			rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow})
			if err != nil {
				t.Fatal(err)
			}
			var rendered []string
			for _, tr := range rep.Targets {
				if tr.Error != "" {
					t.Errorf("%s: %s", tr.Name, tr.Error)
				}
				switch {
				case tr.Skipped != "":
					t.Errorf("%s skipped: %s", tr.Name, tr.Skipped)
				case tr.NotAffected == "":
					rendered = append(rendered, tr.Name)
				case len(tr.Changes) > 0 || tr.LiveChecked:
					t.Errorf("%s is not affected but has %d changes, live checked %v", tr.Name, len(tr.Changes), tr.LiveChecked)
				}
			}
			slices.Sort(rendered)
			if !slices.Equal(rendered, c.rendered) {
				t.Errorf("rendered %v, want %v", rendered, c.rendered)
			}
			if rep.Failing {
				t.Errorf("the check fails: %+v", rep.Findings)
			}
		})
	}
	t.Run("all targets", func(t *testing.T) {
		repo := gitRepo(t, base, writeFiles(t, incrementalRepo, map[string]string{"README.md": "the fleet\n"}))
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, AllTargets: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range rep.Targets {
			if tr.Skipped != "" || tr.Error != "" || tr.NotAffected != "" {
				t.Errorf("%s: skipped %q, error %q, not affected %q", tr.Name, tr.Skipped, tr.Error, tr.NotAffected)
			}
		}
	})
}
