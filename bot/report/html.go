package report

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/driftpreview/driftpreview/diffing"
)

// The page's template, style and script, embedded so the page is one file that
// fetches nothing: no stylesheet, script, font or image of its own comes from
// the network.
var (
	//go:embed page/report.html.tmpl
	pageTemplate string
	//go:embed page/report.css
	pageCSS string
	//go:embed page/report.js
	pageJS string
)

// PageCSP is the page's Content-Security-Policy (in its <meta>): its own style
// and script, by their hashes, and nothing else: no fetch, image, frame, form
// target or other script, so even a value that escaped its escaping could not
// load or send anything. A server sending the page sends it as a header too.
var PageCSP = "default-src 'none'; style-src " + cspHash(pageCSS) + "; script-src " + cspHash(pageJS) +
	"; img-src data:; form-action 'none'; base-uri 'none'"

func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// pageTmpl is parsed on first use, not at every start of the program (most
// runs write no HTML page; issue 25).
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"sevClass": func(s diffing.Severity) string { return s.String() },
		"plural":   plural,
	}).Parse(pageTemplate))
})

// HTML renders r as one self-contained HTML page: every target, finding and diff,
// with no size budget, filters by target, kind, rule and action, and unified and
// side-by-side diff views. It is what `preview --format html` writes and what the
// bot links from the comment when the comment cannot hold everything.
//
// Every string of the report reaches the page through html/template, which
// escapes it for its context; the style and the script are the embedded
// constants of page/, and the page's Content-Security-Policy forbids loading
// anything else, so the page works, and stays inert, offline. Secret values are
// masked by diffing before a Change leaves it, as for every other output. Output
// is deterministic: the same Report gives the same bytes.
func HTML(r *diffing.Report) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("rendering the HTML report: no report")
	}
	p := newHTMLPage(r)
	var b bytes.Buffer
	if err := pageTmpl().Execute(&b, p); err != nil {
		return nil, fmt.Errorf("rendering the HTML report: %w", err)
	}
	return b.Bytes(), nil
}

// htmlPage is what the template shows: the report flattened into rows, with the
// values of the filters.
type htmlPage struct {
	Title, Headline string
	Base, Head      string
	Generated       string
	Failing         bool
	Errors          int
	Warnings        int
	Notes           int
	RunNotes        []string
	Findings        []htmlFinding
	Targets         []htmlTarget
	Objects         int
	// The filters' choices: targets by index, kinds, rules and actions.
	TargetChoices          []htmlChoice
	Kinds, Rules, Actions  []string
	CSS                    template.CSS
	JS                     template.JS
	CSP                    string
	FailingMark, PreMarked bool
}

type htmlChoice struct{ Value, Label string }

type htmlFinding struct {
	Severity    diffing.Severity
	Rule        string
	Target      string // index into Targets; "" for a finding of the whole run
	TargetName  string
	Object      string
	Kind        string
	Action      string // the object's change in its target; "" when none
	Path        string
	Manager     string
	Message     []htmlSpan
	Failing     bool
	PreExisting bool
}

// htmlSpan is a piece of a finding's message: its code spans and bold text
// kept as elements, the rest as text.
type htmlSpan struct {
	Text       string
	Code, Bold bool
}

type htmlTarget struct {
	Index      string
	Name       string
	Where      string
	Counts     string
	Worst      diffing.Severity
	Error      string
	Skipped    string
	NotAffect  string
	NoLive     string
	Controller string
	Notes      []string
	Changes    []htmlChange
}

type htmlChange struct {
	Object     string
	Kind       string
	Action     string
	LiveAction string
	Rules      string // space-separated, for the rule filter
	RuleList   []string
	Worst      diffing.Severity
	HasRisk    bool
	Source     string
	Fields     []string
	MoreFields int
	Ignored    int
	PR         *htmlDiff
	Live       *htmlDiff
	LiveSame   bool
	Reverts    bool
}

// htmlDiff is one unified diff, as lines for the unified view and as rows of
// old and new for the side-by-side view.
type htmlDiff struct {
	Lines []diffLine
	Rows  []diffRow
}

type diffLine struct {
	Op       string // "ctx", "del", "add", "hunk"
	Old, New string // line numbers; "" where a side has none
	Text     string
}

type diffRow struct {
	Hunk     string
	Old, New *diffLine
}

