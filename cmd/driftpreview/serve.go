package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/reports"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/serverconfig"
	"github.com/driftpreview/driftpreview/bot/watch"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
)

// runServe is `driftpreview serve --config server.yaml`: the webhook receiver and
// job runner, until ctx is cancelled (SIGINT/SIGTERM), then a graceful stop.
func runServe(ctx context.Context, args []string, _, stderr io.Writer) int {
	fl := flag.NewFlagSet("serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	configPath := fl.String("config", "", "server config `file` (server.yaml); every setting may also come from DRIFTPREVIEW_<PATH> variables")
	if err := fl.Parse(args); err != nil {
		return exitError
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "driftpreview serve: unexpected argument %q\n", fl.Arg(0))
		return exitError
	}
	cfg, err := serverconfig.Load(*configPath, os.Environ())
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview serve: %v\n", err)
		return exitError
	}
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	opts, err := serverOptions(cfg, log)
	if err != nil {
		log.Error("configuring", "error", err)
		return exitError
	}
	srv, err := server.New(ctx, opts)
	if err != nil {
		log.Error("starting", "error", err)
		return exitError
	}
	if err := srv.Run(ctx); err != nil {
		log.Error("serving", "error", err)
		return exitError
	}
	log.Info("stopped")
	return exitOK
}

