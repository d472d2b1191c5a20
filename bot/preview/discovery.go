package preview

import (
	"context"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/render"
)

// resolveTargets returns the configured or discovered targets (discover.Targets),
// discovery's notes about the repository as a whole, for the report, and the keys
// (discover.Key) of the targets the base declares. Controller discovery renders
// through the preview's cache.
func resolveTargets(ctx context.Context, cfg *config.Config, baseDir, headDir string, changed, urls []string, req Request, cache *renderCache) ([]config.Target, []string, map[string]bool, error) {
	opts := discover.Options{Controllers: gitops.DefaultOptions(), Changed: changed, Paths: discover.DefaultPathOptions()}
	opts.Controllers.RepoURLs = urls
	opts.Controllers.ClusterNames = clusterNames(req)
	opts.Controllers.Branch = req.BaseBranch
	opts.Controllers.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		ro := t.Render
		ro.Remote = req.Remote
		return cache.render(ctx, root, t.Path, ro)
	}
	if req.Remote != nil {
		opts.Controllers.Remote = req.Remote.Allowed
	}
	res, err := discover.Targets(ctx, cfg, baseDir, headDir, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return res.Targets, res.Notes, res.AtBase, nil
}

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
