package render

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Render errors are shown in the PR comment, and the libraries that produce them
// quote their input: kustomize prints every secretGenerator literal next to a bad
// one ("literal sources [password=… bad]"), an env-file line with invalid UTF-8 as
// bytes and as text, a patch it cannot read in full ("with config: `…`"); a helm
// template error may quote a value. So before an error leaves the render, every
// value that may be secret is replaced by "(hidden)":
//
//   - the values of secretGenerator and configMapGenerator literals, env files
//     and files, in every kustomization the render read, and their base64 form
//     (the generated Secret's data, which replacement errors quote);
//   - every scalar in a kustomization's inline patches;
//   - the data and stringData values (and decoded data) of every Secret read;
//   - every scalar string of the Helm values files and values given.
//
// And whatever the library prints, byte dumps ("[112 97 115 …]") and multi-line
// quoted blocks are dropped too.

const hidden = "(hidden)"

// minSecretLen is the shortest value that is hidden: shorter ones ("true", "80")
// would blank out words of the message and are no secret worth the name.
const minSecretLen = 4

var (
	byteDump    = regexp.MustCompile(`\[\d{1,3}(?: \d{1,3}){3,}\]`)
	quotedBlock = regexp.MustCompile("(?s)`[^`]*\n[^`]*`")
	// a Go-quoted string with an escaped newline: a whole file or patch
	quotedLines = regexp.MustCompile(`"(?:[^"\\\n]|\\.)*\\n(?:[^"\\\n]|\\.)*"`)
)

// scrub returns err with every secret value of the render hidden; *Error keeps
// its file and line.
func (s *sandbox) scrub(err error, opts Options, target string) error {
	if err == nil {
		return nil
	}
	secrets, spelled := s.secrets(opts, target)
	clean := func(msg string) string {
		msg = quotedBlock.ReplaceAllString(msg, "`"+hidden+"`")
		msg = quotedLines.ReplaceAllString(msg, `"`+hidden+`"`)
		msg = byteDump.ReplaceAllString(msg, "["+hidden+"]")
		for _, v := range secrets {
			msg = strings.ReplaceAll(msg, v, hidden)
		}
		for _, re := range spelled {
			msg = re.ReplaceAllLiteralString(msg, hidden)
		}
		return msg
	}
	if re, ok := err.(*Error); ok {
		msg := clean(re.Err.Error())
		if msg == re.Err.Error() {
			return err
		}
		if u, ok := errors.AsType[*Unavailable](re.Err); ok {
			return &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: msg, Remote: u.Remote}}
		}
		return &Error{File: re.File, Line: re.Line, Err: stringError(msg)}
	}
	if msg := clean(err.Error()); msg != err.Error() {
		return stringError(msg)
	}
	return err
}

type stringError string

func (e stringError) Error() string { return string(e) }