func newHTMLPage(r *diffing.Report) *htmlPage {
	p := &htmlPage{
		Headline: Title(r),
		Base:     revOrUnknown(r.Base),
		Head:     revOrUnknown(r.Head),
		Failing:  r.Failing,
		RunNotes: r.Notes,
		CSS:      template.CSS(pageCSS),
		JS:       template.JS(pageJS),
		CSP:      PageCSP,
	}
	p.Title = "driftpreview: " + revOrUnknown(shortRev(r.Base, 7)) + " → " + revOrUnknown(shortRev(r.Head, 7))
	if !r.GeneratedAt.IsZero() {
		p.Generated = r.GeneratedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	kinds, rules, actions := map[string]bool{}, map[string]bool{}, map[string]bool{}
	addFinding := func(f diffing.Finding, target string, tname string, t *diffing.TargetReport) {
		hf := htmlFinding{
			Severity: f.Severity, Rule: string(f.Rule), Target: target, TargetName: tname,
			Kind: f.Key.Kind, Path: f.Path, Manager: f.Manager, Message: messageSpans(f.Message),
			Failing: f.Failing, PreExisting: f.PreExisting,
		}
		if f.Key.Kind != "" || f.Key.Name != "" {
			hf.Object = f.Key.Kind + " " + objectName(f.Key)
		}
		if t != nil {
			if i := slices.IndexFunc(t.Changes, func(c diffing.Change) bool { return c.Key == f.Key }); i >= 0 {
				hf.Action = string(t.Changes[i].Action)
			}
		}
		switch f.Severity {
		case diffing.SeverityError:
			p.Errors++
		case diffing.SeverityWarning:
			p.Warnings++
		default:
			p.Notes++
		}
		p.FailingMark = p.FailingMark || f.Failing
		p.PreMarked = p.PreMarked || f.PreExisting
		if hf.Kind != "" {
			kinds[hf.Kind] = true
		}
		rules[hf.Rule] = true
		p.Findings = append(p.Findings, hf)
	}
	for _, f := range stableFindings(r.Findings) {
		addFinding(f, "", "", nil)
	}
	for i := range r.Targets {
		t := &r.Targets[i]
		idx := strconv.Itoa(i)
		name := t.Name
		if t.Cluster != "" && slices.ContainsFunc(r.Targets, func(o diffing.TargetReport) bool { return o.Name == t.Name && o.Cluster != t.Cluster }) {
			name += "@" + t.Cluster
		}
		p.TargetChoices = append(p.TargetChoices, htmlChoice{Value: idx, Label: name})
		for _, f := range stableFindings(t.Findings) {
			addFinding(f, idx, name, t)
		}
		ht := htmlTarget{Index: idx, Name: name, Where: targetWhere(t), Worst: t.Worst,
			Error: t.Error, Skipped: t.Skipped, NotAffect: t.NotAffected, Notes: t.Notes}
		if !t.LiveChecked && t.Error == "" && t.Skipped == "" && t.NotAffected == "" {
			ht.NoLive = noLiveReason(t)
		}
		changes := slices.Clone(t.Changes)
		slices.SortStableFunc(changes, func(a, b diffing.Change) int { return a.Key.Compare(b.Key) })
		for _, c := range changes {
			if c.Diff == "" && c.LiveDiff == "" && c.Action == diffing.ActionUnchanged {
				continue
			}
			hc := htmlChange{Object: c.Key.Kind + " " + objectName(c.Key), Kind: c.Key.Kind, Action: string(c.Action),
				LiveAction: string(c.LiveAction), Source: c.Source, MoreFields: c.MoreFields, Ignored: c.IgnoredLines, Reverts: c.RevertsDrift}
			for _, rule := range risks(t, c.Key) {
				hc.RuleList = append(hc.RuleList, string(rule))
			}
			hc.Rules = strings.Join(hc.RuleList, " ")
			for _, f := range t.Findings {
				if f.Key == c.Key {
					hc.Worst = max(hc.Worst, f.Severity)
					hc.HasRisk = true
				}
			}
			for _, f := range FieldSummary(c) {
				hc.Fields = append(hc.Fields, FieldLine(f))
			}
			if c.Diff != "" {
				hc.PR = parseDiff(c.Diff)
			}
			if c.LiveDiff != "" {
				if c.Diff != "" && sameChanges(c.Diff, c.LiveDiff) {
					hc.LiveSame = true
				} else {
					hc.Live = parseDiff(c.LiveDiff)
				}
			}
			kinds[hc.Kind] = true
			actions[hc.Action] = true
			ht.Changes = append(ht.Changes, hc)
		}
		p.Objects += len(ht.Changes)
		ht.Counts = targetCounts(t, len(ht.Changes))
		p.Targets = append(p.Targets, ht)
	}
	p.Kinds = sortedKeys(kinds)
	p.Rules = sortedKeys(rules)
	// Actions in the contract's order, not the alphabet's.
	for _, a := range []diffing.Action{diffing.ActionCreated, diffing.ActionModified, diffing.ActionDeleted, diffing.ActionUnchanged} {
		if actions[string(a)] {
			p.Actions = append(p.Actions, string(a))
		}
	}
	return p
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// messageSpans splits a finding's message, which diffing writes as Markdown
// (code spans by mdtext.Code, **bold**), into text, code and bold pieces for the
// template to escape. A code span is a run of n backticks up to the next run of
// exactly n (CommonMark 6.1), its one padding space on each side stripped; a
// backtick run without its closer is text.
func messageSpans(msg string) []htmlSpan {
	var out []htmlSpan
	text := func(s string) {
		if strings.Count(s, "**")%2 == 1 {
			out = append(out, htmlSpan{Text: s}) // no pairs: all text
			return
		}
		for i, part := range strings.Split(s, "**") {
			if part != "" {
				out = append(out, htmlSpan{Text: part, Bold: i%2 == 1})
			}
		}
	}
	for msg != "" {
		i := strings.IndexByte(msg, '`')
		if i < 0 {
			text(msg)
			break
		}
		n := i
		for n < len(msg) && msg[n] == '`' {
			n++
		}
		run := n - i
		end, closeLen := closingRun(msg[n:], run)
		if end < 0 {
			text(msg[:n])
			msg = msg[n:]
			continue
		}
		text(msg[:i])
		code := msg[n : n+end]
		if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.Trim(code, " ") != "" {
			code = code[1 : len(code)-1]
		}
		out = append(out, htmlSpan{Text: code, Code: true})
		msg = msg[n+end+closeLen:]
	}
	return out
}

// closingRun finds the first run of exactly n backticks in s: its offset and
// length, or -1.
func closingRun(s string, n int) (int, int) {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return i, n
		}
		i = j
	}
	return -1, 0
}

