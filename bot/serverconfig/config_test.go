package serverconfig

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/driftpreview/driftpreview/render/remote"
)

const (
	ghSecret = "gh-hook-s3cret-value"
	glSecret = "gl-hook-s3cret-value"
	ghKey    = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----"
	glToken  = "glpat-t0ken-value"
	pgDSN    = "postgres://bot:pa55word@db/driftpreview"
)

// secrets writes the secret files into dir and returns their paths by name.
func secrets(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"gh-webhook": ghSecret + "\n", "app.pem": ghKey + "\n", "gl-webhook": glSecret, "gl-token": glToken + "\r\n", "dsn": pgDSN, "empty": "\n"}
	out := map[string]string{}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	return out
}

// expand replaces {name} with the secret file paths.
func expand(s string, files map[string]string) string {
	for name, p := range files {
		s = strings.ReplaceAll(s, "{"+name+"}", p)
	}
	return s
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const fullConfig = `listen: ":9000"
github: {appID: 12345, privateKeyFile: {app.pem}, webhookSecretFile: {gh-webhook}, apiURL: https://ghe.example/api/v3/, webURL: https://ghe.example}
gitlab: {url: https://gitlab.com, tokenFile: {gl-token}, webhookSecretFile: {gl-webhook}}
clusters: {prod: {kubeconfig: /etc/kube/prod.yaml, context: prod, liveMode: simulate}, staging: {kubeconfig: /etc/kube/st.yaml}}
defaultCluster: prod
queue: {driver: sqlite, dsn: /var/lib/driftpreview/queue.db}
repos: ["acme/*"]
allowForkPRs: false
workDir: /var/lib/driftpreview/mirrors
`

func TestLoad(t *testing.T) {
	files := secrets(t)
	tests := []struct {
		name string
		yaml string
		env  []string
		want func(c *Config)
	}{
		{
			name: "full file",
			yaml: fullConfig,
			want: func(c *Config) {},
		},
		{
			name: "argocd clusters",
			yaml: fullConfig + "argocd:\n  clusters:\n    prod-eu: {server: https://eu.example.com, project: shop, labels: {env: prod}}\n",
			env:  []string{"DRIFTPREVIEW_ARGOCD_CLUSTERS_PROD-EU_PROJECT=fleet"},
			want: func(c *Config) {
				c.ArgoCD.Clusters = map[string]ArgoCDCluster{"prod-eu": {Server: "https://eu.example.com", Project: "fleet", Labels: map[string]string{"env": "prod"}}}
			},
		},
		{
			name: "env overrides file",
			yaml: fullConfig,
			env: []string{
				"DRIFTPREVIEW_LISTEN=:7000",
				"DRIFTPREVIEW_GITHUB_APPID=777",
				"DRIFTPREVIEW_QUEUE_DRIVER=postgres",
				"DRIFTPREVIEW_QUEUE_DSNFILE={dsn}",
				"DRIFTPREVIEW_QUEUE_DSN=",
				"DRIFTPREVIEW_QUEUE_JOBTIMEOUT=2m",
				"DRIFTPREVIEW_QUEUE_SWEEPINTERVAL=15s",
				"DRIFTPREVIEW_REPOS=acme/*, other/x",
				"DRIFTPREVIEW_ALLOWFORKPRS=true",
				"DRIFTPREVIEW_CHECKOUTDIR=/var/tmp/checkouts",
				"DRIFTPREVIEW_CLUSTERS_PROD_CONTEXT=prod-admin",
				"DRIFTPREVIEW_CLUSTERS_EU_KUBECONFIG=/etc/kube/eu.yaml",
				"DRIFTPREVIEW_CLUSTERS_EU_LIVEMODE=dry-run",
				"HOME=/root",
			},
			want: func(c *Config) {
				c.Listen = ":7000"
				c.GitHub.AppID = 777
				c.Queue.Driver = "postgres"
				c.Queue.DSNFile = files["dsn"]
				c.Queue.DSN = NewSecret(pgDSN)
				c.Queue.JobTimeout = 2 * time.Minute
				c.Queue.RescueStuckAfter = 7 * time.Minute
				c.Queue.SweepInterval = 15 * time.Second
				c.Repos = []string{"acme/*", "other/x"}
				c.AllowForkPRs = true
				c.CheckoutDir = "/var/tmp/checkouts"
				c.Clusters["prod"] = Cluster{Kubeconfig: "/etc/kube/prod.yaml", Context: "prod-admin", LiveMode: "simulate"}
				c.Clusters["eu"] = Cluster{Kubeconfig: "/etc/kube/eu.yaml", LiveMode: "dry-run"}
			},
		},
		{
			name: "every queue key",
			yaml: strings.Replace(fullConfig, "queue: {driver: sqlite, dsn: /var/lib/driftpreview/queue.db}",
				"queue: {driver: sqlite, dsn: /var/lib/driftpreview/queue.db, workers: 4, jobTimeout: 5m, rescueStuckAfter: 6m, maxAttempts: 3, sweepInterval: 30s}", 1),
			want: func(c *Config) {
				c.Queue.Workers, c.Queue.JobTimeout, c.Queue.RescueStuckAfter = 4, 5*time.Minute, 6*time.Minute
				c.Queue.MaxAttempts, c.Queue.SweepInterval = 3, 30*time.Second
			},
		},
		{
			name: "intake and metrics keys",
			yaml: fullConfig + "webhooks: {maxBodyBytes: 1048576, maxConcurrent: 3}\nmetrics: {listen: \"0.0.0.0:9100\", bearerTokenFile: {gl-token}}\n",
			env:  []string{"DRIFTPREVIEW_WEBHOOKS_MAXCONCURRENT=4"},
			want: func(c *Config) {
				c.Webhooks = Webhooks{MaxBodyBytes: 1 << 20, MaxConcurrent: 4}
				c.Metrics = Metrics{Listen: "0.0.0.0:9100", BearerTokenFile: files["gl-token"], BearerToken: NewSecret(glToken)}
			},
		},
		{
			name: "drift report",
			yaml: fullConfig + "drift: {enabled: true, interval: 6h}\n",
			env:  []string{"DRIFTPREVIEW_DRIFT_INTERVAL=2h"},
			want: func(c *Config) { c.Drift = Drift{Enabled: true, Interval: 2 * time.Hour} },
		},
		{
			name: "metrics off",
			yaml: fullConfig + "metrics: {listen: \"off\"}\n",
			want: func(c *Config) { c.Metrics = Metrics{Listen: "off"} },
		},
		{
			name: "environment only",
			env: []string{
				"DRIFTPREVIEW_GITLAB_URL=https://gitlab.example",
				"DRIFTPREVIEW_GITLAB_TOKENFILE={gl-token}",
				"DRIFTPREVIEW_GITLAB_WEBHOOKSECRETFILE={gl-webhook}",
				"DRIFTPREVIEW_NOSUCHTHING=1",
			},
			want: func(c *Config) {
				*c = Config{
					Listen:   DefaultListen,
					Webhooks: Webhooks{MaxBodyBytes: DefaultMaxBodyBytes, MaxConcurrent: DefaultMaxConcurrent},
					Metrics:  Metrics{Listen: DefaultMetricsListen},
					GitLab:   GitLab{URL: "https://gitlab.example", TokenFile: files["gl-token"], WebhookSecretFile: files["gl-webhook"], Token: NewSecret(glToken), WebhookSecret: NewSecret(glSecret)},
					Queue:    Queue{Driver: "sqlite", DSN: NewSecret(DefaultSQLiteDSN), Workers: DefaultWorkers, JobTimeout: DefaultJobTimeout, RescueStuckAfter: DefaultJobTimeout + 5*time.Minute, MaxAttempts: DefaultMaxAttempts, SweepInterval: DefaultSweepInterval},
					Watch:    defaultWatch,
					WorkDir:  DefaultWorkDir,
					LogLevel: "info",
					Remote:   remote.Policy{Mode: remote.ModePublic, CacheDir: filepath.Join(DefaultWorkDir, "remote-cache")},
					Warnings: []string{"ignoring unknown environment variable DRIFTPREVIEW_NOSUCHTHING (not a server.yaml setting)"},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.yaml != "" {
				path = writeConfig(t, expand(tt.yaml, files))
			}
			var env []string
			for _, e := range tt.env {
				env = append(env, expand(e, files))
			}
			got, err := Load(path, env)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := &Config{
				Listen:   ":9000",
				Webhooks: Webhooks{MaxBodyBytes: DefaultMaxBodyBytes, MaxConcurrent: DefaultMaxConcurrent},
				Metrics:  Metrics{Listen: DefaultMetricsListen},
				GitHub: GitHub{AppID: 12345, PrivateKeyFile: files["app.pem"], WebhookSecretFile: files["gh-webhook"],
					APIURL: "https://ghe.example/api/v3/", WebURL: "https://ghe.example", PrivateKey: NewSecret(ghKey), WebhookSecret: NewSecret(ghSecret)},
				GitLab: GitLab{URL: "https://gitlab.com", TokenFile: files["gl-token"], WebhookSecretFile: files["gl-webhook"], Token: NewSecret(glToken), WebhookSecret: NewSecret(glSecret)},
				Clusters: map[string]Cluster{
					"prod":    {Kubeconfig: "/etc/kube/prod.yaml", Context: "prod", LiveMode: "simulate"},
					"staging": {Kubeconfig: "/etc/kube/st.yaml", LiveMode: "simulate"},
				},
				DefaultCluster: "prod",
				Queue:          Queue{Driver: "sqlite", DSN: NewSecret("/var/lib/driftpreview/queue.db"), Workers: DefaultWorkers, JobTimeout: DefaultJobTimeout, RescueStuckAfter: DefaultJobTimeout + 5*time.Minute, MaxAttempts: DefaultMaxAttempts, SweepInterval: DefaultSweepInterval},
				Watch:          defaultWatch,
				Repos:          []string{"acme/*"},
				WorkDir:        "/var/lib/driftpreview/mirrors",
				LogLevel:       "info",
				// remote.mode public is the default (README "Remote sources"), with
				// its cache under the work directory.
				Remote: remote.Policy{Mode: remote.ModePublic, CacheDir: "/var/lib/driftpreview/mirrors/remote-cache"},
			}
			tt.want(want)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Secret{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Load (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	files := secrets(t)
	tests := []struct {
		name string
		yaml string
		env  []string
		want []string // substrings of the error
	}{
		{
			name: "unknown key names line",
			yaml: "listen: \":1\"\ngithub:\n  appID: 1\n  privateKeyFile: {app.pem}\n  webhookSecretFile: {gh-webhook}\n  webhookSecert: x\n",
			want: []string{"server.yaml:6: unknown key \"webhookSecert\""},
		},
		{
			name: "unknown top-level key",
			yaml: fullConfig + "queueu: {}\n",
			want: []string{"server.yaml:10: unknown key \"queueu\""},
		},
		{
			name: "misspelt queue key",
			yaml: strings.Replace(fullConfig, "queue.db}", "queue.db, sweepIntervall: 1m}", 1),
			want: []string{"server.yaml:6: unknown key \"sweepIntervall\""},
		},
		{
			name: "argocd cluster without server",
			yaml: "argocd:\n  clusters:\n    prod: {labels: {env: prod}}\n",
			want: []string{"argocd.clusters.prod.server: required: the cluster's API server URL"},
		},
		{
			name: "drift interval without drift",
			yaml: fullConfig + "drift:\n  interval: 1h\n",
			want: []string{"server.yaml:11: drift.interval: is set but drift.enabled is false"},
		},
		{
			name: "drift interval too short",
			yaml: fullConfig + "drift: {enabled: true, interval: 10s}\n",
			want: []string{"drift.interval: 10s is shorter than a minute"},
		},
		{
			name: "bad type",
			yaml: "github: {appID: twelve}\n",
			want: []string{"server.yaml:1: cannot unmarshal"},
		},
		{
			name: "github without webhook secret",
			yaml: "github: {appID: 1, privateKeyFile: {app.pem}}\n",
			want: []string{"server.yaml:1: github.webhookSecretFile: refusing to serve GitHub webhooks without a webhook secret", "DRIFTPREVIEW_GITHUB_WEBHOOKSECRETFILE"},
		},
		{
			name: "gitlab without webhook secret",
			yaml: "gitlab: {url: https://gitlab.com, tokenFile: {gl-token}}\n",
			want: []string{"gitlab.webhookSecretFile: refusing to serve GitLab webhooks without a webhook secret"},
		},
		{
			name: "gitlab webhook secret file missing",
			yaml: "gitlab: {url: https://gitlab.com, tokenFile: {gl-token}, webhookSecretFile: /nonexistent/secret}\n",
			want: []string{"server.yaml:1: gitlab.webhookSecretFile: reading secret file: open /nonexistent/secret: no such file or directory"},
		},
		{
			name: "empty secret file",
			yaml: "gitlab: {url: https://gitlab.com, tokenFile: {gl-token}, webhookSecretFile: {empty}}\n",
			want: []string{"is empty"},
		},
		{
			name: "no host",
			yaml: "listen: \":1\"\n",
			want: []string{"no host to serve"},
		},
		{
			name: "bad values",
			yaml: fullConfig + "logLevel: loud\n",
			env:  []string{"DRIFTPREVIEW_CLUSTERS_PROD_LIVEMODE=apply", "DRIFTPREVIEW_QUEUE_DRIVER=mysql", "DRIFTPREVIEW_QUEUE_WORKERS=x", "DRIFTPREVIEW_REPOS=acme/[", "DRIFTPREVIEW_DEFAULTCLUSTER=nope"},
			want: []string{"DRIFTPREVIEW_QUEUE_WORKERS: not an integer"},
		},
		{
			name: "bad values after env",
			yaml: fullConfig + "logLevel: loud\n",
			env:  []string{"DRIFTPREVIEW_CLUSTERS_PROD_LIVEMODE=apply", "DRIFTPREVIEW_QUEUE_DRIVER=mysql", "DRIFTPREVIEW_REPOS=acme/[", "DRIFTPREVIEW_DEFAULTCLUSTER=nope", "DRIFTPREVIEW_ARGOCDCLUSTER=gone", "DRIFTPREVIEW_QUEUE_RESCUESTUCKAFTER=1m", "DRIFTPREVIEW_QUEUE_SWEEPINTERVAL=-1s"},
			want: []string{
				"server.yaml:10: logLevel: unknown level \"loud\"",
				"server.yaml:4: clusters.prod.liveMode: unknown live mode \"apply\"",
				"server.yaml:6: queue.driver: unknown driver \"mysql\"",
				"repos: entry 1 \"acme/[\" is not a valid glob",
				"defaultCluster: cluster \"nope\" is not defined",
				"argocdCluster: cluster \"gone\" is not defined",
				"queue.rescueStuckAfter: must be longer than queue.jobTimeout",
				"server.yaml:6: queue.sweepInterval: must be positive, got -1s",
			},
		},
		{
			name: "bad intake and metrics values",
			yaml: fullConfig + "webhooks: {maxBodyBytes: -1, maxConcurrent: -2}\nmetrics: {listen: \"127.0.0.1:9000\"}\n",
			want: []string{
				"server.yaml:10: webhooks.maxBodyBytes: must be positive, got -1",
				"server.yaml:10: webhooks.maxConcurrent: must be positive, got -2",
				"server.yaml:11: metrics.listen: must use another port than listen (:9000)",
			},
		},
		{
			name: "metrics token file missing",
			yaml: fullConfig + "metrics: {bearerTokenFile: /nonexistent/token}\n",
			want: []string{"server.yaml:10: metrics.bearerTokenFile: reading secret file"},
		},
		{
			name: "postgres without dsn",
			yaml: "gitlab: {url: https://gitlab.com, tokenFile: {gl-token}, webhookSecretFile: {gl-webhook}}\nqueue: {driver: postgres}\n",
			want: []string{"server.yaml:2: queue.dsn: required for driver postgres"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeConfig(t, expand(tt.yaml, files))
			_, err := Load(path, tt.env)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+"/", "")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
			}
			for _, s := range []string{ghSecret, glSecret, ghKey, glToken, "pa55word"} {
				if strings.Contains(msg, s) {
					t.Errorf("error leaks a secret: %s", msg)
				}
			}
		})
	}
}

// TestSecretsNeverPrint formats a loaded config every way a careless caller might.
func TestSecretsNeverPrint(t *testing.T) {
	files := secrets(t)
	cfg, err := Load(writeConfig(t, expand(fullConfig, files)), []string{"DRIFTPREVIEW_QUEUE_DRIVER=postgres", "DRIFTPREVIEW_QUEUE_DSN=" + pgDSN})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.WebhookSecret.Value() != ghSecret || cfg.Queue.DSN.Value() != pgDSN {
		t.Fatalf("secrets not loaded: %q %q", cfg.GitHub.WebhookSecret.Value(), cfg.Queue.DSN.Value())
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "cfg", cfg, "secret", cfg.GitHub.WebhookSecret)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg, "queue", cfg.Queue)
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{
		"%v":    fmt.Sprintf("%v", cfg),
		"%+v":   fmt.Sprintf("%+v", *cfg),
		"%#v":   fmt.Sprintf("%#v", *cfg),
		"%s %q": fmt.Sprintf("%s %q", cfg.GitLab.Token, cfg.GitLab.Token),
		"json":  string(js),
		"slog":  logged.String(),
	}
	for how, out := range outputs {
		for _, s := range []string{ghSecret, glSecret, "BEGIN RSA", glToken, "pa55word"} {
			if strings.Contains(out, s) {
				t.Errorf("%s output leaks a secret (%q):\n%s", how, s, out)
			}
		}
		if !strings.Contains(out, "[redacted]") {
			t.Errorf("%s output does not show [redacted]:\n%s", how, out)
		}
	}
}

func TestMatchRepo(t *testing.T) {
	tests := []struct {
		globs []string
		repo  string
		want  bool
	}{
		{nil, "anyone/anything", true},
		{[]string{"acme/*"}, "acme/shop", true},
		{[]string{"acme/*"}, "acme/group/shop", false},
		{[]string{"acme/*"}, "evil/shop", false},
		{[]string{"acme/*", "group/*/*"}, "group/sub/proj", true},
	}
	for _, tt := range tests {
		if got := MatchRepo(tt.globs, tt.repo); got != tt.want {
			t.Errorf("MatchRepo(%q, %q) = %v, want %v", tt.globs, tt.repo, got, tt.want)
		}
	}
}

// defaultWatch is the watch block's defaults (issue 26).
var defaultWatch = Watch{Mode: WatchOn, Debounce: DefaultWatchDebounce, PollInterval: DefaultWatchPollInterval,
	RepoPerMinute: DefaultWatchRepoPerMin, RepoBurst: DefaultWatchRepoBurst}
