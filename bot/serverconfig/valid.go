package serverconfig

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/reports"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/watch"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
)

// Config is server.yaml after defaults, environment overrides and secret files.
type Config struct {
	// Listen is the HTTP address of webhooks and health (default ":8080").
	Listen string
	// Webhooks bounds webhook intake.
	Webhooks Webhooks
	// Metrics is where Prometheus metrics are served: not on Listen, since they name
	// repositories and targets.
	Metrics Metrics
	GitHub  GitHub
	GitLab  GitLab
	// Clusters maps the cluster names used by .driftpreview.yaml to credentials;
	// credentials never come from a repository.
	Clusters map[string]Cluster
	// DefaultCluster is the cluster of targets that name none; empty means such
	// targets get no live comparison.
	DefaultCluster string
	// ArgoCDCluster is the cluster Argo CD itself runs in (hub and spoke), where
	// Applications are read; empty means Argo CD runs in each in-cluster destination.
	ArgoCDCluster string
	// ArgoCD configures how previews see Argo CD itself.
	ArgoCD ArgoCD
	Queue  Queue
	// Repos is an allowlist of path.Match globs over owner/name ("acme/*"); empty
	// allows every repository that can deliver a signed webhook.
	Repos []string
	// AllowForkPRs renders pull requests from forks; off by default because a fork's
	// head is untrusted input that would be rendered with the server's credentials.
	AllowForkPRs bool
	// WorkDir holds one bare git mirror per repository.
	WorkDir string
	// CheckoutDir is where previews check out base and head (preview.Request);
	// empty chooses /dev/shm when it is a tmpfs with room, else $TMPDIR.
	CheckoutDir string
	// LogLevel is debug, info (default), warn or error.
	LogLevel string
	// Remote says which remote sources (Helm repositories, OCI registries,
	// remote kustomize bases) previews may fetch: the mode (default public:
	// any public address), allowed URL prefixes, credentials per prefix from
	// files, timeouts, size caps and the cache (default <workDir>/remote-cache).
	Remote remote.Policy
	// Reports keeps each pull request's full report page and links it from the
	// comment at a signed, expiring URL under URL; off when URL is empty.
	Reports Reports
	// Watch re-checks open pull requests when the live objects their previews
	// compared change.
	Watch Watch
	// Drift is the drift report of the default branches: one issue per
	// repository, kept after each push to the default branch and every
	// Interval; off by default.
	Drift Drift

	// Warnings are non-fatal remarks found while loading (an unknown DRIFTPREVIEW_
	// variable), for the caller to log.
	Warnings []string
}

// Watch configures the re-check of open pull requests when their live objects
// change (bot/watch).
type Watch struct {
	// Mode is watch (default: informers, a periodic LIST where watch is
	// forbidden) or off.
	Mode string `yaml:"mode"`
	// Debounce is the window in which many changes give one re-preview (default 5s).
	Debounce time.Duration `yaml:"debounce"`
	// PollInterval is how often a type the identity may not watch is LISTed
	// instead (default 5m).
	PollInterval time.Duration `yaml:"pollInterval"`
	// RepoPerMinute and RepoBurst rate-limit one repository's re-previews
	// (defaults 30 and 10).
	RepoPerMinute int `yaml:"repoPerMinute"`
	RepoBurst     int `yaml:"repoBurst"`
}

// Watch modes.
const (
	WatchOn  = "watch"
	WatchOff = "off"
)

// Webhooks bounds what webhook deliveries may cost.
type Webhooks struct {
	// MaxBodyBytes caps a delivery's body; larger ones get 413 (default 10 MiB).
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// MaxConcurrent is how many deliveries are received at once; more wait a second
	// and then get 503 with Retry-After (default 8).
	MaxConcurrent int `yaml:"maxConcurrent"`
}

// Reports configures the full report pages the bot serves at GET /reports/{id}.
type Reports struct {
	// URL is the server's public base URL (https://driftpreview.example.com),
	// where Listen is reached; the pages are kept and linked only when it is set.
	URL string
	// KeyFile holds the key that signs the links (at least 16 bytes); empty
	// generates one in <workDir>/reports/key, kept across restarts.
	KeyFile string
	// Key is read from KeyFile.
	Key Secret
	// MaxBytes caps one page (default 20 MiB): a larger one is not kept and the
	// comment has no link.
	MaxBytes int64
	// Retention is how long a page is kept and its link valid (default 720h).
	Retention time.Duration
}

