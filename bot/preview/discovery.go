package preview

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/rest"

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
	opts.Controllers.Clusters = argoClusterLister(req)
	opts.Controllers.Renderer = func(ctx context.Context, root string, t config.Target) (render.ObjectSet, error) {
		ro := t.Render
		ro.Remote = req.Remote
		return cache.render(ctx, root, t.Path, ro)
	}
	if req.Remote != nil {
		opts.Controllers.Remote = req.Remote.Allowed
	}
	// ApplicationSet templates run in render processes, on the preview's budget.
	opts.Controllers.Templates = cache.spent.templates
	opts.Controllers.TemplateLimits = req.TemplateLimits
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

// argoClusterLister is how the ApplicationSet clusters generator learns Argo CD's
// clusters: the static list of the server config when there is one, else the
// cluster Secrets (argocd.argoproj.io/secret-type: cluster) read from the cluster
// Argo CD runs in, ArgoCDCluster, or else the default cluster, where in-cluster
// Applications are read too. nil when neither is configured: the generator is then
// listed as not rendered. Each namespace is read once per preview.
func argoClusterLister(req Request) gitops.ClusterLister {
	if req.ArgoClusters != nil {
		static := req.ArgoClusters
		return func(context.Context, string) ([]gitops.ArgoCluster, error) { return static, nil }
	}
	cl := req.ArgoCDCluster
	if cl == nil || cl.Config == nil {
		cl = req.DefaultCluster
	}
	if cl == nil || cl.Config == nil {
		return nil
	}
	if cl.LiveMode == "off" {
		return func(context.Context, string) ([]gitops.ArgoCluster, error) {
			return nil, fmt.Errorf("live mode is off for cluster %s, where Argo CD runs", cl.Name)
		}
	}
	cfg := cl.Config
	var mu sync.Mutex
	type read struct {
		list []gitops.ArgoCluster
		err  error
	}
	cache := map[string]read{}
	return func(ctx context.Context, ns string) ([]gitops.ArgoCluster, error) {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := cache[ns]; ok {
			return r.list, r.err
		}
		list, err := readArgoClusters(ctx, cfg, ns)
		cache[ns] = read{list, err}
		return list, err
	}
}

// argoClusterSecretLabel marks Argo CD's cluster Secrets (common.LabelKeySecretType,
// common.LabelValueSecretTypeCluster).
const argoClusterSecretLabel = "argocd.argoproj.io/secret-type=cluster"

// readArgoClusters lists the cluster Secrets of namespace. Only name, server and
// project are taken from their data, never the credentials (config), and the
// last-applied-configuration annotation, which holds the whole Secret, is dropped.
func readArgoClusters(ctx context.Context, cfg *rest.Config, ns string) ([]gitops.ArgoCluster, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	secrets, err := kc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: argoClusterSecretLabel})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("listing cluster Secrets timed out after 30s")
		}
		return nil, err
	}
	var out []gitops.ArgoCluster
	for _, s := range secrets.Items {
		ann := map[string]string{}
		for k, v := range s.Annotations {
			if k != "kubectl.kubernetes.io/last-applied-configuration" {
				ann[k] = v
			}
		}
		out = append(out, gitops.ArgoCluster{
			Name: string(s.Data["name"]), Server: string(s.Data["server"]), Project: string(s.Data["project"]),
			Labels: s.Labels, Annotations: ann, Secret: s.Name,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Secret < out[j].Secret })
	return out, nil
}
