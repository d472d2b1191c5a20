package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"sigs.k8s.io/yaml"
)

// Argo CD's ApplicationSet controller runs the PR's Go templates (with Sprig) or
// fasttemplate substitutions over every parameter set its generators make. Such a
// template can allocate without bound (`{{ repeat 1000000000 "x" }}`) or loop
// until killed, and Go can neither recover from running out of memory nor stop a
// running template. So templates run where renders run: in a render process, with
// its kernel limits (memory, CPU time), its wall-clock timeout and its process
// group killed when the caller's context ends. ExecuteTemplates sends one batch
// (every parameter set of one step of one ApplicationSet) in one request.

// TemplateTree is one tree of templates a TemplateRequest executes with every
// parameter set: every string in it, map keys included, is a template, and map
// entries whose value is null are dropped (Argo CD's deeplyReplace,
// applicationset/utils/utils.go).
type TemplateTree struct {
	Tree any `json:"tree"`
	// Values makes Tree a generator's values map as a matrix interpolates it
	// (RenderGeneratorParams): each value is executed as a string (others as
	// ""), keys are kept, missingkey=error is forced, and a value whose
	// template names a missing key is kept as written.
	Values bool `json:"values,omitempty"`
}

// TemplateRequest is a batch of templates: each tree executed with each
// parameter set, as one ApplicationSet's step needs them.
type TemplateRequest struct {
	// Name says what the templates are, for errors ("ApplicationSet apps").
	Name string `json:"name"`
	// GoTemplate executes Go templates with Sprig's functions (Argo CD's
	// goTemplate: true), with Options (goTemplateOptions); otherwise
	// fasttemplate {{param}} substitution.
	GoTemplate bool             `json:"goTemplate,omitempty"`
	Options    []string         `json:"options,omitempty"`
	Trees      []TemplateTree   `json:"trees"`
	Params     []map[string]any `json:"params"`
}

// TemplateLimits bound one TemplateRequest. Zero fields take
// DefaultTemplateLimits' values.
type TemplateLimits struct {
	// MaxOutputBytes caps one template's output (one string of a tree); the
	// Sprig functions that take a size (repeat, randAlpha…, indent) refuse
	// sizes past it.
	MaxOutputBytes int64
	// MaxTotalBytes caps all the outputs of the request together.
	MaxTotalBytes int64
	// MaxListLen caps the lists until and untilStep make and the numbers seq
	// prints.
	MaxListLen int
	// MaxMemoryBytes, MaxCPUTime and Timeout are the render process's limits,
	// as for a render (Options).
	MaxMemoryBytes int64
	MaxCPUTime     time.Duration
	Timeout        time.Duration
}

// DefaultTemplateLimits: 1.5 MiB per template output (what the Kubernetes API
// server takes as one object, so no Application field can be larger), 32 MiB in
// all per request (the rendered manifests of one target), lists of at most
// 100,000 elements, and the limits of a render (DefaultOptions).
func DefaultTemplateLimits() TemplateLimits {
	d := DefaultOptions()
	return TemplateLimits{
		MaxOutputBytes: 3 << 19,
		MaxTotalBytes:  d.MaxOutputBytes,
		MaxListLen:     100_000,
		MaxMemoryBytes: d.MaxMemoryBytes,
		MaxCPUTime:     d.MaxCPUTime,
		Timeout:        d.Timeout,
	}
}

