package preview

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/discover"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/render"
)

// resolveTargets returns the configured or discovered targets (discover.Targets)
// with discovery's notes about the repository as a whole, for the report, the
// keys (discover.Key) of the targets the base declares and of those the merge
// creates. Controller discovery renders through the preview's cache.
func resolveTargets(ctx context.Context, cfg *config.Config, baseDir, headDir string, changed, urls []string, req Request, cache *renderCache, trees map[string]render.GitTree) (*discover.Result, error) {
	opts := discover.Options{Controllers: gitops.DefaultOptions(), Changed: changed, Paths: discover.DefaultPathOptions()}
	opts.Controllers.RepoURLs = urls
	opts.Controllers.ClusterNames = clusterNames(req)
	opts.Controllers.Branch = req.BaseBranch
	opts.Controllers.Clusters = argoClusterLister(req)
	opts.Controllers.LiveData = liveDataReader(req)
	opts.Controllers.ArgoBuildOptions = argoBuildOptions(req)
	opts.Controllers.ArgoDefaultBuildOptions = cfg.ArgoKustomizeBuildOptions
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
	// What each target's render reads, at base and head together: a target a
	// file declares waits for the render that declares it as the controller
	// sees it, and, unless every target is to be compared, a render the pull
	// request cannot change is not searched (gitops.Prune).
	bi, hi := cache.inputs[baseDir], cache.inputs[headDir]
	if bi != nil && hi != nil {
		opts.Controllers.Inputs = func(t config.Target) render.Inputs {
			return bi.Find(t.Path, t.Render).Merge(hi.Find(t.Path, t.Render))
		}
		if len(req.Targets) == 0 && !req.AllTargets {
			opts.Controllers.Prune = &gitops.Prune{Changed: changed}
		}
	}
	// Discovery's Results are kept by checkout content (discoveryMemo).
	opts.Controllers.Memo = newDiscoveryMemo(req, cache, opts.Controllers, trees)
	return discover.Targets(ctx, cfg, baseDir, headDir, opts)
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

// liveDataReader is how discovery reads a ConfigMap or Secret the repository
// does not hold from the target's cluster (a HelmRelease's valuesFrom, a
// Kustomization's substituteFrom, which the Flux controllers read there): the
// cluster the live comparison uses for it, unless its live mode is off. Each
// object is read once per preview; Secret values go no further than
// discovery, which passes on hidden placeholders. nil when no cluster is
// configured.
func liveDataReader(req Request) func(ctx context.Context, cluster, kind, ns, name string) (map[string]string, bool, error) {
	if req.DefaultCluster == nil && len(req.Clusters) == 0 {
		return nil
	}
	type read struct {
		data  map[string]string
		found bool
		err   error
	}
	var mu sync.Mutex
	cache := map[string]read{}
	return func(ctx context.Context, cluster, kind, ns, name string) (map[string]string, bool, error) {
		var cl *Cluster
		if c, ok := req.Clusters[cluster]; ok && cluster != "" {
			cl = &c
		} else if req.DefaultCluster != nil {
			cl = req.DefaultCluster
		}
		if cl == nil || cl.Config == nil {
			return nil, false, fmt.Errorf("no credentials for cluster %q are configured", cluster)
		}
		if cl.LiveMode == "off" {
			return nil, false, errors.New("live mode is off")
		}
		key := cl.Name + "|" + cluster + "|" + kind + "|" + ns + "/" + name
		mu.Lock()
		defer mu.Unlock()
		if r, ok := cache[key]; ok {
			return r.data, r.found, r.err
		}
		var r read
		r.data, r.found, r.err = readLiveData(ctx, cl.Config, kind, ns, name)
		cache[key] = r
		return r.data, r.found, r.err
	}
}

// readLiveData reads one ConfigMap's data or Secret's (decoded) data.
func readLiveData(ctx context.Context, cfg *rest.Config, kind, ns, name string) (map[string]string, bool, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := map[string]string{}
	switch kind {
	case "ConfigMap":
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading ConfigMap %s/%s: %w", ns, name, err)
		}
		maps.Copy(out, cm.Data)
	case "Secret":
		s, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
		}
		for k, v := range s.Data {
			out[k] = string(v)
		}
	default:
		return nil, false, fmt.Errorf("kind %q: want ConfigMap or Secret", kind)
	}
	return out, true, nil
}

// argoBuildOptions reads Argo CD's kustomize.buildOptions from argocd-cm
// (argo-cd common.ArgoCDConfigMapName; settings key kustomize.buildOptions)
// in the cluster Argo CD runs in, as argoClusterLister picks it: in the
// Application's namespace, else in argocd, as Argo CD's apps in any
// namespace share the control plane's. nil when there is no such cluster or
// live mode is off there; each namespace is read once per preview.
func argoBuildOptions(req Request) func(ctx context.Context, ns string) (string, string, bool) {
	cl := req.ArgoCDCluster
	if cl == nil || cl.Config == nil {
		cl = req.DefaultCluster
	}
	if cl == nil || cl.Config == nil || cl.LiveMode == "off" {
		return nil
	}
	cfg, name := cl.Config, cl.Name
	type read struct {
		options, from string
		ok            bool
	}
	var mu sync.Mutex
	cache := map[string]read{}
	return func(ctx context.Context, ns string) (string, string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if r, ok := cache[ns]; ok {
			return r.options, r.from, r.ok
		}
		r := read{}
		if kc, err := kubernetes.NewForConfig(cfg); err == nil {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for _, n := range []string{ns, gitops.DefaultArgoNamespace} {
				cm, err := kc.CoreV1().ConfigMaps(n).Get(ctx, "argocd-cm", metav1.GetOptions{})
				if err != nil {
					if apierrors.IsNotFound(err) {
						continue
					}
					break
				}
				r = read{options: cm.Data["kustomize.buildOptions"], from: fmt.Sprintf("argocd-cm of %s in cluster %s", n, name), ok: true}
				break
			}
		}
		cache[ns] = r
		return r.options, r.from, r.ok
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
