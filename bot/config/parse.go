package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// CurrentVersion is the only config version this bot understands; the file must say
// "version: 1" so a future incompatible format fails loudly instead of half-working.
const CurrentVersion = 1

// DefaultManager is the field manager a target is simulated as when its sync.manager
// is not set. It matches diffing.DefaultOptions; set sync.manager to the GitOps
// controller's manager (kustomize-controller, argocd-controller…) for accurate
// field-conflict findings.
const DefaultManager = "driftpreview"

// MaxFileBytes caps .driftpreview.yaml: the file comes from the repository, and a
// config never needs a mebibyte.
const MaxFileBytes = 1 << 20

// maxNodes caps YAML nodes visited, counting each alias expansion, so anchors cannot
// blow a small file up into a huge walk.
const maxNodes = 200_000

// The keys each mapping accepts, in the order error messages list them. The schema
// test checks that schema.json declares exactly these.
var (
	keysTop          = []string{"version", "targets", "policy", "statefulKinds", "humanManagers", "ignore", "argocd", "noise"}
	keysArgoCD       = []string{"kustomizeBuildOptions"}
	keysNoise        = []string{"chartMetadata"}
	keysTarget       = []string{"name", "path", "renderer", "namespace", "cluster", "helm", "kustomize", "directory", "sync", "ignore", "watch"}
	keysHelm         = []string{"releaseName", "valuesFiles", "values", "skipCrds", "kubeVersion"}
	keysKustomize    = []string{"namePrefix", "nameSuffix", "images", "commonLabels", "commonAnnotations"}
	keysDirectory    = []string{"recurse", "include", "exclude"}
	keysSync         = []string{"prune", "selfHeal", "manager", "replace"}
	keysPolicy       = []string{"fail", "severity"}
	keysStatefulKind = []string{"group", "kind"}
	keysIgnore       = []string{"group", "kind", "namespace", "name", "paths", "managers", "rules", "reason", "expires"}
)