func (l TemplateLimits) withDefaults() TemplateLimits {
	d := DefaultTemplateLimits()
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxListLen <= 0 {
		l.MaxListLen = d.MaxListLen
	}
	if l.MaxMemoryBytes <= 0 {
		l.MaxMemoryBytes = d.MaxMemoryBytes
	}
	if l.MaxCPUTime <= 0 {
		l.MaxCPUTime = d.MaxCPUTime
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// TemplateError is a template of a TemplateRequest that failed: Param is the
// index of the parameter set, Tree the index of the tree. The first failure
// ends the request, as GenerateApplications stops at its first error.
type TemplateError struct {
	Param, Tree int
	Err         error
}

func (e *TemplateError) Error() string { return e.Err.Error() }
func (e *TemplateError) Unwrap() error { return e.Err }

// templateJob is what crosses the pipe: the request and its limits, as JSON of
// its own (the child's request decoder reads numbers as json.Number, which the
// templates must not see: Argo CD's parameters are JSON's float64).
type templateJob struct {
	Req TemplateRequest `json:"req"`
	Lim TemplateLimits  `json:"lim"`
}

// TemplateResult is what ExecuteTemplates returns: Out[param][tree], each
// tree executed with each parameter set; Bytes, the size of the answer; and
// CPUTime, what the render process spent on it.
type TemplateResult struct {
	Out     [][]any
	Bytes   int64
	CPUTime time.Duration
}

// ExecuteTemplates runs req in a render process with lim's limits. A template
// that fails is a *TemplateError; one stopped by a limit (memory, CPU time,
// wall clock, output) an *Error naming req.Name; a cancelled ctx kills the
// process.
func ExecuteTemplates(ctx context.Context, req TemplateRequest, lim TemplateLimits) (TemplateResult, error) {
	lim = lim.withDefaults()
	if len(req.Params) == 0 || len(req.Trees) == 0 {
		return TemplateResult{Out: make([][]any, len(req.Params))}, nil
	}
	job, err := json.Marshal(templateJob{Req: req, Lim: lim})
	if err != nil {
		return TemplateResult{}, fmt.Errorf("%s: encoding the templates: %w", req.Name, err)
	}
	opts := Options{MaxMemoryBytes: lim.MaxMemoryBytes, MaxCPUTime: lim.MaxCPUTime, Timeout: lim.Timeout, MaxOutputBytes: lim.MaxTotalBytes}
	res, err := childDo(ctx, childRequest{Templates: job}, req.Name, opts)
	if err != nil {
		return TemplateResult{}, templateLimitError(err, req.Name, lim)
	}
	r := TemplateResult{Bytes: res.size, CPUTime: res.CPU}
	if e := res.Error; e != nil {
		if e.Render {
			return r, &Error{File: req.Name, Err: errors.New(e.Msg)}
		}
		return r, &TemplateError{Param: e.Line, Tree: e.Tree, Err: errors.New(e.Msg)}
	}
	if err := json.Unmarshal(res.Templates, &r.Out); err != nil {
		return r, fmt.Errorf("%s: reading the executed templates: %w", req.Name, err)
	}
	if len(r.Out) != len(req.Params) {
		return r, fmt.Errorf("%s: the render process answered %d parameter sets of %d", req.Name, len(r.Out), len(req.Params))
	}
	return r, nil
}

// templateLimitError words a render process's limit errors for templates.
func templateLimitError(err error, name string, lim TemplateLimits) error {
	re, ok := errors.AsType[*Error](err)
	if !ok {
		return err
	}
	msg := re.Err.Error()
	msg = strings.Replace(msg, "rendering used", "executing the templates used", 1)
	msg = strings.Replace(msg, "rendering took", "executing the templates took", 1)
	msg = strings.Replace(msg, "the target renders more than", "the templates produce more than", 1)
	msg = strings.Replace(msg, "look for templates or kustomizations that loop", "look for templates that loop", 1)
	msg = strings.Replace(msg, "split it into smaller targets", fmt.Sprintf("the limit is %d bytes in all", lim.MaxTotalBytes), 1)
	return &Error{File: name, Err: errors.New(msg)}
}

// serveTemplates runs a template job in the render process.
func serveTemplates(raw json.RawMessage) childResult {
	var job templateJob
	if err := json.Unmarshal(raw, &job); err != nil {
		return childResult{Error: &childError{Msg: fmt.Sprintf("reading the template request: %v", err)}}
	}
	lim := job.Lim.withDefaults()
	debug.SetMemoryLimit(lim.MaxMemoryBytes * 3 / 4)
	// A template that calls itself dies at a stack far under the memory
	// limit, which childFailure names, rather than at Go's 1 GB default.
	debug.SetMaxStack(maxTemplateStack)
	x := newTemplateExec(job.Req, lim)
	out, err := x.run()
	if err != nil {
		if te, ok := errors.AsType[*TemplateError](err); ok {
			return childResult{Error: &childError{Line: te.Param, Tree: te.Tree, Msg: te.Err.Error()}}
		}
		return childResult{Error: &childError{Render: true, Msg: err.Error()}}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return childResult{Error: &childError{Render: true, Msg: fmt.Sprintf("encoding the executed templates: %v", err)}}
	}
	return childResult{Templates: b}
}

// maxTemplateStack is the goroutine stack a render process allows once it has
// executed templates: text/template stops a template that calls itself at
// 100,000 levels, which takes more stack than the memory limit allows.
const maxTemplateStack = 64 << 20

// templateExec executes one request.
type templateExec struct {
	req    TemplateRequest
	lim    TemplateLimits
	base   *template.Template
	parsed map[string]*template.Template // by options and text
	total  int64
	// buf is reused for every output.
	buf limitedBuffer
}

func newTemplateExec(req TemplateRequest, lim TemplateLimits) *templateExec {
	return &templateExec{req: req, lim: lim, base: baseTemplate(lim), parsed: map[string]*template.Template{}}
}

func (x *templateExec) run() ([][]any, error) {
	out := make([][]any, len(x.req.Params))
	for i, params := range x.req.Params {
		out[i] = make([]any, len(x.req.Trees))
		for j, t := range x.req.Trees {
			var v any
			var err error
			if t.Values {
				v, err = x.values(t.Tree, params)
			} else {
				v, err = x.tree(t.Tree, params, x.req.Options)
			}
			if err != nil {
				if le, ok := errors.AsType[*limitError](err); ok && le.total {
					return nil, err
				}
				return nil, &TemplateError{Param: i, Tree: j, Err: err}
			}
			out[i][j] = v
		}
	}
	return out, nil
}

// tree executes every string of v, map keys included; nil map values are
// dropped (deeplyReplace).
func (x *templateExec) tree(v any, params map[string]any, opts []string) (any, error) {
	switch t := v.(type) {
	case string:
		return x.replace(t, params, opts)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, el := range t {
			if el == nil {
				continue
			}
			s, err := x.tree(el, params, opts)
			if err != nil {
				return nil, err
			}
			nk, err := x.replace(k, params, opts)
			if err != nil {
				return nil, err
			}
			out[nk] = s
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, el := range t {
			s, err := x.tree(el, params, opts)
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	return v, nil
}

// values is TemplateTree.Values: RenderGeneratorParams' pre-resolution of a
// generator's values (missingkey=error, a missing key keeps the value).
func (x *templateExec) values(v any, params map[string]any) (any, error) {
	m, _ := v.(map[string]any)
	opts := make([]string, 0, len(x.req.Options)+1)
	for _, o := range x.req.Options {
		if !strings.HasPrefix(o, "missingkey=") {
			opts = append(opts, o)
		}
	}
	opts = append(opts, "missingkey=error")
	out := make(map[string]any, len(m))
	for k, val := range m {
		s, _ := val.(string)
		r, err := x.replace(s, params, opts)
		switch {
		case err != nil && isMissingKey(err):
			out[k] = s
		case err != nil:
			return nil, fmt.Errorf("failed to pre-resolve Values key %q: %w", k, err)
		default:
			out[k] = r
		}
	}
	return out, nil
}

func isMissingKey(err error) bool {
	return strings.Contains(err.Error(), "map has no entry for key") || strings.Contains(err.Error(), "can't evaluate field")
}

// limitError is an output limit: of one template, or (total) of the whole
// request, which is no one template's error.
type limitError struct {
	msg   string
	total bool
}

func (e *limitError) Error() string { return e.msg }

// replace executes one string (Render.Replace, applicationset/utils/utils.go).
func (x *templateExec) replace(s string, params map[string]any, opts []string) (string, error) {
	room := min(x.lim.MaxOutputBytes, x.lim.MaxTotalBytes-x.total)
	var out string
	if x.req.GoTemplate {
		t, err := x.parse(s, opts)
		if err != nil {
			return "", err
		}
		x.buf.reset(room)
		err = t.Execute(&x.buf, params)
		if x.buf.over {
			return "", x.overError(room)
		}
		if err != nil {
			return "", fmt.Errorf("failed to execute go template %s: %w", quoteTemplate(s), err)
		}
		out = x.buf.String()
	} else {
		r, over, err := fastReplace(s, params, room)
		if over {
			return "", x.overError(room)
		}
		if err != nil {
			return "", err
		}
		out = r
	}
	x.total += int64(len(out))
	return out, nil
}

func (x *templateExec) overError(room int64) error {
	if room < x.lim.MaxOutputBytes {
		return &limitError{fmt.Sprintf("the templates produce more than %d bytes in all (the limit for one ApplicationSet's templates); look for templates that generate huge values, or generators that make many parameter sets", x.lim.MaxTotalBytes), true}
	}
	return &limitError{msg: fmt.Sprintf("a template produces more than %d bytes (the limit per template output); look for templates that generate huge values", x.lim.MaxOutputBytes)}
}

// parse parses s once per request and options: a template of an ApplicationSet
// runs with every parameter set.
func (x *templateExec) parse(s string, opts []string) (*template.Template, error) {
	key := strings.Join(opts, "\x00") + "\x01" + s
	if t, ok := x.parsed[key]; ok {
		return t, nil
	}
	t, err := x.base.Clone()
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		if err := optionSafe(t, o); err != nil {
			return nil, err
		}
	}
	t, err = t.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("failed to parse template %s: %w", quoteTemplate(s), err)
	}
	x.parsed[key] = t
	return t, nil
}

// quoteTemplate quotes a template for an error, cut to its start: a template
// can be megabytes long.
func quoteTemplate(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return s
}

// optionSafe sets a text/template option, turning the panic an unknown option
// causes into an error.
func optionSafe(t *template.Template, o string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("goTemplateOptions: %v", r)
		}
	}()
	t.Option(o)
	return nil
}

// limitedBuffer is a bytes.Buffer that refuses to grow past its room: the
// template's Execute then stops with the write error.
type limitedBuffer struct {
	bytes.Buffer
	room int64
	over bool
}

var errOverLimit = errors.New("output over the limit")

func (b *limitedBuffer) reset(room int64) {
	b.Buffer.Reset()
	b.room, b.over = room, false
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.room {
		b.over = true
		return 0, errOverLimit
	}
	return b.Buffer.Write(p)
}

var isTemplated = regexp.MustCompile(".*{{.*}}.*")

// fastReplace is valyala/fasttemplate with {{ and }} as Argo CD calls it: each
// tag is trimmed and looked up; a missing or non-string parameter is left as
// written; an opening tag without a closing one is an error. over reports an
// output past room bytes.
func fastReplace(s string, params map[string]any, room int64) (_ string, over bool, _ error) {
	if !isTemplated.MatchString(s) {
		return s, int64(len(s)) > room, nil
	}
	var b strings.Builder
	rest := s
	for {
		if int64(b.Len()) > room {
			return "", true, nil
		}
		i := strings.Index(rest, "{{")
		if i < 0 {
			b.WriteString(rest)
			return b.String(), int64(b.Len()) > room, nil
		}
		b.WriteString(rest[:i])
		rest = rest[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return "", false, fmt.Errorf("invalid template: cannot find end tag=%q in the template=%s starting from %s", "}}", quoteTemplate(s), quoteTemplate(rest))
		}
		tag := rest[:j]
		rest = rest[j+2:]
		name := strings.TrimSpace(tag)
		v, ok := params[name].(string)
		switch {
		case ok && name != "" && int64(b.Len()+len(v)) > room:
			return "", true, nil
		case ok && name != "":
			b.WriteString(v)
		default:
			b.WriteString("{{" + tag + "}}")
		}
	}
}

// FastReplace is fastReplace without a limit, for tests that compare it with
// fasttemplate.
func FastReplace(s string, params map[string]any) (string, error) {
	out, _, err := fastReplace(s, params, 1<<62)
	return out, err
}

// baseTemplate carries Sprig's functions without env, expandenv and
// getHostByName, plus normalize, slugify, toYaml, fromYaml and fromYamlArray
// (argo-cd applicationset/utils/utils.go init), with the functions that take a
// size held to lim and those that make keys and certificates refused.
func baseTemplate(lim TemplateLimits) *template.Template {
	fm := sprig.GenericFuncMap()
	delete(fm, "env")
	delete(fm, "expandenv")
	delete(fm, "getHostByName")
	fm["normalize"] = SanitizeName
	fm["slugify"] = slugify
	fm["toYaml"] = func(v any) (string, error) {
		b, err := yaml.Marshal(v)
		if err != nil {
			return "", err
		}
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	fm["fromYaml"] = func(s string) (map[string]any, error) {
		m := map[string]any{}
		if err := UnmarshalYAML([]byte(s), "fromYaml", &m); err != nil {
			return nil, err
		}
		return m, nil
	}
	fm["fromYamlArray"] = func(s string) ([]any, error) {
		a := []any{}
		if err := UnmarshalYAML([]byte(s), "fromYamlArray", &a); err != nil {
			return nil, err
		}
		return a, nil
	}
	capSprig(fm, lim)
	return template.New("base").Funcs(fm)
}

// capSprig wraps the Sprig functions whose cost a template sets with a number
// (sprig/v3 functions.go): the strings repeat, randAlpha… and indent make are
// refused past the output limit, the lists until, untilStep and seq make past
// the list limit, before they are made. The functions that generate keys and
// certificates (seconds of CPU each, and a new key at every run, which no
// preview can predict) are refused.
func capSprig(fm template.FuncMap, lim TemplateLimits) {
	maxOut, maxList := lim.MaxOutputBytes, int64(lim.MaxListLen)
	size := func(fn string, n int64) error {
		if n > maxOut {
			return fmt.Errorf("%s: %d bytes is over the %d-byte limit per template output", fn, n, maxOut)
		}
		return nil
	}
	count := func(fn string, n int64) error {
		if n > maxList {
			return fmt.Errorf("%s: %d elements is over the limit of %d", fn, n, maxList)
		}
		return nil
	}
	repeat := fm["repeat"].(func(int, string) string)
	fm["repeat"] = func(n int, s string) (string, error) {
		if n < 0 {
			return "", errors.New("repeat: negative count")
		}
		if len(s) > 0 && int64(n) > maxOut/int64(len(s)) {
			return "", size("repeat", maxOut+1)
		}
		return repeat(n, s), nil
	}
	for _, name := range []string{"randAlphaNum", "randAlpha", "randAscii", "randNumeric"} {
		f := fm[name].(func(int) string)
		fm[name] = func(n int) (string, error) {
			if err := size(name, int64(n)); err != nil {
				return "", err
			}
			return f(n), nil
		}
	}
	randBytes := fm["randBytes"].(func(int) (string, error))
	fm["randBytes"] = func(n int) (string, error) {
		if err := size("randBytes", int64(n)*4/3); err != nil {
			return "", err
		}
		return randBytes(n)
	}
	for _, name := range []string{"indent", "nindent"} {
		f := fm[name].(func(int, string) string)
		fm[name] = func(n int, s string) (string, error) {
			lines := int64(strings.Count(s, "\n") + 2)
			if n > 0 && int64(n) > (maxOut-int64(len(s)))/lines {
				return "", size(name, maxOut+1)
			}
			return f(n, s), nil
		}
	}
	until := fm["until"].(func(int) []int)
	fm["until"] = func(n int) ([]int, error) {
		if err := count("until", absInt(int64(n))); err != nil {
			return nil, err
		}
		return until(n), nil
	}
	untilStep := fm["untilStep"].(func(int, int, int) []int)
	fm["untilStep"] = func(start, stop, step int) ([]int, error) {
		if err := count("untilStep", steps(int64(start), int64(stop), int64(step))); err != nil {
			return nil, err
		}
		return untilStep(start, stop, step), nil
	}
	seq := fm["seq"].(func(...int) string)
	fm["seq"] = func(p ...int) (string, error) {
		var n int64
		switch len(p) {
		case 1:
			n = absInt(int64(p[0]))
		case 2:
			n = absInt(int64(p[1]) - int64(p[0]))
		case 3:
			n = steps(int64(p[0]), int64(p[2]), int64(p[1]))
		}
		if err := count("seq", n); err != nil {
			return "", err
		}
		return seq(p...), nil
	}
	for _, name := range []string{"genPrivateKey", "genCA", "genCAWithKey", "genSelfSignedCert", "genSelfSignedCertWithKey", "genSignedCert", "genSignedCertWithKey"} {
		fm[name] = func(...any) (string, error) {
			return "", fmt.Errorf("%s is not run by driftpreview: it generates a new key at every run (so the Application it is in changes every time Argo CD renders it, and no preview can show it) and costs seconds of CPU", name)
		}
	}
}

// steps is how many numbers untilStep(start, stop, step) makes, or a bound
// of it.
func steps(start, stop, step int64) int64 {
	d := absInt(stop - start)
	s := absInt(step)
	if s == 0 {
		return 0
	}
	return d / s
}

func absInt(n int64) int64 {
	if n < 0 {
		if n == -n { // math.MinInt64
			return 1 << 62
		}
		return -n
	}
	return n
}

var invalidDNSChars = regexp.MustCompile(`[^-a-z0-9.]`)

// SanitizeName is Argo CD's SanitizeName (applicationset/utils/template_functions.go),
// the normalize function of templates: lower case, anything but [-a-z0-9.]
// becomes -, at most 253 characters, no leading or trailing - or ..
func SanitizeName(name string) string {
	name = invalidDNSChars.ReplaceAllString(strings.ToLower(name), "-")
	if len(name) > 253 {
		name = name[:253]
	}
	return strings.Trim(name, "-.")
}

var slugInvalid, slugDashes = regexp.MustCompile(`[^a-z0-9-_]`), regexp.MustCompile(`-+`)

// slugify is SlugifyName (applicationset/utils/utils.go): slugify [maxSize 50]
// [smartTruncate true] name; the name is sanitized, then made a slug the way
// gosimple/slug does for such input (. becomes -, runs of - collapse, trimmed,
// cut at a word boundary when smart truncation is on).
func slugify(args ...any) (string, error) {
	maxSize, smart, name := 50, true, ""
	for i, a := range args {
		var ok bool
		switch i {
		case len(args) - 1:
			name, ok = a.(string)
		case 0:
			maxSize, ok = a.(int)
		case 1:
			smart, ok = a.(bool)
		default:
			return "", errors.New("bad 'slugify' arguments")
		}
		if !ok {
			return "", fmt.Errorf("bad 'slugify' argument %v", a)
		}
	}
	s := slugInvalid.ReplaceAllString(SanitizeName(name), "-")
	s = strings.Trim(slugDashes.ReplaceAllString(s, "-"), "-_")
	if len(s) <= maxSize {
		return s, nil
	}
	if !smart {
		return s[:maxSize], nil
	}
	words := strings.SplitAfter(s, "-")
	if len(words[0]) > maxSize {
		return words[0][:maxSize], nil
	}
	var t string
	for _, w := range words {
		if len(t)+len(w)-1 > maxSize {
			break
		}
		t += w
	}
	return strings.Trim(t, "-"), nil
}