// parseDiff reads a unified diff as diffing writes it (lines of " ", "-", "+"
// and "@@ -l,n +l,n @@" hunk headers; a whole created or deleted object has
// none and starts at line 1) into numbered lines and side-by-side rows: a run of
// removed lines faces the run of added lines that follows it.
func parseDiff(d string) *htmlDiff {
	out := &htmlDiff{}
	oldN, newN := 1, 1
	var dels, adds []*diffLine
	flush := func() {
		for i := range max(len(dels), len(adds)) {
			var row diffRow
			if i < len(dels) {
				row.Old = dels[i]
			}
			if i < len(adds) {
				row.New = adds[i]
			}
			out.Rows = append(out.Rows, row)
		}
		dels, adds = nil, nil
	}
	for _, ln := range splitLines(d) {
		if strings.HasPrefix(ln, "@@") {
			flush()
			if o, n, ok := hunkStarts(ln); ok {
				oldN, newN = o, n
			}
			out.Lines = append(out.Lines, diffLine{Op: "hunk", Text: ln})
			out.Rows = append(out.Rows, diffRow{Hunk: ln})
			continue
		}
		op, body := byte(' '), ln
		if ln != "" {
			op, body = ln[0], ln[1:]
		}
		l := diffLine{Text: body}
		switch op {
		case '-':
			l.Op, l.Old = "del", strconv.Itoa(oldN)
			oldN++
		case '+':
			l.Op, l.New = "add", strconv.Itoa(newN)
			newN++
		default:
			if op != ' ' {
				body = ln // not a diff line: show it whole
				l.Text = body
			}
			l.Op, l.Old, l.New = "ctx", strconv.Itoa(oldN), strconv.Itoa(newN)
			oldN++
			newN++
		}
		out.Lines = append(out.Lines, l)
		lp := &l // the row's own copy
		switch l.Op {
		case "del":
			if len(adds) > 0 {
				flush()
			}
			dels = append(dels, lp)
		case "add":
			adds = append(adds, lp)
		default:
			flush()
			out.Rows = append(out.Rows, diffRow{Old: lp, New: lp})
		}
	}
	flush()
	return out
}

// hunkStarts reads the first old and new line numbers of "@@ -l,n +l,n @@".
func hunkStarts(h string) (oldStart, newStart int, ok bool) {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, false
	}
	num := func(s string) (int, bool) {
		s, _, _ = strings.Cut(s[1:], ",")
		n, err := strconv.Atoi(s)
		return n, err == nil
	}
	o, ok1 := num(f[1])
	n, ok2 := num(f[2])
	return max(o, 1), max(n, 1), ok1 && ok2
}
