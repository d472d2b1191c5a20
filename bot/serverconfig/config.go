package serverconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render/remote"
)

// EnvPrefix starts every environment override: DRIFTPREVIEW_<PATH>, the YAML path
// upper-cased and joined with underscores.
const EnvPrefix = "DRIFTPREVIEW_"

// Config is server.yaml after defaults, environment overrides and secret files.
type Config struct {
	// Listen is the HTTP address of webhooks and health (default ":8080").
	Listen string `yaml:"listen"`
	// Webhooks bounds webhook intake.
	Webhooks Webhooks `yaml:"webhooks"`
	// Metrics is where Prometheus metrics are served: not on Listen, since they name
	// repositories and targets.
	Metrics Metrics `yaml:"metrics"`
	GitHub  GitHub  `yaml:"github"`
	GitLab  GitLab  `yaml:"gitlab"`
	// Clusters maps the cluster names used by .driftpreview.yaml to credentials;
	// credentials never come from a repository.
	Clusters map[string]Cluster `yaml:"clusters"`
	// DefaultCluster is the cluster of targets that name none; empty means such
	// targets get no live comparison.
	DefaultCluster string `yaml:"defaultCluster"`
	// ArgoCDCluster is the cluster Argo CD itself runs in (hub and spoke), where
	// Applications are read; empty means Argo CD runs in each in-cluster destination.
	ArgoCDCluster string `yaml:"argocdCluster"`
	// ArgoCD configures how previews see Argo CD itself.
	ArgoCD ArgoCD `yaml:"argocd"`
	Queue  Queue  `yaml:"queue"`
	// Repos is an allowlist of path.Match globs over owner/name ("acme/*"); empty
	// allows every repository that can deliver a signed webhook.
	Repos []string `yaml:"repos"`
	// AllowForkPRs renders pull requests from forks; off by default because a fork's
	// head is untrusted input that would be rendered with the server's credentials.
	AllowForkPRs bool `yaml:"allowForkPRs"`
	// WorkDir holds one bare git mirror per repository.
	WorkDir string `yaml:"workDir"`
	// LogLevel is debug, info (default), warn or error.
	LogLevel string `yaml:"logLevel"`
	// Remote says which remote sources (Helm repositories) previews may fetch:
	// allowed URL prefixes, credentials per prefix from files, timeouts, size
	// caps and the cache (default <workDir>/remote-cache). Empty allows nothing.
	Remote remote.Policy `yaml:"remote"`

	// Warnings are non-fatal remarks found while loading (an unknown DRIFTPREVIEW_
	// variable), for the caller to log.
	Warnings []string `yaml:"-"`
}

// Webhooks bounds what webhook deliveries may cost.
type Webhooks struct {
	// MaxBodyBytes caps a delivery's body; larger ones get 413 (default 10 MiB).
	MaxBodyBytes int64 `yaml:"maxBodyBytes"`
	// MaxConcurrent is how many deliveries are received at once; more wait a second
	// and then get 503 with Retry-After (default 8).
	MaxConcurrent int `yaml:"maxConcurrent"`
}

// Metrics configures the metrics listener.
type Metrics struct {
	// Listen is the address of GET /metrics (default "127.0.0.1:9090", loopback
	// only); "off" disables it.
	Listen string `yaml:"listen"`
	// BearerTokenFile, when set, holds a token every scrape must send as
	// "Authorization: Bearer <token>".
	BearerTokenFile string `yaml:"bearerTokenFile"`

	// BearerToken is read from BearerTokenFile.
	BearerToken Secret `yaml:"-"`
}

// GitHub configures the GitHub App; the host is served when AppID is set.
type GitHub struct {
	AppID             int64  `yaml:"appID"`
	PrivateKeyFile    string `yaml:"privateKeyFile"`
	WebhookSecretFile string `yaml:"webhookSecretFile"`
	APIURL            string `yaml:"apiURL"`
	WebURL            string `yaml:"webURL"`

	// PrivateKey and WebhookSecret are read from the files above.
	PrivateKey    Secret `yaml:"-"`
	WebhookSecret Secret `yaml:"-"`
}

// Enabled reports whether GitHub webhooks are served.
func (g GitHub) Enabled() bool { return g.AppID != 0 }

