package preview

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
	"github.com/driftpreview/driftpreview/render"
)

// resolveTargets returns the configured targets, or discovers them: first from GitOps
// controller objects (Argo CD, Flux) at base and head, else from the directories the
// PR touches. Discovery's notes about the repository as a whole come back
// separately, for the report, and so do the names of the targets the base declares.
func resolveTargets(ctx context.Context, cfg *config.Config, baseDir, headDir string, changed, urls []string, req Request, cache *renderCache) ([]config.Target, []string, map[string]bool, error) {
	atBase := map[string]bool{}
	if !cfg.Discovered {
		// The config is read from the base: every target it names is the base's.
		for _, t := range cfg.Targets {
			atBase[targetKey(t)] = true
		}
		return cfg.Targets, nil, atBase, nil
	}
	var targets []config.Target
	var notes []string
	seen := map[string]bool{}
	at := map[string]int{}
	var atHead *gitops.Result
	// Base first: when both sides declare a target, the base (trusted) wins; the
	// head side is still rendered as the head declares it (HeadSide).
	for _, dir := range []string{baseDir, headDir} {
		opts := gitops.DefaultOptions()
		opts.RepoURLs = urls
		opts.ClusterNames = clusterNames(req)
		opts.Branch = req.BaseBranch
		opts.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
			return cache.render(ctx, root, t.Path, t.Render)
		}
		res, err := gitops.Discover(ctx, dir, opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("discovering GitOps targets: %w", err)
		}
		if dir == headDir {
			notes = append(notes, res.Notes...)
			atHead = res
		}
		for _, t := range append(res.Targets, res.NotRendered...) {
			// Targets of different clusters may share a name (Kustomization
			// apps of clusters/staging and of clusters/production).
			k := targetKey(t)
			if dir == baseDir {
				atBase[k] = true
			}
			if !seen[k] {
				seen[k] = true
				at[k] = len(targets)
				targets = append(targets, t)
				continue
			}
			if b := &targets[at[k]]; dir == headDir && b.Skip == "" && t.Skip == "" &&
				(b.Path != t.Path || !reflect.DeepEqual(b.Render, t.Render) || !maps.Equal(b.Substitute, t.Substitute)) {
				b.HeadSide = &config.HeadSide{Path: t.Path, Render: t.Render, Substitute: t.Substitute}
			}
		}
	}
	if len(targets) > 0 {
		markDeleted(targets, atHead)
		return targets, notes, atBase, nil // discovery's order: rendered targets, then the rest
	}
	notes = nil
	for _, dir := range []string{baseDir, headDir} {
		found, err := config.Discover(dir, changed, config.DefaultDiscoverOptions())
		if err != nil {
			return nil, nil, nil, fmt.Errorf("discovering targets: %w", err)
		}
		for _, t := range found {
			k := targetKey(t)
			if dir == baseDir {
				atBase[k] = true
			}
			if !seen[k] {
				seen[k] = true
				targets = append(targets, t)
			}
		}
	}
	slices.SortFunc(targets, byName)
	return targets, notes, atBase, nil
}

// targetKey tells targets apart: targets of different clusters may share a name.
func targetKey(t config.Target) string { return t.Cluster + "\x00" + t.Name }

func byName(a, b config.Target) int { return strings.Compare(a.Name, b.Name) }

func clusterNames(req Request) map[string]string {
	m := map[string]string{}
	for name, c := range req.Clusters {
		m[name] = name
		if c.Config != nil {
			m[c.Config.Host] = name
		}
	}
	return m
}

// tracking tells the live reader how the target's controller marks the objects it
// manages: to find objects removed from git but still live (the prune scope), and
// to add the same marks to what it predicts the controller applies. argo is the
// argocd-cm of the Argo CD that owns an Application (zero: not read, defaults).
func tracking(t config.Target, argo controller.ArgoSettings) live.Tracking {
	var tr live.Tracking
	if t.Controller == nil {
		return tr
	}
	switch t.Controller.Kind {
	case "Application":
		// Application.InstanceName (argo-cd pkg/apis/application/v1alpha1): the
		// name, or namespace_name outside the namespace Argo CD runs in.
		home := argo.Namespace
		if home == "" {
			home = "argocd"
		}
		tr.ArgoApp = t.Controller.Name
		if ns := t.Controller.Namespace; ns != "" && ns != home {
			tr.ArgoApp = ns + "_" + t.Controller.Name
		}
		tr.ArgoLabelKey, tr.ArgoMethod, tr.ArgoInstallationID = argo.InstanceLabelKey, argo.TrackingMethod, argo.InstallationID
		tr.ArgoDestNamespace = t.Namespace
	case "Kustomization":
		tr.FluxName, tr.FluxNamespace = t.Controller.Name, t.Controller.Namespace
	case "HelmRelease":
		tr.HelmRelease, tr.HelmNamespace = t.Render.Helm.ReleaseName, t.Namespace
		tr.FluxHelmName, tr.FluxHelmNamespace = t.Controller.Name, t.Controller.Namespace
	}
	return tr
}