// Drift configures the drift report of the default branches.
type Drift struct {
	// Enabled runs the drift engine after each push to a repository's default
	// branch and keeps one issue per repository (GitHub: the App needs
	// issues: write and the push event; GitLab: push events on the webhook).
	Enabled bool `yaml:"enabled"`
	// Interval, when set, also runs it every Interval for every repository
	// pushed to since; 0 (the default) schedules nothing.
	Interval time.Duration `yaml:"interval"`
}

// Enabled reports whether report pages are kept and linked.
func (r Reports) Enabled() bool { return r.URL != "" }

// Metrics configures the metrics listener.
type Metrics struct {
	// Listen is the address of GET /metrics (default "127.0.0.1:9090", loopback
	// only); "off" disables it.
	Listen string
	// BearerTokenFile, when set, holds a token every scrape must send as
	// "Authorization: Bearer <token>".
	BearerTokenFile string

	// BearerToken is read from BearerTokenFile.
	BearerToken Secret
}

// GitHub configures the GitHub App; the host is served when AppID is set.
type GitHub struct {
	AppID             int64
	PrivateKeyFile    string
	WebhookSecretFile string
	APIURL            string
	WebURL            string

	// PrivateKey and WebhookSecret are read from the files above.
	PrivateKey    Secret
	WebhookSecret Secret
}

// Enabled reports whether GitHub webhooks are served.
func (g GitHub) Enabled() bool { return g.AppID != 0 }

// GitLab configures the GitLab bot user; the host is served when URL is set.
type GitLab struct {
	URL               string
	TokenFile         string
	WebhookSecretFile string

	// Token and WebhookSecret are read from the files above.
	Token         Secret
	WebhookSecret Secret
}

// Enabled reports whether GitLab webhooks are served.
func (g GitLab) Enabled() bool { return g.URL != "" }

// ArgoCD configures how previews see Argo CD.
type ArgoCD struct {
	// Clusters, when set, are Argo CD's clusters by name, for the ApplicationSet
	// clusters generator, instead of its cluster Secrets read from argocdCluster
	// (or defaultCluster).
	Clusters map[string]ArgoCDCluster `yaml:"clusters"`
}