// GitLab configures the GitLab bot user; the host is served when URL is set.
type GitLab struct {
	URL               string `yaml:"url"`
	TokenFile         string `yaml:"tokenFile"`
	WebhookSecretFile string `yaml:"webhookSecretFile"`

	// Token and WebhookSecret are read from the files above.
	Token         Secret `yaml:"-"`
	WebhookSecret Secret `yaml:"-"`
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
	Driver string `yaml:"driver"`
	// DSN is the SQLite file or the Postgres connection string. It may hold a
	// password, so it is a Secret; DSNFile reads it from a file instead.
	DSN     Secret `yaml:"dsn"`
	DSNFile string `yaml:"dsnFile"`
	// Workers is how many previews run at once in this process (default 2).
	Workers int `yaml:"workers"`
	// JobTimeout cancels one attempt of a preview (default 10m).
	JobTimeout time.Duration `yaml:"jobTimeout"`
	// RescueStuckAfter is when a running job whose process died is run again
	// (default JobTimeout + 5m; must exceed JobTimeout).
	RescueStuckAfter time.Duration `yaml:"rescueStuckAfter"`
	// MaxAttempts bounds retries with exponential backoff (default 5).
	MaxAttempts int `yaml:"maxAttempts"`
	// SweepInterval is how often a check or status left in progress by a job killed
	// on its last attempt is completed as an error (default 1m).
	SweepInterval time.Duration `yaml:"sweepInterval"`
}

// Defaults of server.yaml.
const (
	DefaultListen = ":8080"
	// DefaultMetricsListen keeps metrics on loopback unless configured otherwise.
	DefaultMetricsListen = "127.0.0.1:9090"
	// DefaultMaxBodyBytes matches server.MaxBodyBytes.
	DefaultMaxBodyBytes = 10 << 20
	// DefaultMaxConcurrent matches server.MaxConcurrent.
	DefaultMaxConcurrent = 8
	DefaultWorkDir       = "/var/lib/driftpreview/mirrors"
	DefaultSQLiteDSN     = "/var/lib/driftpreview/queue.db"
	DefaultGitHubAPI     = "https://api.github.com/"
	DefaultGitHubWeb     = "https://github.com"
	DefaultWorkers       = 2
	DefaultJobTimeout    = 10 * time.Minute
	DefaultMaxAttempts   = 5
	// DefaultSweepInterval matches server.DefaultSweepInterval.
	DefaultSweepInterval = time.Minute
)

// Load reads the file at path (which may be empty to configure only from the
// environment), applies the DRIFTPREVIEW_ variables of environ (os.Environ() in
// production), reads the secret files, fills defaults and validates. Errors name the
// file and line, or the variable, and say what to do; they never hold a secret.
func Load(file string, environ []string) (*Config, error) {
	cfg := &Config{}
	var root *yaml.Node
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading server config: %w", err)
		}
		root, err = parse(file, data, cfg)
		if err != nil {
			return nil, err
		}
	}
	if err := applyEnv(cfg, environ); err != nil {
		return nil, err
	}
	v := validator{file: file, root: root}
	if err := cfg.finish(&v); err != nil {
		return nil, err
	}
	return cfg, nil
}

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)

// parse decodes strictly and rewrites yaml's errors into "file:line: …" form.
func parse(file string, data []byte, cfg *Config) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, cleanYAMLError(err))
	}
	if len(root.Content) == 0 {
		return &root, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	if err == nil || errors.Is(err, io.EOF) {
		return &root, nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, 0, len(te.Errors))
		for _, e := range te.Errors {
			if m := unknownField.FindStringSubmatch(e); m != nil {
				msgs = append(msgs, fmt.Sprintf("%s:%s: unknown key %q (check its spelling and indentation)", file, m[1], m[2]))
				continue
			}
			msgs = append(msgs, file+":"+strings.TrimPrefix(e, "line "))
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	return nil, fmt.Errorf("%s: %w", file, cleanYAMLError(err))
}

func cleanYAMLError(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}

// validator names where a bad value came from: a line of the file or a variable.
type validator struct {
	file string
	root *yaml.Node
	errs []error
}

func (v *validator) add(keys []string, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	dotted := strings.Join(keys, ".")
	if line := lineOf(v.root, keys); line > 0 {
		v.errs = append(v.errs, fmt.Errorf("%s:%d: %s: %s", v.file, line, dotted, msg))
		return
	}
	v.errs = append(v.errs, fmt.Errorf("server config: %s: %s", dotted, msg))
}

// lineOf finds the line of a key path in the parsed document, or 0.
func lineOf(root *yaml.Node, keys []string) int {
	if root == nil || len(root.Content) == 0 {
		return 0
	}
	n := root.Content[0]
	line := 0
	for _, k := range keys {
		if n.Kind != yaml.MappingNode {
			return line
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				line, n, found = n.Content[i].Line, n.Content[i+1], true
				break
			}
		}
		if !found {
			return line
		}
	}
	return line
}

