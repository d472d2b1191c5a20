package discover

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/render"
)

// TestPruneKeepsRenderMadeTargets: a target whose objects only its render
// makes (an app-of-apps chart's Application, a Kustomization named by a
// postBuild variable) is found although the render that makes it is
// unchanged, when another target reads the same changed file: both sides
// list what a full search lists (review of gitops.Prune, issue 25).
func TestPruneKeepsRenderMadeTargets(t *testing.T) {
	overlay := func(env string) map[string]string {
		return map[string]string{
			"guestbook/overlays/" + env + "/kustomization.yaml": "resources:\n  - ../../base\nnamePrefix: " + env + "-\n",
		}
	}
	base := map[string]string{
		"guestbook/base/kustomization.yaml": "resources:\n  - deploy.yaml\n",
		"guestbook/base/deploy.yaml":        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: gb\n  annotations:\n    replicas: \"1\"\n",
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // the target that only a render makes
	}{
		{name: "argo chart app-of-apps", want: "guestbook-prod", files: map[string]string{
			"argocd/root.yaml":             app("root", "charts/apps"),
			"argocd/guestbook-dev.yaml":    app("guestbook-dev", "guestbook/overlays/dev"),
			"charts/apps/Chart.yaml":       "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
			"charts/apps/templates/a.yaml": app("guestbook-prod", "guestbook/overlays/prod"),
		}},
		{name: "flux postBuild name", want: "podinfo-prod", files: map[string]string{
			"clusters/prod/apps.yaml":      fluxKS("apps", "./apps/prod", "  postBuild:\n    substitute:\n      ENV: prod\n"),
			"apps/prod/kustomization.yaml": "resources:\n  - podinfo.yaml\n",
			"apps/prod/podinfo.yaml":       fluxKS("podinfo-${ENV}", "./guestbook/overlays/prod", ""),
			"clusters/dev/podinfo.yaml":    fluxKS("podinfo-dev", "./guestbook/overlays/dev", ""),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for _, m := range []map[string]string{base, overlay("dev"), overlay("prod"), tc.files} {
				for k, v := range m {
					files[k] = v
				}
			}
			baseDir, headDir := writeRepo(t, files), writeRepo(t, files)
			changed := []string{"guestbook/base/deploy.yaml"}
			if err := os.WriteFile(filepath.Join(headDir, changed[0]), []byte(strings.Replace(files[changed[0]], `"1"`, `"3"`, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := searchOptions(t, baseDir, headDir)
			full, err := FromControllers(t.Context(), baseDir, headDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Prune = &gitops.Prune{Changed: changed}
			pruned, err := FromControllers(t.Context(), baseDir, headDir, opts)
			if err != nil {
				t.Fatal(err)
			}
			names := func(r *Result) []string {
				var out []string
				for _, t := range r.Targets {
					out = append(out, t.Name+"@"+t.Cluster)
				}
				slices.Sort(out)
				return out
			}
			if got, want := names(pruned), names(full); !slices.Equal(got, want) {
				t.Errorf("pruned search lists %v, want %v as the full search", got, want)
			}
			if !slices.ContainsFunc(pruned.Targets, func(x config.Target) bool { return x.Name == tc.want }) {
				t.Errorf("%s, which reads the changed file, is not listed: %v", tc.want, names(pruned))
			}
		})
	}
}

// searchOptions are discovery's options for a pair of checkouts: real
// renders, the inputs of both sides (render.InputFinder, closed at the end
// of the test), the fleet's repository URL.
func searchOptions(t *testing.T, baseDir, headDir string) gitops.Options {
	bi, hi := render.NewInputFinder(baseDir), render.NewInputFinder(headDir)
	t.Cleanup(func() {
		bi.Close()
		hi.Close()
	})
	opts := gitops.DefaultOptions()
	opts.RepoURLs = []string{"https://example.com/fleet.git"}
	opts.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		return render.Render(ctx, root, t.Path, t.Render)
	}
	opts.Inputs = func(t config.Target) render.Inputs { return bi.Find(t.Path, t.Render).Merge(hi.Find(t.Path, t.Render)) }
	return opts
}

func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func app(name, path string) string {
	return `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: ` + name + `
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://example.com/fleet.git
    targetRevision: HEAD
    path: ` + path + `
  destination:
    server: https://kubernetes.default.svc
    namespace: guestbook
  syncPolicy:
    automated: {}
`
}

func fluxKS(name, path, extra string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  interval: 1h
  path: ` + path + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
` + extra
}

// pairMemo is a gitops.PairMemo in memory.
type pairMemo struct{ pairs map[string][2]*gitops.Result }

func (m *pairMemo) Get(string) (*gitops.Result, bool) { return nil, false }
func (m *pairMemo) Put(string, *gitops.Result)        {}
func (m *pairMemo) GetPair(b, h string) (*gitops.Result, *gitops.Result, bool) {
	p, ok := m.pairs[b+"|"+h]
	return p[0], p[1], ok
}
func (m *pairMemo) PutPair(b, h string, rb, rh *gitops.Result) {
	m.pairs[b+"|"+h] = [2]*gitops.Result{rb, rh}
}

// TestPrunedPairKept: the pruned Results of a pair of checkouts are kept
// (gitops.PairMemo) and the same pair searched again renders nothing.
func TestPrunedPairKept(t *testing.T) {
	files := map[string]string{
		"argocd/root.yaml":             app("root", "charts/apps"),
		"argocd/guestbook-dev.yaml":    app("guestbook-dev", "guestbook/dev"),
		"charts/apps/Chart.yaml":       "apiVersion: v2\nname: apps\nversion: 0.1.0\n",
		"charts/apps/templates/a.yaml": app("guestbook-prod", "guestbook/prod"),
		"guestbook/dev/sa.yaml":        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: dev\n",
		"guestbook/prod/sa.yaml":       "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: prod\n",
		"README.md":                    "# fleet\n",
	}
	baseDir, headDir := writeRepo(t, files), writeRepo(t, files)
	if err := os.WriteFile(filepath.Join(headDir, "README.md"), []byte("# fleet, edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bi, hi := render.NewInputFinder(baseDir), render.NewInputFinder(headDir)
	defer bi.Close()
	defer hi.Close()
	var renders atomic.Int64 // base and head are searched at the same time
	opts := gitops.DefaultOptions()
	opts.RepoURLs = []string{"https://example.com/fleet.git"}
	opts.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		renders.Add(1)
		return render.Render(ctx, root, t.Path, t.Render)
	}
	opts.Inputs = func(t config.Target) render.Inputs { return bi.Find(t.Path, t.Render).Merge(hi.Find(t.Path, t.Render)) }
	opts.Prune = &gitops.Prune{Changed: []string{"README.md"}}
	memo := &pairMemo{pairs: map[string][2]*gitops.Result{}}
	opts.Memo = memo
	first, err := FromControllers(t.Context(), baseDir, headDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if renders.Load() == 0 || len(memo.pairs) != 1 {
		t.Fatalf("first search: %d renders (want the app-of-apps chart's), %d pairs kept (want 1)", renders.Load(), len(memo.pairs))
	}
	renders.Store(0)
	again, err := FromControllers(t.Context(), baseDir, headDir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := renders.Load(); n != 0 {
		t.Errorf("the same pair searched again asked for %d renders, want none", n)
	}
	if len(again.Targets) != len(first.Targets) {
		t.Errorf("kept pair lists %d targets, want %d", len(again.Targets), len(first.Targets))
	}
}