// secrets gathers the values to hide from the files this render read, longest
// first so a value containing another is hidden whole, and for the Helm values
// under a secret-looking key the patterns of their respelt forms.
func (s *sandbox) secrets(opts Options, target string) ([]string, []*regexp.Regexp) {
	s.mu.Lock()
	files := make(map[string][]byte, len(s.files))
	for k, v := range s.files {
		files[k] = v
	}
	s.mu.Unlock()

	set := map[string]bool{}
	add := func(v string) {
		v = strings.TrimSpace(v)
		if len(v) >= minSecretLen {
			set[v] = true
		}
	}
	// addGenerated adds a generator's value and the base64 form kustomize
	// gives it in the generated Secret's data, which its errors quote.
	addGenerated := func(v string) {
		add(v)
		add(base64.StdEncoding.EncodeToString([]byte(v)))
		if t := strings.TrimSpace(v); t != v {
			add(base64.StdEncoding.EncodeToString([]byte(t)))
		}
	}
	// addFile adds an env file's lines and values (as kustomize's kv.go reads
	// them: the line without its end, the value after the first "=") and a
	// files entry's whole content, each in base64 too.
	addFile := func(data []byte) {
		addGenerated(string(data))
		for l := range strings.Lines(string(data)) {
			l = strings.TrimRight(l, "\n")
			add(l)
			if _, v, ok := strings.Cut(l, "="); ok {
				addGenerated(v)
				addGenerated(strings.TrimSuffix(v, "\r"))
			}
		}
	}
	var spelled []*regexp.Regexp
	// addSecret adds a Helm value under a secret-looking key with the forms a
	// template can turn it into before fail quotes it: see secretForms.
	addSecret := func(v string) {
		add(v)
		for _, f := range []string{v, strings.ToLower(v), strings.ToUpper(v)} {
			add(base64.StdEncoding.EncodeToString([]byte(f)))
		}
		if re := respelt(v); re != nil {
			spelled = append(spelled, re)
		}
	}
	valuesFiles := slices.Clone(opts.Helm.ValuesFiles)
	valuesFiles = append(valuesFiles, path.Join(target, "values.yaml"))
	for name, data := range files {
		docs := yamlDocs(data)
		if slices.Contains(valuesFiles, name) {
			for _, d := range docs {
				valuesScalars(d, false, add, addSecret)
			}
			continue
		}
		if slices.Contains(kustomizationNames, path.Base(name)) {
			for _, d := range docs {
				kustomizationSecrets(d, path.Dir(name), files, add, addGenerated, addFile)
			}
			continue
		}
		for _, d := range docs {
			secretValues(d, add)
		}
	}
	helmValues(opts.Helm.Values, false, add, addSecret)
	for _, vals := range opts.Helm.checkoutValues {
		helmValues(vals, false, add, addSecret)
	}
	for _, p := range opts.Kustomize.Patches {
		var entry struct {
			Patch string `yaml:"patch"`
		}
		if yaml.Unmarshal([]byte(p), &entry) == nil {
			patchText(entry.Patch, add)
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, spelled
}

// secretKey matches the Helm values keys whose values (and everything under
// them) are hidden in their respelt forms too: passwords, secrets, tokens,
// credentials, keys (apiKey, accessKey, privateKey, …), certificates, DSNs.
var secretKey = regexp.MustCompile(`(?i)pass|pwd|secret|token|credential|auth|key$|keys$|cert|private|dsn|salt|cookie|session|signing`)

// Respelt forms: a value's letters and digits in order, in any case, with up
// to maxSeparator other characters between each two (spaced out, dotted, its
// own separators removed or changed). Values with fewer than minRespelt
// letters and digits are only hidden as written: a shorter pattern would match
// words of the message; longer than maxRespelt, only as written too.
const (
	minRespelt   = 6
	maxRespelt   = 256
	maxSeparator = 3
)

// respelt returns the pattern of v's respelt forms, or nil.
func respelt(v string) *regexp.Regexp {
	var parts []string
	for _, r := range v {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			parts = append(parts, regexp.QuoteMeta(string(r)))
		}
	}
	if len(parts) < minRespelt || len(parts) > maxRespelt {
		return nil
	}
	sep := fmt.Sprintf(`[^\pL\pN]{0,%d}`, maxSeparator)
	return regexp.MustCompile(`(?i)` + strings.Join(parts, sep))
}

// valuesScalars calls add with every scalar under n, and addSecret instead for
// those under a secret-looking key (secret says an ancestor's key was one).
func valuesScalars(n *yaml.Node, secret bool, add, addSecret func(string)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			valuesScalars(c, secret, add, addSecret)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			valuesScalars(n.Content[i+1], secret || secretKey.MatchString(n.Content[i].Value), add, addSecret)
		}
	case yaml.ScalarNode:
		if secret {
			addSecret(n.Value)
		} else {
			add(n.Value)
		}
	}
}

// helmValues is valuesScalars for values already decoded.
func helmValues(v any, secret bool, add, addSecret func(string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			helmValues(x, secret || secretKey.MatchString(k), add, addSecret)
		}
	case []any:
		for _, x := range v {
			helmValues(x, secret, add, addSecret)
		}
	case string:
		if secret {
			addSecret(v)
		} else {
			add(v)
		}
	}
}

