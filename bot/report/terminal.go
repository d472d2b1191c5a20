package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// TextOptions are what the terminal text needs from its caller.
type TextOptions struct {
	// Color writes ANSI colours (severities, diff lines); the caller decides,
	// from --color, NO_COLOR and whether stdout is a terminal.
	Color bool
	// ShortSHA is how many characters of a commit SHA the last line shows.
	ShortSHA int
}

// Text renders r for a person at a terminal in the comment's order: the
// headline, the findings the PR introduces (the comment's words, severities in
// colour), then per target the PR changes the changed objects, each with its
// changed fields by path (FieldSummary) and its unified diff, then the
// pre-existing findings and one line per reason for the other targets. It
// has no HTML, no Markdown tables and no size budget. Every string that comes
// from the pull request, the repository or the cluster (names, messages,
// values, diffs) is written with its control characters escaped (termSafe), so
// none of them can move the cursor, retitle the window or hide a line: the
// only escape sequences in the output are the colours Text writes itself.
func Text(r *diffing.Report, opts TextOptions) string {
	if opts.ShortSHA <= 0 {
		opts.ShortSHA = DefaultOptions().ShortSHA
	}
	l := newLayout(r, Options{ShortSHA: opts.ShortSHA})
	w := &textWriter{color: opts.Color}
	w.headline(l)
	w.images(l)
	w.findings(l, l.rows[:l.nIntro], "Findings")
	for _, s := range l.shown {
		if !s.liveOnly {
			w.target(l, s)
		}
	}
	w.findings(l, l.rows[l.nIntro:], "Pre-existing findings (the base has them too; this PR does not introduce them)")
	for _, s := range l.shown {
		if s.liveOnly {
			w.target(l, s)
		}
	}
	if lines := l.reasonLines(false); len(lines) > 0 {
		w.nl()
		for _, ln := range lines {
			w.line(0, "- "+ln)
		}
	}
	w.footer(l)
	return w.b.String()
}

// Styles of the terminal text, as fatih/color attributes.
var (
	styleBold    = []color.Attribute{color.Bold}
	styleError   = []color.Attribute{color.FgRed, color.Bold}
	styleWarning = []color.Attribute{color.FgYellow, color.Bold}
	styleNote    = []color.Attribute{color.FgCyan}
	styleAdd     = []color.Attribute{color.FgGreen}
	styleDel     = []color.Attribute{color.FgRed}
	styleHunk    = []color.Attribute{color.FgCyan}
	styleFaint   = []color.Attribute{color.Faint}
	stylePlain   []color.Attribute
)

// textWriter writes the terminal text; every piece of text goes through put,
// which escapes control characters before it adds colour.
type textWriter struct {
	b     strings.Builder
	color bool
}

// put writes s on the current line, its control characters escaped and line
// breaks folded, in the given style.
func (w *textWriter) put(s string, style []color.Attribute) {
	s = termSafe(oneLine(s))
	if !w.color || len(style) == 0 || s == "" {
		w.b.WriteString(s)
		return
	}
	c := color.New(style...)
	c.EnableColor() // whatever NO_COLOR or the process's stdout say: the caller chose
	w.b.WriteString(c.Sprint(s))
}

// line writes pieces of plain text as one line.
func (w *textWriter) line(indent int, s string) {
	w.b.WriteString(strings.Repeat(" ", indent))
	w.put(s, stylePlain)
	w.b.WriteByte('\n')
}

func (w *textWriter) nl() { w.b.WriteByte('\n') }

// severityStyle and severityWord are a finding's colour and word.
func severityStyle(s diffing.Severity) []color.Attribute {
	switch s {
	case diffing.SeverityError:
		return styleError
	case diffing.SeverityWarning:
		return styleWarning
	}
	return styleNote
}

func severityWord(s diffing.Severity) string {
	switch s {
	case diffing.SeverityError:
		return "error"
	case diffing.SeverityWarning:
		return "warning"
	}
	return "note"
}