// ArgoCDCluster is one cluster as an Argo CD cluster Secret describes it, without
// credentials.
type ArgoCDCluster struct {
	Server      string            `yaml:"server"`
	Project     string            `yaml:"project"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// Cluster is how jobs reach one named cluster.
type Cluster struct {
	// Kubeconfig is a kubeconfig file; empty means the in-cluster service account.
	Kubeconfig string `yaml:"kubeconfig"`
	// Context selects a kubeconfig context; empty means its current context.
	Context string `yaml:"context"`
	// LiveMode is simulate (default), dry-run or off.
	LiveMode diffing.LiveMode `yaml:"liveMode"`
}

// Queue configures the durable job queue.
type Queue struct {
	// Driver is sqlite (default, embedded) or postgres (for several replicas).
	Driver string
	// DSN is the SQLite file or the Postgres connection string. It may hold a
	// password, so it is a Secret; DSNFile reads it from a file instead.
	DSN     Secret
	DSNFile string
	// Workers is how many previews run at once in this process (default 2).
	Workers int
	// JobTimeout cancels one attempt of a preview (default 10m).
	JobTimeout time.Duration
	// RescueStuckAfter is when a running job whose process died is run again
	// (default JobTimeout + 5m; must exceed JobTimeout).
	RescueStuckAfter time.Duration
	// MaxAttempts bounds retries with exponential backoff (default 5).
	MaxAttempts int
	// SweepInterval is how often a check or status left in progress by a job killed
	// on its last attempt is completed as an error (default 1m).
	SweepInterval time.Duration
}

// Defaults of server.yaml, all applied by withDefaults. A value a package below
// also falls back to (its DefaultOptions or constructor) is named here, never
// written twice.
const (
	DefaultListen = ":8080"
	// DefaultMetricsListen keeps metrics on loopback unless configured otherwise.
	DefaultMetricsListen = "127.0.0.1:9090"
	DefaultMaxBodyBytes  = server.MaxBodyBytes
	DefaultMaxConcurrent = server.MaxConcurrent
	DefaultWorkDir       = "/var/lib/driftpreview/mirrors"
	// DefaultRemoteCache is the remote cache under the work dir.
	DefaultRemoteCache = "remote-cache"
	DefaultLogLevel    = "info"
	DefaultDriver      = queue.DriverSQLite
	DefaultSQLiteDSN   = "/var/lib/driftpreview/queue.db"
	DefaultGitHubAPI   = github.DefaultAPIURL
	DefaultGitHubWeb   = github.DefaultWebURL
	DefaultWorkers     = queue.DefaultMaxWorkers
	DefaultJobTimeout  = queue.DefaultJobTimeout
	// RescueMargin is how much longer than a job's timeout it may run before it
	// is taken for crashed (queue.rescueStuckAfter defaults to jobTimeout plus it).
	RescueMargin         = queue.RescueMargin
	DefaultMaxAttempts   = queue.DefaultMaxAttempts
	DefaultSweepInterval = server.DefaultSweepInterval
	// DefaultReportMaxBytes and DefaultReportRetention bound the report pages.
	DefaultReportMaxBytes  = reports.DefaultMaxBytes
	DefaultReportRetention = reports.DefaultRetention
	// DefaultReportsDir is the report pages' directory under the work dir.
	DefaultReportsDir = "reports"
	// Defaults of the watch block.
	DefaultWatchDebounce     = watch.DefaultDebounce
	DefaultWatchPollInterval = watch.DefaultPollInterval
	DefaultWatchRepoPerMin   = watch.DefaultRepoPerMin
	DefaultWatchRepoBurst    = watch.DefaultRepoBurst
)

// Load is ParseRaw then ToValid: server.yaml and the environment, secret files
// read, defaults filled, everything checked. Errors name the file and line, or the
// variable, and say what to do; they never hold a secret.
func Load(file string, environ []string) (*Config, error) {
	r, err := ParseRaw(file, environ)
	if err != nil {
		return nil, err
	}
	return r.ToValid()
}

// withDefaults is a copy of r with every unset setting defaulted: the one place
// server.yaml's defaults are set. Values that are set, even invalid ones, are left
// for ToValid to check.
func (r *Raw) withDefaults() Raw {
	d := *r
	d.Clusters = maps.Clone(r.Clusters)
	if d.Listen == "" {
		d.Listen = DefaultListen
	}
	if d.WorkDir == "" {
		d.WorkDir = DefaultWorkDir
	}
	if d.Webhooks.MaxBodyBytes == 0 {
		d.Webhooks.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if d.Webhooks.MaxConcurrent == 0 {
		d.Webhooks.MaxConcurrent = DefaultMaxConcurrent
	}
	if d.Metrics.Listen == "" {
		d.Metrics.Listen = DefaultMetricsListen
	}
	if d.LogLevel == "" {
		d.LogLevel = DefaultLogLevel
	}
	if d.Remote.Mode == "" {
		d.Remote.Mode = remote.DefaultMode
	}
	if d.Remote.Enabled() && d.Remote.CacheDir == "" {
		d.Remote.CacheDir = filepath.Join(d.WorkDir, DefaultRemoteCache)
	}
	if d.Reports.URL != "" {
		if d.Reports.MaxBytes == 0 {
			d.Reports.MaxBytes = DefaultReportMaxBytes
		}
		if d.Reports.Retention == 0 {
			d.Reports.Retention = DefaultReportRetention
		}
	}
	if d.GitHub.AppID != 0 {
		if d.GitHub.APIURL == "" {
			d.GitHub.APIURL = DefaultGitHubAPI
		}
		if d.GitHub.WebURL == "" {
			d.GitHub.WebURL = DefaultGitHubWeb
		}
	}
	for name, cl := range d.Clusters {
		if cl.LiveMode == "" {
			cl.LiveMode = diffing.LiveSimulate
			d.Clusters[name] = cl
		}
	}
	q := &d.Queue
	if q.Driver == "" {
		q.Driver = DefaultDriver
	}
	if q.Driver == DefaultDriver && q.DSNFile == "" && !q.DSN.IsSet() {
		q.DSN = NewSecret(DefaultSQLiteDSN)
	}
	if q.Workers == 0 {
		q.Workers = DefaultWorkers
	}
	if q.JobTimeout == 0 {
		q.JobTimeout = DefaultJobTimeout
	}
	if q.RescueStuckAfter == 0 {
		q.RescueStuckAfter = q.JobTimeout + RescueMargin
	}
	if q.MaxAttempts == 0 {
		q.MaxAttempts = DefaultMaxAttempts
	}
	if q.SweepInterval == 0 {
		q.SweepInterval = DefaultSweepInterval
	}
	wa := &d.Watch
	if wa.Mode == "" {
		wa.Mode = WatchOn
	}
	if wa.Debounce == 0 {
		wa.Debounce = DefaultWatchDebounce
	}
	if wa.PollInterval == 0 {
		wa.PollInterval = DefaultWatchPollInterval
	}
	if wa.RepoPerMinute == 0 {
		wa.RepoPerMinute = DefaultWatchRepoPerMin
	}
	if wa.RepoBurst == 0 {
		wa.RepoBurst = DefaultWatchRepoBurst
	}
	return d
}

// ToValid fills the defaults (withDefaults), reads the secret files and checks
// everything, giving the typed Config the server runs with. Errors name the file
// and line (or say the setting came from the environment) and what to do; they
// never hold a secret.
func (r *Raw) ToValid() (*Config, error) {
	v := &validator{file: r.file, root: r.root}
	d := r.withDefaults()
	c := &Config{
		Listen:   d.Listen,
		Webhooks: d.Webhooks,
		Metrics:  Metrics{Listen: d.Metrics.Listen, BearerTokenFile: d.Metrics.BearerTokenFile},
		GitHub: GitHub{AppID: d.GitHub.AppID, PrivateKeyFile: d.GitHub.PrivateKeyFile, WebhookSecretFile: d.GitHub.WebhookSecretFile,
			APIURL: d.GitHub.APIURL, WebURL: d.GitHub.WebURL},
		GitLab:         GitLab{URL: d.GitLab.URL, TokenFile: d.GitLab.TokenFile, WebhookSecretFile: d.GitLab.WebhookSecretFile},
		Clusters:       d.Clusters,
		DefaultCluster: d.DefaultCluster,
		ArgoCDCluster:  d.ArgoCDCluster,
		ArgoCD:         d.ArgoCD,
		Queue: Queue{Driver: d.Queue.Driver, DSN: d.Queue.DSN, DSNFile: d.Queue.DSNFile, Workers: d.Queue.Workers,
			JobTimeout: d.Queue.JobTimeout, RescueStuckAfter: d.Queue.RescueStuckAfter, MaxAttempts: d.Queue.MaxAttempts,
			SweepInterval: d.Queue.SweepInterval},
		Repos:        d.Repos,
		AllowForkPRs: d.AllowForkPRs,
		WorkDir:      d.WorkDir,
		CheckoutDir:  d.CheckoutDir,
		LogLevel:     d.LogLevel,
		Remote:       d.Remote,
		Reports:      Reports{URL: d.Reports.URL, KeyFile: d.Reports.KeyFile, MaxBytes: d.Reports.MaxBytes, Retention: d.Reports.Retention},
		Watch:        d.Watch,
		Drift:        d.Drift,
		Warnings:     r.warnings,
	}
	if rp := &c.Reports; rp.URL != "" || hasAny(d.Reports) {
		u, err := url.Parse(rp.URL)
		switch {
		case rp.URL == "":
			v.add([]string{"reports", "url"}, "is needed for the other reports settings: the server's public URL (e.g. https://driftpreview.example.com) that links to report pages start with")
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
			v.add([]string{"reports", "url"}, "not an http(s) URL without query: %q", rp.URL)
		}
		if rp.MaxBytes < 0 {
			v.add([]string{"reports", "maxBytes"}, "must be positive, got %d", rp.MaxBytes)
		}
		if rp.Retention < 0 {
			v.add([]string{"reports", "retention"}, "must be positive, got %s", rp.Retention)
		}
		if rp.KeyFile != "" {
			if rp.Key = readSecret(v, "reports", "keyFile", rp.KeyFile, ""); rp.Key.IsSet() && len(rp.Key.Value()) < 16 {
				v.add([]string{"reports", "keyFile"}, "the key is shorter than 16 bytes; use e.g. `head -c 32 /dev/urandom | base64`")
			}
		}
	}
	switch dr := c.Drift; {
	case dr.Interval < 0:
		v.add([]string{"drift", "interval"}, "must be positive, got %s", dr.Interval)
	case dr.Interval > 0 && dr.Interval < time.Minute:
		v.add([]string{"drift", "interval"}, "%s is shorter than a minute: each run renders every target and reads the clusters; use e.g. 1h", dr.Interval)
	case dr.Interval > 0 && !dr.Enabled:
		v.add([]string{"drift", "interval"}, "is set but drift.enabled is false: set drift.enabled: true to run drift reports")
	}
	if c.Webhooks.MaxBodyBytes < 0 {
		v.add([]string{"webhooks", "maxBodyBytes"}, "must be positive, got %d", c.Webhooks.MaxBodyBytes)
	}
	if c.Webhooks.MaxConcurrent < 0 {
		v.add([]string{"webhooks", "maxConcurrent"}, "must be positive, got %d", c.Webhooks.MaxConcurrent)
	}
	switch m := &c.Metrics; m.Listen {
	case "off":
		if m.BearerTokenFile != "" {
			v.add([]string{"metrics", "bearerTokenFile"}, "is set but metrics.listen is off")
		}
	default:
		if _, port, err := net.SplitHostPort(m.Listen); err != nil {
			v.add([]string{"metrics", "listen"}, "not a host:port address (e.g. 127.0.0.1:9090), or off: %q", m.Listen)
		} else if _, webPort, err := net.SplitHostPort(c.Listen); err == nil && webPort == port {
			v.add([]string{"metrics", "listen"}, "must use another port than listen (%s): metrics are not served next to the webhooks", c.Listen)
		}
	}
	if c.Metrics.BearerTokenFile != "" {
		c.Metrics.BearerToken = readSecret(v, "metrics", "bearerTokenFile", c.Metrics.BearerTokenFile, "")
	}
	if err := c.Remote.Validate(); err != nil {
		field := "allow"
		if strings.HasPrefix(err.Error(), "remote.mode") {
			field = "mode"
		}
		v.add([]string{"remote", field}, "%v", err)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.add([]string{"logLevel"}, "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
	if !c.GitHub.Enabled() && !c.GitLab.Enabled() {
		if hasAny(r.GitHub) {
			v.add([]string{"github", "appID"}, "required: the GitHub App ID (or set %sGITHUB_APPID)", EnvPrefix)
		} else {
			v.errs = append(v.errs, fmt.Errorf("server config: no host to serve: configure github (appID, privateKeyFile, webhookSecretFile) and/or gitlab (url, tokenFile, webhookSecretFile)"))
		}
	}
	if c.GitHub.Enabled() {
		g := &c.GitHub
		g.WebhookSecret = readSecret(v, "github", "webhookSecretFile", g.WebhookSecretFile,
			"refusing to serve GitHub webhooks without a webhook secret: set github.webhookSecretFile (or %sGITHUB_WEBHOOKSECRETFILE) to a file holding the secret configured on the GitHub App")
		g.PrivateKey = readSecret(v, "github", "privateKeyFile", g.PrivateKeyFile,
			"required: the GitHub App's private key (PEM): set github.privateKeyFile (or %sGITHUB_PRIVATEKEYFILE)")
	}
	if c.GitLab.Enabled() {
		g := &c.GitLab
		g.WebhookSecret = readSecret(v, "gitlab", "webhookSecretFile", g.WebhookSecretFile,
			"refusing to serve GitLab webhooks without a webhook secret: set gitlab.webhookSecretFile (or %sGITLAB_WEBHOOKSECRETFILE) to a file holding the secret token of the project or group webhook")
		g.Token = readSecret(v, "gitlab", "tokenFile", g.TokenFile,
			"required: the bot user's API token: set gitlab.tokenFile (or %sGITLAB_TOKENFILE)")
	} else if hasAny(r.GitLab) {
		v.add([]string{"gitlab", "url"}, "required: the GitLab base URL, e.g. https://gitlab.com (or set %sGITLAB_URL)", EnvPrefix)
	}
	for _, name := range slices.Sorted(mapKeys(c.Clusters)) {
		if cl := c.Clusters[name]; !cl.LiveMode.Valid() {
			v.add([]string{"clusters", name, "liveMode"}, "unknown live mode %q (want simulate, dry-run or off)", cl.LiveMode)
		}
	}
	for _, name := range slices.Sorted(mapKeys(c.ArgoCD.Clusters)) {
		if c.ArgoCD.Clusters[name].Server == "" {
			v.add([]string{"argocd", "clusters", name, "server"}, "required: the cluster's API server URL, as in its Argo CD cluster Secret")
		}
	}
	for _, ref := range [][2]string{{"defaultCluster", c.DefaultCluster}, {"argocdCluster", c.ArgoCDCluster}} {
		if _, ok := c.Clusters[ref[1]]; ref[1] != "" && !ok {
			v.add([]string{ref[0]}, "cluster %q is not defined under clusters", ref[1])
		}
	}
	q := &c.Queue
	switch q.Driver {
	case "sqlite", "postgres":
	default:
		v.add([]string{"queue", "driver"}, "unknown driver %q (want sqlite or postgres)", q.Driver)
	}
	if q.DSNFile != "" {
		if q.DSN.IsSet() {
			v.add([]string{"queue", "dsnFile"}, "set either queue.dsn or queue.dsnFile, not both")
		}
		q.DSN = readSecret(v, "queue", "dsnFile", q.DSNFile, "")
	}
	if !q.DSN.IsSet() && q.Driver == "postgres" {
		v.add([]string{"queue", "dsn"}, "required for driver postgres: set queue.dsn or queue.dsnFile (or %sQUEUE_DSNFILE)", EnvPrefix)
	}
	if q.Workers < 0 {
		v.add([]string{"queue", "workers"}, "must be positive, got %d", q.Workers)
	}
	if q.JobTimeout < 0 {
		v.add([]string{"queue", "jobTimeout"}, "must be positive, got %s", q.JobTimeout)
	}
	if q.RescueStuckAfter <= q.JobTimeout {
		v.add([]string{"queue", "rescueStuckAfter"}, "must be longer than queue.jobTimeout (%s), or a job still running would be started twice", q.JobTimeout)
	}
	if q.MaxAttempts < 0 {
		v.add([]string{"queue", "maxAttempts"}, "must be positive, got %d", q.MaxAttempts)
	}
	if q.SweepInterval < 0 {
		v.add([]string{"queue", "sweepInterval"}, "must be positive, got %s", q.SweepInterval)
	}
	if wa := c.Watch; wa.Mode != WatchOn && wa.Mode != WatchOff {
		v.add([]string{"watch", "mode"}, "must be %s or %s, got %q", WatchOn, WatchOff, wa.Mode)
	}
	for _, d := range []struct {
		key string
		val time.Duration
	}{{"debounce", c.Watch.Debounce}, {"pollInterval", c.Watch.PollInterval}} {
		if d.val < 0 {
			v.add([]string{"watch", d.key}, "must be positive, got %s", d.val)
		}
	}
	if c.Watch.RepoPerMinute < 0 || c.Watch.RepoBurst < 0 {
		v.add([]string{"watch"}, "repoPerMinute and repoBurst must be positive, got %d and %d", c.Watch.RepoPerMinute, c.Watch.RepoBurst)
	}
	for i, p := range c.Repos {
		if !server.ValidRepoGlob(p) {
			v.add([]string{"repos"}, "entry %d %q is not a valid glob (path.Match syntax, e.g. acme/*)", i+1, p)
		}
	}
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// readSecret reads a secret file; missing says what to do when the path is empty.
func readSecret(v *validator, section, key, file, missing string) Secret {
	keys := []string{section, key}
	if file == "" {
		if missing != "" {
			v.add(keys, missing, EnvPrefix)
		}
		return Secret{}
	}
	data, err := os.ReadFile(filepath.Clean(file))
	if err != nil {
		// The error names the path only; the content is never read into a message.
		v.add(keys, "reading secret file: %v", err)
		return Secret{}
	}
	s := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(s) == "" {
		v.add(keys, "secret file %s is empty", file)
		return Secret{}
	}
	return Secret{v: s}
}

func hasAny(v any) bool { return !reflect.ValueOf(v).IsZero() }

// AllowsRepo reports whether repo matches the allowlist (empty allows all).
func (c *Config) AllowsRepo(repo string) bool {
	return MatchRepo(c.Repos, repo)
}

// MatchRepo reports whether repo matches one of the path.Match globs; an empty list
// matches everything (server.MatchRepo, which the webhook handler applies).
func MatchRepo(globs []string, repo string) bool { return server.MatchRepo(globs, repo) }