// serverOptions wires the adapters, clusters and queue settings from the config.
func serverOptions(cfg *serverconfig.Config, log *slog.Logger) (server.Options, error) {
	hosts := map[string]server.Host{}
	if cfg.GitHub.Enabled() {
		o := github.DefaultOptions()
		o.AppID = cfg.GitHub.AppID
		o.PrivateKey = []byte(cfg.GitHub.PrivateKey.Value())
		o.WebhookSecret = []byte(cfg.GitHub.WebhookSecret.Value())
		o.APIURL, o.WebURL = cfg.GitHub.APIURL, cfg.GitHub.WebURL
		o.Retry.Logger = log.With("host", "github")
		c, err := github.New(o)
		if err != nil {
			return server.Options{}, err
		}
		hosts["github"] = c
	}
	if cfg.GitLab.Enabled() {
		o := gitlab.DefaultOptions()
		o.URL = cfg.GitLab.URL
		o.Token = cfg.GitLab.Token.Value()
		o.WebhookSecret = []byte(cfg.GitLab.WebhookSecret.Value())
		o.Retry.Logger = log.With("host", "gitlab")
		c, err := gitlab.New(o)
		if err != nil {
			return server.Options{}, err
		}
		hosts["gitlab"] = c
	}
	jo := jobs.DefaultOptions()
	jo.AllowForkPRs = cfg.AllowForkPRs
	clusters := map[string]preview.Cluster{}
	// Discovery and OpenAPI answers serve every job for their TTL.
	discovery := jobs.NewDiscoveryCache(jobs.DefaultDiscoveryTTL)
	var errs []error
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range cfg.Clusters {
			if !yield(k) {
				return
			}
		}
	}) {
		cl, err := clusterFor(name, cfg.Clusters[name])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cl.Config = discovery.Wrap(name, cl.Config)
		clusters[name] = cl
		log.Info("cluster configured", "cluster", name, "liveMode", cl.LiveMode, "kubeconfig", cfg.Clusters[name].Kubeconfig, "context", cfg.Clusters[name].Context)
	}
	if err := errors.Join(errs...); err != nil {
		return server.Options{}, err
	}
	jo.Clusters = clusters
	if cfg.DefaultCluster != "" {
		def := clusters[cfg.DefaultCluster]
		jo.DefaultCluster = &def
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.ArgoCD.Clusters)) {
		c := cfg.ArgoCD.Clusters[name]
		jo.ArgoClusters = append(jo.ArgoClusters, gitops.ArgoCluster{Name: name, Server: c.Server, Project: c.Project, Labels: c.Labels, Annotations: c.Annotations, Secret: name})
	}
	if cfg.ArgoCDCluster != "" {
		argo := clusters[cfg.ArgoCDCluster]
		jo.ArgoCDCluster = &argo
	}
	if cfg.Remote.Enabled() {
		pol := cfg.Remote // its cache dir defaulted by serverconfig
		f, err := remote.NewFetcher(pol)
		if err != nil {
			return server.Options{}, fmt.Errorf("server config: remote: %w", err)
		}
		jo.Remote = f
		var prefixes []string
		for _, a := range pol.Allow {
			prefixes = append(prefixes, remote.Redact(a.URL)) // never the credentials
		}
		log.Info("remote fetching on", "mode", pol.Mode, "prefixes", prefixes, "cacheDir", pol.CacheDir)
	}
	rc, err := preview.OpenDiskCache(filepath.Join(cfg.WorkDir, "render-cache"), 0)
	if err != nil {
		return server.Options{}, fmt.Errorf("server config: workDir: %w", err)
	}
	jo.RenderCache = rc
	jo.CheckoutDir = cfg.CheckoutDir
	var reportPages *reports.Store
	if rp := cfg.Reports; rp.Enabled() {
		reportPages, err = reports.Open(reports.Options{Dir: filepath.Join(cfg.WorkDir, serverconfig.DefaultReportsDir),
			BaseURL: rp.URL, Key: []byte(rp.Key.Value()), MaxBytes: rp.MaxBytes, Retention: rp.Retention})
		if err != nil {
			return server.Options{}, fmt.Errorf("server config: reports: %w", err)
		}
		jo.Reports = reportPages
		log.Info("report pages kept and linked", "url", rp.URL, "maxBytes", rp.MaxBytes, "retention", rp.Retention)
	}
	served := slices.Sorted(func(yield func(string) bool) {
		for k := range hosts {
			if !yield(k) {
				return
			}
		}
	})
	log.Info("configured", "listen", cfg.Listen, "hosts", served, "queue", cfg.Queue.Driver,
		"repos", cfg.Repos, "allowForkPRs", cfg.AllowForkPRs, "workDir", cfg.WorkDir,
		"drift", cfg.Drift.Enabled, "driftInterval", cfg.Drift.Interval)
	return server.Options{
		Listen:    cfg.Listen,
		Hosts:     hosts,
		Previewer: jobs.PreviewFunc(preview.Run),
		WorkDir:   cfg.WorkDir,
		Queue: queue.Options{
			Driver: cfg.Queue.Driver, DSN: cfg.Queue.DSN.Value(),
			MaxWorkers: cfg.Queue.Workers, JobTimeout: cfg.Queue.JobTimeout,
			RescueStuckJobsAfter: cfg.Queue.RescueStuckAfter, MaxAttempts: cfg.Queue.MaxAttempts,
		},
		Jobs: jo,
		Handler: server.HandlerOptions{Repos: cfg.Repos,
			MaxBodyBytes: cfg.Webhooks.MaxBodyBytes, MaxConcurrent: cfg.Webhooks.MaxConcurrent, Reports: reportsHandler(reportPages)},
		MetricsListen: metricsListen(cfg.Metrics.Listen),
		MetricsToken:  cfg.Metrics.BearerToken.Value(),
		Logger:        log,
		SweepInterval: cfg.Queue.SweepInterval,
		Watch: server.WatchOptions{Enabled: cfg.Watch.Mode == serverconfig.WatchOn, Options: watch.Options{
			Debounce: cfg.Watch.Debounce, PollInterval: cfg.Watch.PollInterval,
			RepoPerMinute: float64(cfg.Watch.RepoPerMinute), RepoBurst: cfg.Watch.RepoBurst,
		}},
		Drift: server.DriftOptions{Enabled: cfg.Drift.Enabled, Interval: cfg.Drift.Interval},
	}, nil
}

// reportsHandler is the pages' handler, or nil (not a nil *Store in an
// interface) when none are kept.
func reportsHandler(s *reports.Store) http.Handler {
	if s == nil {
		return nil
	}
	return s
}

// metricsListen maps the config's "off" to no metrics listener.
func metricsListen(addr string) string {
	if addr == "off" {
		return ""
	}
	return addr
}

// clusterFor builds a cluster's client config: a kubeconfig and context, or the
// in-cluster service account when no kubeconfig is given.
func clusterFor(name string, c serverconfig.Cluster) (preview.Cluster, error) {
	out := preview.Cluster{Name: name, LiveMode: c.LiveMode}
	if c.LiveMode == diffing.LiveOff {
		return out, nil
	}
	if c.Kubeconfig != "" {
		cl, err := kubeCluster(c.Kubeconfig, c.Context, c.LiveMode)
		if err != nil {
			return out, fmt.Errorf("cluster %s: %w", name, err)
		}
		out.Config = cl.Config
		return out, nil
	}
	rc, err := rest.InClusterConfig()
	if err != nil {
		return out, fmt.Errorf("cluster %s: loading in-cluster credentials: %w", name, err)
	}
	out.Config = rc
	return out, nil
}