// headline is the comment's headline without its Markdown and emoji.
func (w *textWriter) headline(l *layout) {
	errs, warns, notes := l.severityCounts()
	w.put("driftpreview: ", styleBold)
	w.put(l.coverage(), styleBold)
	for _, c := range []struct {
		n         int
		one, many string
		sev       diffing.Severity
	}{{errs, "error", "errors", diffing.SeverityError}, {warns, "warning", "warnings", diffing.SeverityWarning}, {notes, "note", "notes", diffing.SeverityInfo}} {
		if c.n > 0 {
			w.put(" · ", stylePlain)
			w.put(plural(c.n, c.one, c.many), severityStyle(c.sev))
		}
	}
	switch {
	case l.nIntro > 0:
	case l.preExisting > 0:
		w.put(" · no new findings", stylePlain)
	default:
		w.put(" · no findings", stylePlain)
	}
	if l.preExisting > 0 {
		w.put(" · "+thousands(l.preExisting)+" pre-existing", stylePlain)
	}
	w.put(". ", stylePlain)
	verdict := styleBold
	if l.r.Failing {
		verdict = styleError
	}
	w.put(l.verdict(), verdict)
	w.nl()
	if n := l.liveNotice(); n != "" {
		w.nl()
		w.line(0, strings.TrimSpace(strings.NewReplacer("> ", "", "**", "", "This comment shows", "This report shows").Replace(n)))
	}
}

// images is the images summary (imagesMD) as plain lines.
func (w *textWriter) images(l *layout) {
	lines, more := l.imagesSummary(false)
	if len(lines) == 0 {
		return
	}
	w.nl()
	w.put("Images", styleBold)
	w.nl()
	for _, ln := range lines {
		w.line(2, ln)
	}
	if more > 0 {
		w.line(2, "and "+plural(more, "more image change", "more image changes"))
	}
}

// findings lists rows in the comment's order under a heading, one block each.
func (w *textWriter) findings(l *layout, rows []row, heading string) {
	if len(rows) == 0 {
		return
	}
	w.nl()
	w.put(heading, styleBold)
	w.nl()
	width := 0
	for _, rw := range rows {
		width = max(width, len(severityWord(rw.f.Severity)))
	}
	for _, rw := range rows {
		f := rw.f
		word := severityWord(f.Severity)
		w.b.WriteString("  ")
		w.put(word, severityStyle(f.Severity))
		w.b.WriteString(strings.Repeat(" ", width-len(word)+2))
		w.put(string(f.Rule), styleBold)
		if f.PreExisting {
			w.put(" (pre-existing)", styleFaint)
		}
		if l.markFailing && f.Failing {
			w.put(" (fails the check)", styleError)
		}
		var where []string
		if l.targetCol && rw.target >= 0 {
			where = append(where, "target "+l.targetName(rw.target))
		}
		switch {
		case f.Key.Kind != "" || f.Key.Name != "":
			where = append(where, f.Key.Kind+" "+objectName(f.Key))
		case rw.target >= 0 && !l.targetCol:
			where = append(where, "target "+l.targetName(rw.target))
		case rw.target < 0:
			where = append(where, ".driftpreview.yaml")
		}
		if len(where) > 0 {
			w.put("  "+strings.Join(where, ": "), stylePlain)
		}
		w.nl()
		msg := f.Message
		if msg == "" {
			msg = f.Path
		}
		// The comment's words, without its Markdown emphasis; code spans
		// keep their backticks, which mark a value off from the sentence.
		w.line(4+width, strings.ReplaceAll(msg, "**", ""))
	}
	if l.markFailing && !rows[0].f.PreExisting {
		w.nl()
		w.line(0, "(fails the check) marks the findings that fail the policy check; the others are reported only.")
	}
}