func (c *Config) finish(v *validator) error {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.WorkDir == "" {
		c.WorkDir = DefaultWorkDir
	}
	if c.Webhooks.MaxBodyBytes == 0 {
		c.Webhooks.MaxBodyBytes = DefaultMaxBodyBytes
	} else if c.Webhooks.MaxBodyBytes < 0 {
		v.add([]string{"webhooks", "maxBodyBytes"}, "must be positive, got %d", c.Webhooks.MaxBodyBytes)
	}
	if c.Webhooks.MaxConcurrent == 0 {
		c.Webhooks.MaxConcurrent = DefaultMaxConcurrent
	} else if c.Webhooks.MaxConcurrent < 0 {
		v.add([]string{"webhooks", "maxConcurrent"}, "must be positive, got %d", c.Webhooks.MaxConcurrent)
	}
	switch m := &c.Metrics; m.Listen {
	case "":
		m.Listen = DefaultMetricsListen
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
		v.add([]string{"remote", "allow"}, "%v", err)
	}
	switch c.LogLevel {
	case "":
		c.LogLevel = "info"
	case "debug", "info", "warn", "error":
	default:
		v.add([]string{"logLevel"}, "unknown level %q (want debug, info, warn or error)", c.LogLevel)
	}
	if !c.GitHub.Enabled() && !c.GitLab.Enabled() {
		if hasAny(c.GitHub) {
			v.add([]string{"github", "appID"}, "required: the GitHub App ID (or set %sGITHUB_APPID)", EnvPrefix)
		} else {
			v.errs = append(v.errs, fmt.Errorf("server config: no host to serve: configure github (appID, privateKeyFile, webhookSecretFile) and/or gitlab (url, tokenFile, webhookSecretFile)"))
		}
	}
	if c.GitHub.Enabled() {
		g := &c.GitHub
		if g.APIURL == "" {
			g.APIURL = DefaultGitHubAPI
		}
		if g.WebURL == "" {
			g.WebURL = DefaultGitHubWeb
		}
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
	} else if hasAny(c.GitLab) {
		v.add([]string{"gitlab", "url"}, "required: the GitLab base URL, e.g. https://gitlab.com (or set %sGITLAB_URL)", EnvPrefix)
	}
	for _, name := range slices.Sorted(mapKeys(c.Clusters)) {
		cl := c.Clusters[name]
		if cl.LiveMode == "" {
			cl.LiveMode = diffing.LiveSimulate
		} else if !cl.LiveMode.Valid() {
			v.add([]string{"clusters", name, "liveMode"}, "unknown live mode %q (want simulate, dry-run or off)", cl.LiveMode)
		}
		c.Clusters[name] = cl
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
	case "":
		q.Driver = "sqlite"
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
	if !q.DSN.IsSet() {
		if q.Driver == "postgres" {
			v.add([]string{"queue", "dsn"}, "required for driver postgres: set queue.dsn or queue.dsnFile (or %sQUEUE_DSNFILE)", EnvPrefix)
		} else {
			q.DSN = NewSecret(DefaultSQLiteDSN)
		}
	}
	if q.Workers == 0 {
		q.Workers = DefaultWorkers
	} else if q.Workers < 0 {
		v.add([]string{"queue", "workers"}, "must be positive, got %d", q.Workers)
	}
	if q.JobTimeout == 0 {
		q.JobTimeout = DefaultJobTimeout
	} else if q.JobTimeout < 0 {
		v.add([]string{"queue", "jobTimeout"}, "must be positive, got %s", q.JobTimeout)
	}
	if q.RescueStuckAfter == 0 {
		q.RescueStuckAfter = q.JobTimeout + 5*time.Minute
	} else if q.RescueStuckAfter <= q.JobTimeout {
		v.add([]string{"queue", "rescueStuckAfter"}, "must be longer than queue.jobTimeout (%s), or a job still running would be started twice", q.JobTimeout)
	}
	if q.MaxAttempts == 0 {
		q.MaxAttempts = DefaultMaxAttempts
	} else if q.MaxAttempts < 0 {
		v.add([]string{"queue", "maxAttempts"}, "must be positive, got %d", q.MaxAttempts)
	}
	if q.SweepInterval == 0 {
		q.SweepInterval = DefaultSweepInterval
	} else if q.SweepInterval < 0 {
		v.add([]string{"queue", "sweepInterval"}, "must be positive, got %s", q.SweepInterval)
	}
	for i, p := range c.Repos {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			v.add([]string{"repos"}, "entry %d %q is not a valid glob (path.Match syntax, e.g. acme/*)", i+1, p)
		}
	}
	return errors.Join(v.errs...)
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

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// AllowsRepo reports whether repo matches the allowlist (empty allows all).
func (c *Config) AllowsRepo(repo string) bool {
	return MatchRepo(c.Repos, repo)
}

// MatchRepo reports whether repo matches one of the path.Match globs; an empty list
// matches everything.
func MatchRepo(globs []string, repo string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, repo); ok {
			return true
		}
	}
	return false
}

