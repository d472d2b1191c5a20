package discover

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftpreview/driftpreview/bot/gitops"
)

// TestInertChangeSearchesBaseOnly: a pull request that changes only files no
// search reads (a README, a picture) has the base searched alone, its Result
// standing for the head's, and lists what a full search of both sides lists;
// a change that could make a search differ (a new directory a controller
// names, a file an ApplicationSet's git generator may list, a file a
// kustomization names, a symlink) has both sides searched (issue 25).
func TestInertChangeSearchesBaseOnly(t *testing.T) {
	files := map[string]string{
		"clusters/prod/apps.yaml":        fluxKS("apps", "./apps", ""),
		"clusters/prod/web.yaml":         fluxKS("web", "./web", ""),
		"clusters/prod/new.yaml":         fluxKS("new", "./new", ""),
		"apps/kustomization.yaml":        "resources:\n  - db.yaml\n",
		"apps/db.yaml":                   fluxKS("db", "./db", ""),
		"db/sa.yaml":                     "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: db\n",
		"web/kustomization.yaml":         "resources:\n  - sa.yaml\nconfigMapGenerator:\n  - name: docs\n    files:\n      - NOTES.md\n",
		"web/sa.yaml":                    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: web\n",
		"web/NOTES.md":                   "notes\n",
		"README.md":                      "# fleet\n",
		"docs/diagram.svg":               "<svg/>\n",
		"argocd/placeholder/.keep.md":    "",
		"charts/tool/Chart.yaml":         "apiVersion: v2\nname: tool\nversion: 0.1.0\n",
		"charts/tool/templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tool\n",
		"charts/tool/templates/NOTES.md": "installed\n",
	}
	appSet := `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: docs
  namespace: argocd
spec:
  generators:
    - git:
        repoURL: https://example.com/fleet.git
        revision: HEAD
        directories:
          - path: sites/*
  template:
    metadata:
      name: '{{path.basename}}'
    spec:
      project: default
      source:
        repoURL: https://example.com/fleet.git
        targetRevision: HEAD
        path: '{{path}}'
      destination:
        server: https://kubernetes.default.svc
        namespace: docs
`
	for _, tc := range []struct {
		name   string
		extra  map[string]string                        // files of both sides
		edit   func(t *testing.T, head string) []string // edits the head, returns the changed files
		shared bool
	}{
		{name: "readme", shared: true, edit: func(t *testing.T, head string) []string {
			write(t, head, "README.md", "# fleet, edited\n")
			write(t, head, "docs/diagram.svg", "<svg></svg>\n")
			return []string{"README.md", "docs/diagram.svg"}
		}},
		{name: "file a kustomization names", edit: func(t *testing.T, head string) []string {
			write(t, head, "web/NOTES.md", "notes, edited\n")
			return []string{"web/NOTES.md"}
		}},
		{name: "file of a chart", edit: func(t *testing.T, head string) []string {
			write(t, head, "charts/tool/templates/NOTES.md", "installed: argoproj.io\n")
			return []string{"charts/tool/templates/NOTES.md"}
		}},
		{name: "new directory a controller names", edit: func(t *testing.T, head string) []string {
			write(t, head, "new/README.md", "# new\n")
			return []string{"new/README.md"}
		}},
		{name: "symlink", edit: func(t *testing.T, head string) []string {
			if err := os.Symlink("../db", filepath.Join(head, "docs", "db.md")); err != nil {
				t.Fatal(err)
			}
			return []string{"docs/db.md"}
		}},
		{name: "applicationset", extra: map[string]string{"argocd/docs.yaml": appSet, "sites/a/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n"},
			edit: func(t *testing.T, head string) []string {
				write(t, head, "README.md", "# fleet, edited\n")
				return []string{"README.md"}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := map[string]string{}
			for _, m := range []map[string]string{files, tc.extra} {
				for k, v := range m {
					all[k] = v
				}
			}
			baseDir, headDir := writeRepo(t, all), writeRepo(t, all)
			changed := tc.edit(t, headDir)
			opts := searchOptions(t, baseDir, headDir)
			full, err := FromControllers(t.Context(), baseDir, headDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Prune = &gitops.Prune{Changed: changed}
			base, head, err := discoverSides(t.Context(), baseDir, headDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := base == head; got != tc.shared {
				t.Errorf("head's Result is the base's: %v, want %v", got, tc.shared)
			}
			pruned, err := FromControllers(t.Context(), baseDir, headDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := listing(pruned), listing(full); !slices.Equal(got, want) {
				t.Errorf("pruned search lists\n%v\nwant, as the full search,\n%v", got, want)
			}
		})
	}
}

// listing is what a Result says of each target: name, cluster, path, and
// whether it is new or the same at head.
func listing(r *Result) []string {
	var out []string
	for _, t := range r.Targets {
		out = append(out, t.Name+"@"+t.Cluster+" "+t.Path+" new="+boolString(r.New[Key(t)])+" same="+boolString(t.SameAtHead))
	}
	slices.Sort(out)
	return out
}

func boolString(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