// target writes one target: what it is, then what the PR changes and what the
// merge does to the live cluster, object by object.
func (w *textWriter) target(l *layout, s *section) {
	t := s.t
	i := slices.Index(l.sections, s)
	w.nl()
	w.put("▸ "+l.targetName(i), styleBold)
	w.put(" ("+targetWhere(t)+"): "+targetCounts(t, len(s.pr)), stylePlain)
	w.nl()
	if t.Error != "" {
		w.put("  Rendering failed", styleError)
		w.put(", so this target was not compared:", stylePlain)
		w.nl()
		for _, ln := range splitLines(t.Error) {
			w.line(4, ln)
		}
	}
	if c := t.Controller; c != nil && controllerName(c) != "" {
		msg := "Deployed by " + controllerName(c) + " " + objectName(render.ObjectKey{Namespace: c.Namespace, Name: c.Name})
		if c.Source != "" {
			msg += " (declared in " + c.Source + ")"
		}
		if t.Path != "" {
			msg += " from " + t.Path
		}
		if t.Skipped == "" {
			msg += ": " + syncPolicy(c)
		}
		w.line(2, msg+".")
	}
	if t.Skipped != "" {
		w.line(2, "Not rendered: "+t.Skipped+".")
	}
	if !t.LiveChecked && t.Error == "" && t.Skipped == "" && t.NotAffected == "" {
		w.line(2, "No live comparison: "+noLiveReason(t)+".")
	}
	if len(t.Notes) > 0 {
		w.line(2, "Notes:")
		for _, n := range t.Notes {
			w.line(4, "- "+n)
		}
	}
	changes := slices.Clone(t.Changes)
	slices.SortStableFunc(changes, func(a, b diffing.Change) int { return a.Key.Compare(b.Key) })
	if len(s.pr) > 0 {
		w.nl()
		w.b.WriteString("  ")
		w.put("This PR changes (base → head)", styleBold)
		w.nl()
		for _, u := range s.pr {
			c := changes[u.idx]
			w.object(u, string(c.Action), risks(t, c.Key))
			for _, f := range FieldSummary(c) {
				w.field(f)
			}
			if c.MoreFields > 0 {
				w.line(6, "and "+plural(c.MoreFields, "more field", "more fields"))
			}
			w.diff(c.ReaderDiff())
			if line := ChartMetadataLine(c); line != "" {
				w.line(6, line)
			}
		}
	}
	if s.liveHead != "" {
		w.nl()
		w.b.WriteString("  ")
		w.put("The merge does to the live cluster", styleBold)
		how := "simulated read-only"
		if t.LiveMode == diffing.LiveDryRun {
			how = "dry-run by the API server"
		}
		if t.Manager != "" {
			how += " as " + t.Manager
		}
		w.put(" (head → live, "+how+")", stylePlain)
		w.nl()
		if s.liveNone != "" {
			w.line(4, strings.ReplaceAll(strings.TrimSpace(s.liveNone), "`", ""))
		}
		var same []string
		for _, u := range s.live {
			c := changes[u.idx]
			what := string(c.LiveAction)
			switch {
			case c.RevertsDrift:
				what = "reverts live drift"
			case what == "":
				what = "changes"
			}
			if u.same {
				same = append(same, u.key.Kind+" "+objectName(u.key)+" ("+what+")")
				continue
			}
			w.object(u, what, risks(t, c.Key))
			w.diff(c.LiveDiff)
		}
		if len(same) > 0 {
			w.line(4, "Same as the PR diff: "+strings.Join(same, ", ")+".")
		}
	}
}

// object is the line that names one changed object, with its findings' rules.
func (w *textWriter) object(u *unit, what string, rules []diffing.Rule) {
	w.b.WriteString("    ")
	w.put(u.key.Kind+" "+objectName(u.key), styleBold)
	w.put(": "+what, stylePlain)
	if len(rules) > 0 {
		names := make([]string, len(rules))
		for i, r := range rules {
			names[i] = string(r)
		}
		w.put("  ["+strings.Join(names, ", ")+"]", severityStyle(u.worst))
	}
	w.nl()
}

// field writes one FieldSummary line, the old value red and the new green.
func (w *textWriter) field(f diffing.FieldChange) {
	w.b.WriteString("      ")
	w.put(f.Path+": ", stylePlain)
	switch {
	case f.Lines > 0:
		w.put(linesChanged(f.Lines), stylePlain)
	case f.Reordered:
		w.put("reordered, ", stylePlain)
		w.put(f.Before, styleDel)
		w.put(" → ", stylePlain)
		w.put(f.After, styleAdd)
	case f.Added:
		w.put(f.After, styleAdd)
		w.put(" (added)", styleFaint)
	case f.Removed:
		w.put(f.Before, styleDel)
		w.put(" (removed)", styleFaint)
	default:
		w.put(f.Before, styleDel)
		w.put(" → ", stylePlain)
		w.put(f.After, styleAdd)
	}
	w.nl()
}

// diff writes a unified diff indented, its lines coloured by their first byte.
func (w *textWriter) diff(d string) {
	for _, ln := range splitLines(d) {
		w.b.WriteString("      ")
		style := stylePlain
		switch {
		case strings.HasPrefix(ln, "@@"):
			style = styleHunk
		case strings.HasPrefix(ln, "+"):
			style = styleAdd
		case strings.HasPrefix(ln, "-"):
			style = styleDel
		}
		w.put(ln, style)
		w.nl()
	}
}