// yamlDocs decodes data into nodes, or nothing if it is not YAML (or is hostile:
// the render has already refused what DecodeYAML refuses, so no limits here
// beyond what the parser itself has).
func yamlDocs(data []byte) []*yaml.Node {
	if checkYAML(data, "") != nil {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*yaml.Node
	for {
		var n yaml.Node
		if dec.Decode(&n) != nil {
			return out
		}
		out = append(out, &n)
	}
}

// kustomizationSecrets collects generator values, the env files and files they
// read (each also base64-encoded, as the generated Secret holds it), and the
// scalars of inline patches.
func kustomizationSecrets(doc *yaml.Node, dir string, files map[string][]byte, add, addGenerated func(string), addFile func([]byte)) {
	var k struct {
		SecretGenerator    []generatorArgs `yaml:"secretGenerator"`
		ConfigMapGenerator []generatorArgs `yaml:"configMapGenerator"`
		Patches            []struct {
			Patch string `yaml:"patch"`
		} `yaml:"patches"`
		PatchesStrategicMerge []string `yaml:"patchesStrategicMerge"`
		PatchesJSON6902       []struct {
			Patch string `yaml:"patch"`
		} `yaml:"patchesJson6902"`
	}
	_ = doc.Decode(&k) // a kustomization this cannot read fails elsewhere
	for _, g := range slices.Concat(k.SecretGenerator, k.ConfigMapGenerator) {
		for _, l := range g.Literals {
			add(l)
			if _, v, ok := strings.Cut(l, "="); ok {
				addGenerated(v)
				addGenerated(strings.Trim(v, `"'`))
			}
		}
		envs := g.Envs
		if g.Env != "" {
			envs = append(envs, g.Env)
		}
		for _, f := range slices.Concat(envs, g.Files) {
			if _, p, ok := strings.Cut(f, "="); ok {
				f = p
			}
			addFile(files[path.Join(dir, f)])
		}
	}
	var patches []string
	for _, p := range k.Patches {
		patches = append(patches, p.Patch)
	}
	for _, p := range k.PatchesJSON6902 {
		patches = append(patches, p.Patch)
	}
	for _, p := range k.PatchesStrategicMerge {
		if strings.Contains(p, "\n") {
			patches = append(patches, p)
		}
	}
	for _, p := range patches {
		patchText(p, add)
	}
}

// patchText collects the values of a patch, line by line when it is not valid
// YAML (kustomize then quotes it whole).
func patchText(p string, add func(string)) {
	docs := yamlDocs([]byte(p))
	for _, d := range docs {
		patchValues(d, add)
	}
	if len(docs) > 0 {
		return
	}
	for l := range strings.Lines(p) {
		if _, v, ok := strings.Cut(l, ":"); ok {
			add(v)
		}
	}
}

// patchValues collects the scalars of a patch except those that only say what
// it targets (apiVersion, kind, metadata) or how (a JSON patch's op, path, from),
// which the error needs to stay readable.
func patchValues(n *yaml.Node, add func(string)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			patchValues(c, add)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch n.Content[i].Value {
			case "apiVersion", "kind", "metadata", "op", "path", "from":
				continue
			}
			scalars(n.Content[i+1], add)
		}
	case yaml.ScalarNode:
		add(n.Value)
	}
}

type generatorArgs struct {
	Literals []string `yaml:"literals"`
	Envs     []string `yaml:"envs"`
	Env      string   `yaml:"env"`
	Files    []string `yaml:"files"`
}

// secretValues collects the values of a Secret document (decoded too).
func secretValues(doc *yaml.Node, add func(string)) {
	var s struct {
		Kind       string            `yaml:"kind"`
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	if doc.Decode(&s) != nil || s.Kind != "Secret" {
		return
	}
	for _, v := range s.StringData {
		add(v)
	}
	for _, v := range s.Data {
		add(v)
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			add(string(b))
		}
	}
}

// scalars calls add with every scalar under n (not mapping keys).
func scalars(n *yaml.Node, add func(string)) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			scalars(c, add)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			scalars(n.Content[i], add)
		}
	case yaml.ScalarNode:
		add(n.Value)
	}
}