var (
	renderers   = []string{string(render.RendererAuto), string(render.RendererKustomize), string(render.RendererHelm), string(render.RendererPlain)}
	severities  = []string{"info", "warning", "error"}
	kubeVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+(\.[0-9]+)?$`)
	dateRE      = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
)

// ruleNames lists every finding rule ID a config may name, sorted.
func ruleNames() []string {
	names := make([]string, 0, len(diffing.DefaultSeverity))
	for r := range diffing.DefaultSeverity {
		names = append(names, string(r))
	}
	slices.Sort(names)
	return names
}

// Load reads FileName from the repository checked out at root. When the file is
// absent it returns a Config with Discovered set and no targets, so the caller
// discovers targets itself. The file is opened inside root (a symlink cannot point
// it elsewhere) and capped at MaxFileBytes. Problems in the file come back as
// *Error values joined together; see Errors.
func Load(root string) (*Config, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", FileName, err)
	}
	defer r.Close()
	f, err := r.Open(FileName)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{Version: CurrentVersion, Discovered: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", FileName, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, joinErrors([]*Error{{File: FileName, Reason: "is a directory; it must be a YAML file"}})
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", FileName, err)
	}
	return Parse(data, FileName)
}

// Parse reads a .driftpreview.yaml strictly: unknown keys at any level, wrong types,
// unknown rule IDs or severities, ignore rules without a reason, bad expiry dates,
// unsafe target paths and duplicate target names are all errors. It reports every
// problem, not just the first, as *Error values (file:line: field: reason) joined with
// errors.Join; on any problem it returns a nil Config. An empty file, or one without
// targets, gives a Config with Discovered set. file names the file in messages and in
// each ignore rule's Origin.
func Parse(data []byte, file string) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, joinErrors([]*Error{{File: file, Reason: fmt.Sprintf("file is larger than %d bytes; a config never needs that much", MaxFileBytes)}})
	}
	// render's decoder, so its limits (alias bombs, depth, duplicate keys)
	// hold here as for every other YAML of a PR.
	docs, err := render.DecodeYAML(data, file)
	if err != nil {
		return nil, joinErrors([]*Error{syntaxError(file, err)})
	}
	if len(docs) == 0 {
		return &Config{Version: CurrentVersion, Discovered: true}, nil
	}
	if len(docs) > 1 {
		return nil, joinErrors([]*Error{{File: file, Line: docs[1].Line, Reason: "only one YAML document is allowed; remove the \"---\" separator"}})
	}
	p := &parser{file: file}
	cfg := p.config(docs[0].Node)
	if len(p.errs) > 0 {
		slices.SortStableFunc(p.errs, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
		return nil, joinErrors(p.errs)
	}
	cfg.Discovered = len(cfg.Targets) == 0
	return cfg, nil
}

// syntaxError turns render.DecodeYAML's error into an *Error with its line.
func syntaxError(file string, err error) *Error {
	if re, ok := errors.AsType[*render.Error](err); ok {
		return &Error{File: file, Line: re.Line, Reason: hideQuoted(re.Err.Error())}
	}
	return &Error{File: file, Reason: hideQuoted(err.Error())}
}

var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// hideQuoted hides the quoted words of a decoder's message (a duplicate key) that
// look like a credential, as display does for the parser's own messages.
func hideQuoted(msg string) string {
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if s, err := strconv.Unquote(q); err == nil && looksSecret(s) {
			return display(s)
		}
		return q
	})
}

// parser walks the YAML node tree, collecting every problem it meets.
type parser struct {
	file   string
	errs   []*Error
	nodes  int
	tooBig bool
	// targets holds, for each parsed target, its index in the file and the line of
	// its name (or of the target when the name is defaulted).
	targets []targetPos
}

type targetPos struct{ index, line int }

func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Reason: fmt.Sprintf(format, args...)})
}

// deref follows aliases and counts the node against the budget; it returns nil once
// the budget is spent, which stops the walk.
func (p *parser) deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	p.nodes++
	if p.nodes > maxNodes {
		if !p.tooBig {
			p.tooBig = true
			p.fail(n, "", "too many YAML nodes after expanding aliases (limit %d)", maxNodes)
		}
		return nil
	}
	return n
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

func index(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// describe names a node's type for "want X, got Y" messages, without its value.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing (null)"
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!timestamp":
		return "a date"
	case "!!binary":
		return "binary data"
	}
	return "a string"
}

type pair struct{ key, val *yaml.Node }

// pairs returns a mapping's key/value pairs with YAML merge keys (<<) expanded, and
// reports duplicate and non-string keys.
func (p *parser) pairs(n *yaml.Node, field string) []pair {
	var out []pair
	seen := map[string]int{}
	var merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, p.mergePairs(v, field)...)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			p.fail(k, field, "keys must be strings, got %s", describe(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			p.fail(k, field, "duplicate key %s (first at line %d)", display(k.Value), line)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	for _, m := range merged {
		if _, ok := seen[m.key.Value]; !ok {
			seen[m.key.Value] = m.key.Line
			out = append(out, m)
		}
	}
	return out
}

func (p *parser) mergePairs(v *yaml.Node, field string) []pair {
	v = p.deref(v)
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		return p.pairs(v, field)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range v.Content {
			out = append(out, p.mergePairs(item, field)...)
		}
		return out
	}
	p.fail(v, field, "a merge key (<<) needs a mapping or a list of mappings, got %s", describe(v))
	return nil
}

// object checks that n is a mapping with only allowed keys and calls set for each.
func (p *parser) object(n *yaml.Node, field string, allowed []string, set func(key string, k, v *yaml.Node)) bool {
	n = p.deref(n)
	if n == nil {
		return false
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping, got %s", describe(n))
		return false
	}
	for _, kv := range p.pairs(n, field) {
		if !slices.Contains(allowed, kv.key.Value) {
			p.fail(kv.key, field, "unknown key %s%s (allowed: %s)", display(kv.key.Value), suggest(kv.key.Value, allowed), strings.Join(allowed, ", "))
			continue
		}
		v := p.deref(kv.val)
		if v == nil {
			return false
		}
		set(kv.key.Value, kv.key, v)
	}
	return true
}

// list checks that n is a sequence and calls each for every item.
func (p *parser) list(n *yaml.Node, field string, each func(i int, v *yaml.Node)) {
	n = p.deref(n)
	if n == nil {
		return
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "want a list, got %s", describe(n))
		return
	}
	for i, item := range n.Content {
		v := p.deref(item)
		if v == nil {
			return
		}
		each(i, v)
	}
}

func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
			hint = " (quote it to make it a string)"
		}
		p.fail(n, field, "want a string, got %s%s", describe(n), hint)
		return "", false
	}
	return n.Value, true
}

// nonEmpty is str that also refuses an empty or blank string.
func (p *parser) nonEmpty(n *yaml.Node, field string) (string, bool) {
	s, ok := p.str(n, field)
	if ok && strings.TrimSpace(s) == "" {
		p.fail(n, field, "must not be empty")
		return "", false
	}
	return s, ok
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
		got := describe(n)
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			got = display(n.Value)
		}
		p.fail(n, field, "want true or false, got %s", got)
		return false, false
	}
	return b, true
}

func (p *parser) strings(n *yaml.Node, field string, check func(s string, v *yaml.Node, field string) bool) []string {
	out := []string{}
	p.list(n, field, func(i int, v *yaml.Node) {
		f := index(field, i)
		if s, ok := p.nonEmpty(v, f); ok && (check == nil || check(s, v, f)) {
			out = append(out, s)
		}
	})
	return out
}

// globCheck reports a bad glob pattern (path.Match).
func (p *parser) globCheck(s string, v *yaml.Node, f string) bool {
	if _, err := path.Match(s, ""); err != nil {
		p.fail(v, f, "bad glob pattern %s: %v", display(s), err)
		return false
	}
	return true
}

// globs reads a glob pattern or a list of them.
func (p *parser) globs(n *yaml.Node, field string) []string {
	check := p.globCheck
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if s, ok := p.nonEmpty(n, field); ok && check(s, n, field) {
			return []string{s}
		}
		return nil
	}
	return p.strings(n, field, check)
}

func (p *parser) stringMap(n *yaml.Node, field string) map[string]string {
	out := map[string]string{}
	n = p.deref(n)
	if n == nil {
		return out
	}
	if n.Kind != yaml.MappingNode {
		p.fail(n, field, "want a mapping of strings, got %s", describe(n))
		return out
	}
	for _, kv := range p.pairs(n, field) {
		v := p.deref(kv.val)
		if v == nil {
			return out
		}
		if s, ok := p.str(v, join(field, kv.key.Value)); ok {
			out[kv.key.Value] = s
		}
	}
	return out
}

func (p *parser) enum(n *yaml.Node, field string, allowed []string, what string) (string, bool) {
	s, ok := p.str(n, field)
	if !ok {
		return "", false
	}
	if !slices.Contains(allowed, s) {
		// A likely typo gets its correction alone; otherwise list every choice.
		if hint := suggest(s, allowed); hint != "" {
			p.fail(n, field, "unknown %s %s%s", what, display(s), hint)
		} else {
			p.fail(n, field, "unknown %s %s (want one of: %s)", what, display(s), strings.Join(allowed, ", "))
		}
		return "", false
	}
	return s, true
}

func (p *parser) rule(n *yaml.Node, field string) (diffing.Rule, bool) {
	s, ok := p.enum(n, field, ruleNames(), "rule")
	return diffing.Rule(s), ok
}

func (p *parser) rules(n *yaml.Node, field string) []diffing.Rule {
	out := []diffing.Rule{}
	p.list(n, field, func(i int, v *yaml.Node) {
		if r, ok := p.rule(v, index(field, i)); ok {
			out = append(out, r)
		}
	})
	return out
}

// repoPath checks a path that must stay inside the repository.
func (p *parser) repoPath(n *yaml.Node, field string) (string, bool) {
	s, ok := p.nonEmpty(n, field)
	if !ok {
		return "", false
	}
	if reason := BadRepoPath(s); reason != "" {
		p.fail(n, field, "%s %s", display(s), reason)
		return "", false
	}
	return s, true
}

// BadRepoPath says why s is not a clean, relative, slash-separated path inside the
// repository, or returns "".
func BadRepoPath(s string) string {
	switch {
	case strings.HasPrefix(s, "/"):
		return "is absolute; write it relative to the repository root"
	case strings.Contains(s, `\`):
		return "uses backslashes; separate directories with /"
	case s == ".." || strings.HasPrefix(s, "../") || strings.HasSuffix(s, "/..") || strings.Contains(s, "/../"):
		return "must not use \"..\"; the path must stay inside the repository"
	case path.Clean(s) != s:
		return fmt.Sprintf("is not clean; write %s", display(path.Clean(s)))
	}
	return ""
}

func (p *parser) config(root *yaml.Node) *Config {
	cfg := &Config{}
	var sawVersion bool
	ok := p.object(root, "", keysTop, func(key string, k, v *yaml.Node) {
		switch key {
		case "version":
			sawVersion = true
			var n int
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || v.Decode(&n) != nil {
				p.fail(v, "version", "want the number %d, got %s", CurrentVersion, describe(v))
				return
			}
			if n != CurrentVersion {
				p.fail(v, "version", "unsupported version %d; this driftpreview reads version %d", n, CurrentVersion)
				return
			}
			cfg.Version = n
		case "targets":
			p.list(v, "targets", func(i int, t *yaml.Node) {
				if tg, line, ok := p.target(t, index("targets", i)); ok {
					cfg.Targets = append(cfg.Targets, tg)
					p.targets = append(p.targets, targetPos{i, line})
				}
			})
		case "policy":
			cfg.Policy = p.policy(v)
		case "statefulKinds":
			p.list(v, "statefulKinds", func(i int, n *yaml.Node) {
				if gk, ok := p.statefulKind(n, index("statefulKinds", i)); ok {
					cfg.StatefulKinds = append(cfg.StatefulKinds, gk)
				}
			})
		case "humanManagers":
			cfg.HumanManagers = p.strings(v, "humanManagers", nil)
		case "ignore":
			cfg.Ignore = p.ignoreRules(v, "ignore")
		case "noise":
			p.object(v, "noise", keysNoise, func(key string, k, v *yaml.Node) {
				if key == "chartMetadata" {
					cfg.ChartMetadata = p.strings(v, "noise.chartMetadata", p.globCheck)
				}
			})
		case "argocd":
			p.object(v, "argocd", keysArgoCD, func(key string, k, v *yaml.Node) {
				if key == "kustomizeBuildOptions" {
					if o, ok := p.str(v, "argocd.kustomizeBuildOptions"); ok {
						cfg.ArgoKustomizeBuildOptions = &o
					}
				}
			})
		}
	})
	if ok && !sawVersion {
		p.fail(root, "version", "missing; add \"version: %d\" at the top", CurrentVersion)
	}
	p.uniqueNames(cfg.Targets)
	return cfg
}

// uniqueNames reports targets that share a name: the name selects a target on the
// command line and heads its section of the comment.
func (p *parser) uniqueNames(targets []Target) {
	first := map[string]int{}
	for i, t := range targets {
		if j, dup := first[t.Name]; dup {
			a, b := p.targets[j], p.targets[i]
			p.fail(&yaml.Node{Line: b.line}, index("targets", b.index)+".name",
				"duplicate target name %s (also targets[%d] at line %d); give each target a unique name", display(t.Name), a.index, a.line)
			continue
		}
		first[t.Name] = i
	}
}
