package serverconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/driftpreview/driftpreview/render/remote"
)

// EnvPrefix starts every environment override: DRIFTPREVIEW_<PATH>, the YAML path
// upper-cased and joined with underscores.
const EnvPrefix = "DRIFTPREVIEW_"

// Raw is server.yaml as written, with the DRIFTPREVIEW_ environment overrides
// applied: nothing defaulted, no secret file read, nothing checked. ToValid turns it
// into a Config (model: Atlantis's core/config/raw → core/config/valid).
type Raw struct {
	Listen         string             `yaml:"listen"`
	Webhooks       Webhooks           `yaml:"webhooks"`
	Metrics        RawMetrics         `yaml:"metrics"`
	GitHub         RawGitHub          `yaml:"github"`
	GitLab         RawGitLab          `yaml:"gitlab"`
	Clusters       map[string]Cluster `yaml:"clusters"`
	DefaultCluster string             `yaml:"defaultCluster"`
	ArgoCDCluster  string             `yaml:"argocdCluster"`
	ArgoCD         ArgoCD             `yaml:"argocd"`
	Queue          RawQueue           `yaml:"queue"`
	Repos          []string           `yaml:"repos"`
	AllowForkPRs   bool               `yaml:"allowForkPRs"`
	WorkDir        string             `yaml:"workDir"`
	CheckoutDir    string             `yaml:"checkoutDir"`
	LogLevel       string             `yaml:"logLevel"`
	Remote         remote.Policy      `yaml:"remote"`
	Reports        RawReports         `yaml:"reports"`
	Watch          Watch              `yaml:"watch"`
	Drift          Drift              `yaml:"drift"`

	// file and root say where each key came from, for errors with file and line;
	// warnings are the remarks of parsing (unknown variables).
	file     string
	root     *yaml.Node
	warnings []string
}

// RawMetrics is the metrics block as written; see Metrics.
type RawMetrics struct {
	Listen          string `yaml:"listen"`
	BearerTokenFile string `yaml:"bearerTokenFile"`
}

// RawGitHub is the github block as written; see GitHub.
type RawGitHub struct {
	AppID             int64  `yaml:"appID"`
	PrivateKeyFile    string `yaml:"privateKeyFile"`
	WebhookSecretFile string `yaml:"webhookSecretFile"`
	APIURL            string `yaml:"apiURL"`
	WebURL            string `yaml:"webURL"`
}

// RawGitLab is the gitlab block as written; see GitLab.
type RawGitLab struct {
	URL               string `yaml:"url"`
	TokenFile         string `yaml:"tokenFile"`
	WebhookSecretFile string `yaml:"webhookSecretFile"`
}

// RawReports is the reports block as written; see Reports.
type RawReports struct {
	URL       string        `yaml:"url"`
	KeyFile   string        `yaml:"keyFile"`
	MaxBytes  int64         `yaml:"maxBytes"`
	Retention time.Duration `yaml:"retention"`
}

// RawQueue is the queue block as written; see Queue.
type RawQueue struct {
	Driver           string        `yaml:"driver"`
	DSN              Secret        `yaml:"dsn"`
	DSNFile          string        `yaml:"dsnFile"`
	Workers          int           `yaml:"workers"`
	JobTimeout       time.Duration `yaml:"jobTimeout"`
	RescueStuckAfter time.Duration `yaml:"rescueStuckAfter"`
	MaxAttempts      int           `yaml:"maxAttempts"`
	SweepInterval    time.Duration `yaml:"sweepInterval"`
}

// ParseRaw reads the file at path (which may be empty to configure only from the
// environment) and applies the DRIFTPREVIEW_ variables of environ. Errors name the
// file and line, or the variable.
func ParseRaw(file string, environ []string) (*Raw, error) {
	r := &Raw{file: file}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("reading server config: %w", err)
		}
		if r.root, err = parse(file, data, r); err != nil {
			return nil, err
		}
	}
	if err := applyEnv(r, environ); err != nil {
		return nil, err
	}
	return r, nil
}

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type \S+$`)

// parse decodes strictly and rewrites yaml's errors into "file:line: …" form.
func parse(file string, data []byte, cfg *Raw) (*yaml.Node, error) {
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

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// applyEnv sets every DRIFTPREVIEW_<PATH> variable onto cfg.
func applyEnv(cfg *Raw, environ []string) error {
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
			cfg.warnings = append(cfg.warnings, fmt.Sprintf("ignoring unknown environment variable %s (not a server.yaml setting)", k))
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
