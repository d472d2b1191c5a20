package serverconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
)

// TestToValid: raw → valid, with every default filled in one place (withDefaults)
// and set values kept, and the errors of a Raw built without a file.
func TestToValid(t *testing.T) {
	files := secrets(t)
	gitlab := RawGitLab{URL: "https://gitlab.example", TokenFile: files["gl-token"], WebhookSecretFile: files["gl-webhook"]}
	validGitLab := GitLab{URL: "https://gitlab.example", TokenFile: files["gl-token"], WebhookSecretFile: files["gl-webhook"],
		Token: NewSecret(glToken), WebhookSecret: NewSecret(glSecret)}
	// defaults is the Config of a Raw that sets nothing but GitLab.
	defaults := func() *Config {
		return &Config{
			Listen:   ":8080",
			Webhooks: Webhooks{MaxBodyBytes: 10 << 20, MaxConcurrent: 8},
			Metrics:  Metrics{Listen: "127.0.0.1:9090"},
			GitLab:   validGitLab,
			Queue: Queue{Driver: "sqlite", DSN: NewSecret("/var/lib/driftpreview/queue.db"), Workers: 2, JobTimeout: 10 * time.Minute,
				RescueStuckAfter: 15 * time.Minute, MaxAttempts: 5, SweepInterval: time.Minute},
			WorkDir:  "/var/lib/driftpreview/mirrors",
			LogLevel: "info",
			Remote:   remote.Policy{Mode: remote.ModePublic, CacheDir: "/var/lib/driftpreview/mirrors/remote-cache"},
			Watch:    Watch{Mode: "watch", Debounce: 5 * time.Second, PollInterval: 5 * time.Minute, RepoPerMinute: 30, RepoBurst: 10},
		}
	}
	tests := []struct {
		name    string
		raw     Raw
		want    func(c *Config)
		wantErr []string
	}{
		{name: "every default", raw: Raw{GitLab: gitlab}, want: func(*Config) {}},
		{
			name: "github gets github.com's URLs",
			raw:  Raw{GitHub: RawGitHub{AppID: 7, PrivateKeyFile: files["app.pem"], WebhookSecretFile: files["gh-webhook"]}},
			want: func(c *Config) {
				c.GitLab = GitLab{}
				c.GitHub = GitHub{AppID: 7, PrivateKeyFile: files["app.pem"], WebhookSecretFile: files["gh-webhook"],
					APIURL: "https://api.github.com/", WebURL: "https://github.com", PrivateKey: NewSecret(ghKey), WebhookSecret: NewSecret(ghSecret)}
			},
		},
		{
			name: "the remote cache lives under the work dir",
			raw:  Raw{GitLab: gitlab, WorkDir: "/srv/dp", Remote: remote.Policy{Allow: []remote.Prefix{{URL: "https://charts.example.com/"}}}},
			want: func(c *Config) {
				c.WorkDir = "/srv/dp"
				c.Remote = remote.Policy{Mode: remote.ModePublic, Allow: []remote.Prefix{{URL: "https://charts.example.com/"}}, CacheDir: "/srv/dp/remote-cache"}
			},
		},
		{
			name: "remote sources off need no cache",
			raw:  Raw{GitLab: gitlab, Remote: remote.Policy{Mode: remote.ModeOff}},
			want: func(c *Config) { c.Remote = remote.Policy{Mode: remote.ModeOff} },
		},
		{
			name: "clusters simulate by default; rescue follows the job timeout",
			raw: Raw{GitLab: gitlab, Clusters: map[string]Cluster{"prod": {Kubeconfig: "/k"}, "dev": {LiveMode: diffing.LiveOff}},
				Queue: RawQueue{JobTimeout: 20 * time.Minute}},
			want: func(c *Config) {
				c.Clusters = map[string]Cluster{"prod": {Kubeconfig: "/k", LiveMode: diffing.LiveSimulate}, "dev": {LiveMode: diffing.LiveOff}}
				c.Queue.JobTimeout, c.Queue.RescueStuckAfter = 20*time.Minute, 25*time.Minute
			},
		},
		{
			name: "set values are kept",
			raw: Raw{GitLab: gitlab, Listen: ":9000", LogLevel: "debug", Webhooks: Webhooks{MaxBodyBytes: 1 << 20, MaxConcurrent: 3},
				Metrics: RawMetrics{Listen: "off"}, Queue: RawQueue{Driver: "postgres", DSN: NewSecret(pgDSN), Workers: 4, MaxAttempts: 2, SweepInterval: time.Hour}},
			want: func(c *Config) {
				c.Listen, c.LogLevel, c.Webhooks, c.Metrics = ":9000", "debug", Webhooks{MaxBodyBytes: 1 << 20, MaxConcurrent: 3}, Metrics{Listen: "off"}
				c.Queue = Queue{Driver: "postgres", DSN: NewSecret(pgDSN), Workers: 4, JobTimeout: 10 * time.Minute, RescueStuckAfter: 15 * time.Minute,
					MaxAttempts: 2, SweepInterval: time.Hour}
			},
		},
		{
			name: "postgres gets no SQLite default",
			raw:  Raw{GitLab: gitlab, Queue: RawQueue{Driver: "postgres", Workers: -1}},
			wantErr: []string{"server config: queue.dsn: required for driver postgres",
				"server config: queue.workers: must be positive, got -1"},
		},
		{
			name:    "no host",
			raw:     Raw{},
			wantErr: []string{"server config: no host to serve"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cmp.Diff(Raw{}, tt.raw, cmp.AllowUnexported(Raw{}, Secret{}))
			got, err := tt.raw.ToValid()
			if after := cmp.Diff(Raw{}, tt.raw, cmp.AllowUnexported(Raw{}, Secret{})); after != before {
				t.Errorf("ToValid changed the Raw it was given")
			}
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ToValid: no error, want %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not contain %q:\n%v", w, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ToValid: %v", err)
			}
			want := defaults()
			tt.want(want)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(Secret{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ToValid (-want +got):\n%s", diff)
			}
		})
	}
}