// applyEnv sets every DRIFTPREVIEW_<PATH> variable onto cfg.
func applyEnv(cfg *Config, environ []string) error {
	env := map[string]string{}
	for _, kv := range environ {
		k, val, ok := strings.Cut(kv, "=")
		if ok && strings.HasPrefix(k, EnvPrefix) {
			env[k] = val
		}
	}
	if len(env) == 0 {
		return nil
	}
	used := map[string]bool{}
	var errs []error
	setFields(reflect.ValueOf(cfg).Elem(), strings.TrimSuffix(EnvPrefix, "_"), env, used, &errs)
	for _, k := range slices.Sorted(mapKeys(env)) {
		if !used[k] {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("ignoring unknown environment variable %s (not a server.yaml setting)", k))
		}
	}
	return errors.Join(errs...)
}

var (
	secretType   = reflect.TypeFor[Secret]()
	durationType = reflect.TypeFor[time.Duration]()
)

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

func setFields(v reflect.Value, prefix string, env map[string]string, used map[string]bool, errs *[]error) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" || name == "-" {
			continue
		}
		key := prefix + "_" + strings.ToUpper(name)
		fv := v.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != secretType:
			setFields(fv, key, env, used, errs)
		case f.Type.Kind() == reflect.Map:
			setMap(fv, key, env, used, errs)
		default:
			if val, ok := env[key]; ok {
				used[key] = true
				if err := setScalar(fv, val); err != nil {
					*errs = append(*errs, fmt.Errorf("environment variable %s: %w", key, err))
				}
			}
		}
	}
}

// setMap handles maps of structs (clusters): DRIFTPREVIEW_CLUSTERS_<NAME>_<FIELD>.
// The name matches an existing key case-insensitively, else it is lower-cased.
func setMap(m reflect.Value, prefix string, env map[string]string, used map[string]bool, errs *[]error) {
	elem := m.Type().Elem()
	if elem.Kind() != reflect.Struct {
		return
	}
	var fields []string
	for i := range elem.NumField() {
		if n := yamlName(elem.Field(i)); n != "" && n != "-" {
			fields = append(fields, strings.ToUpper(n))
		}
	}
	for _, k := range slices.Sorted(mapKeys(env)) {
		rest, ok := strings.CutPrefix(k, prefix+"_")
		if !ok {
			continue
		}
		for _, fname := range fields {
			name, ok := strings.CutSuffix(rest, "_"+fname)
			if !ok || name == "" {
				continue
			}
			mapKey := strings.ToLower(name)
			for _, existing := range m.MapKeys() {
				if strings.EqualFold(existing.String(), name) {
					mapKey = existing.String()
				}
			}
			if m.IsNil() {
				m.Set(reflect.MakeMap(m.Type()))
			}
			ev := reflect.New(elem).Elem()
			if cur := m.MapIndex(reflect.ValueOf(mapKey)); cur.IsValid() {
				ev.Set(cur)
			}
			setFields(ev, prefix+"_"+name, map[string]string{k: env[k]}, used, errs)
			m.SetMapIndex(reflect.ValueOf(mapKey), ev)
			break
		}
	}
}

func setScalar(v reflect.Value, s string) error {
	switch {
	case v.Type() == secretType:
		v.Set(reflect.ValueOf(Secret{v: s}))
	case v.Type() == durationType:
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (e.g. 10m): %q", s)
		}
		v.SetInt(int64(d))
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("not a boolean (true or false): %q", s)
		}
		v.SetBool(b)
	case v.Kind() == reflect.Int || v.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("not an integer: %q", s)
		}
		v.SetInt(n)
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		var items []string
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				items = append(items, p)
			}
		}
		v.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}