// footer is the comment's footer in one plain line: what was compared.
func (w *textWriter) footer(l *layout) {
	r := l.r
	msg := "Compared base " + revOrUnknown(shortRev(r.Base, l.opts.ShortSHA)) + " ↔ head " + revOrUnknown(shortRev(r.Head, l.opts.ShortSHA))
	var clusters []string
	for i := range r.Targets {
		if t := &r.Targets[i]; t.LiveChecked && t.Cluster != "" && !slices.Contains(clusters, t.Cluster) {
			clusters = append(clusters, t.Cluster)
		}
	}
	switch len(clusters) {
	case 0:
	case 1:
		msg += " ↔ live cluster " + clusters[0]
	default:
		msg += " ↔ live clusters " + strings.Join(clusters, ", ")
	}
	if !r.GeneratedAt.IsZero() {
		msg += " at " + r.GeneratedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	w.nl()
	w.b.WriteString(w.faint(msg + "."))
	w.nl()
}

func (w *textWriter) faint(s string) string {
	var t textWriter
	t.color = w.color
	t.put(s, styleFaint)
	return t.b.String()
}

// FieldSummary is a modified object's changed fields, one line each, keyed by
// path: "spec.replicas: 2 → 3", "metadata.labels.team: x (added)". It is
// built from Change.Fields (the masked objects the diff shows) and writes no
// markup: a writer escapes the lines for its medium. Created, deleted and
// unchanged objects have none.
func FieldSummary(c diffing.Change) []diffing.FieldChange {
	if c.Action != diffing.ActionModified {
		return nil
	}
	return c.Fields
}

// linesChanged is a multi-line string's change in the changed fields: the
// diff below shows its lines.
func linesChanged(n int) string {
	return plural(n, "line", "lines") + " changed (see the diff)"
}

// FieldLine writes one FieldChange as plain text.
func FieldLine(f diffing.FieldChange) string {
	switch {
	case f.Lines > 0:
		return f.Path + ": " + linesChanged(f.Lines)
	case f.Reordered:
		return f.Path + ": reordered, " + f.Before + " → " + f.After
	case f.Added:
		return f.Path + ": " + f.After + " (added)"
	case f.Removed:
		return f.Path + ": " + f.Before + " (removed)"
	}
	return f.Path + ": " + f.Before + " → " + f.After
}

// risks lists the rules of a target's findings about one object, sorted.
func risks(t *diffing.TargetReport, k render.ObjectKey) []diffing.Rule {
	var out []diffing.Rule
	for _, f := range t.Findings {
		if f.Key == k && !slices.Contains(out, f.Rule) {
			out = append(out, f.Rule)
		}
	}
	slices.SortFunc(out, func(a, b diffing.Rule) int { return cmp.Compare(a, b) })
	return out
}

// targetWhere says where a target comes from and deploys to, without markup.
func targetWhere(t *diffing.TargetReport) string {
	var where string
	if c := t.Controller; c != nil && controllerName(c) != "" {
		where = controllerName(c) + " " + c.Name
		if t.Skipped == "" {
			where += ", " + syncPolicy(c)
		}
	} else {
		where = t.Path
	}
	if t.Cluster != "" {
		where += " → cluster " + t.Cluster
	}
	return where
}

// targetCounts is the section summary's counts, as the comment writes them.
func targetCounts(t *diffing.TargetReport, changed int) string {
	switch {
	case t.Error != "":
		return "render failed"
	case t.Skipped != "":
		return "not rendered"
	case t.NotAffected != "":
		return "not affected"
	case changed == 0:
		return "no changes"
	}
	return summaryCounts(t.Summary, changed)
}

// splitLines splits text into lines, without a last empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(strings.ReplaceAll(s, "\r\n", "\n"), "\n"), "\n")
}

// termSafe escapes what a terminal would act on rather than show: C0 control
// characters other than tab (ESC starts every escape sequence, BEL ends an
// OSC title, CR and BS overwrite what was written), DEL, the C1 controls
// (U+0080–U+009F: U+009B is a one-character CSI on some terminals), the
// bidirectional overrides and isolates that reorder a line as shown, and
// bytes that are not UTF-8. Each is written as a Go escape (\x1b, \u202e),
// so a reader sees that it was there.
func termSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\t'
	case r == 0x7f, 0x80 <= r && r <= 0x9f:
		return true
	case 0x202a <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}
