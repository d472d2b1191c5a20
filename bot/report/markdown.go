package report

import (
	"slices"
	"sort"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// Markdown renders r as one comment of at most opts.MaxChars bytes. Over budget it
// cuts pre-existing findings and notes first, then diffs, least risky and largest
// first, and says so and where the rest is; it never drops a finding the PR
// introduces unless those alone do not fit, and then it says how many it left out
// (Pages keeps them all).
func Markdown(r *diffing.Report, opts Options) string {
	l := newLayout(r, opts)
	if !l.fit() {
		// Last resort: leave out the least severe findings, with a note.
		n := l.nIntro
		k := sort.Search(n+1, func(k int) bool {
			l.hiddenRows = k
			return l.size() <= l.opts.MaxChars
		})
		l.hiddenRows = min(k, n)
	}
	return hardLimit(l.join(l.opts.Marker+"\n", l.blocks()), l.opts.MaxChars)
}

// block is one unit of layout that a page break may not split.
type block struct {
	text string
	sec  *section
	row  bool
	idx  int // the row's index in layout.rows
}

func (b block) String() string {
	if b.sec != nil {
		return b.sec.text()
	}
	return b.text
}

// blocks lists the comment's parts in order: the headline, the findings the PR
// introduces, the targets it changes, then the pre-existing findings, the
// targets the merge changes only live (drift it reverts), and one line per
// reason for the targets it has no section for (issue 23).
func (l *layout) blocks() []block {
	bs := []block{{text: l.headline()}}
	if s := l.imagesMD(); s != "" {
		bs = append(bs, block{text: s})
	}
	if s := reportLink(l.opts); s != "" {
		bs = append(bs, block{text: s})
	}
	if s := liveSinceMD(l.opts.LiveSince); s != "" {
		bs = append(bs, block{text: s})
	}
	if n := l.liveNotice(); n != "" {
		bs = append(bs, block{text: n})
	}
	shown := l.nIntro - l.hiddenRows
	for i := range shown {
		bs = append(bs, block{text: l.rowTexts[i], row: true, idx: i})
	}
	if l.markFailing && shown > 0 {
		bs = append(bs, block{text: "\n🚫 marks the findings that fail the policy check; the others are reported only.\n"})
	}
	if l.hiddenRows > 0 {
		bs = append(bs, block{text: "\n**" + plural(l.hiddenRows, "more finding", "more findings") +
			" not shown** to fit the " + thousands(l.opts.MaxChars) + "-character limit (the least severe); " + l.restAt() + ".\n"})
	}
	if n := l.cutNote(); n != "" {
		bs = append(bs, block{text: n})
	}
	for _, s := range l.shown {
		if !s.liveOnly {
			bs = append(bs, block{sec: s})
		}
	}
	bs = append(bs, l.preBlocks()...)
	cut := 0
	for _, s := range l.shown {
		switch {
		case !s.liveOnly:
		case s.collapsed:
			cut++ // a summary line each would crowd out the PR's diffs
		default:
			bs = append(bs, block{sec: s})
		}
	}
	if cut > 0 {
		bs = append(bs, block{text: "\n_The live diffs of " + plural(cut, "target", "targets") +
			" this PR does not change (live drift the merge reverts) were cut to fit._\n"})
	}
	if n := l.notCompared(); n != "" {
		bs = append(bs, block{text: n})
	}
	return append(bs, block{text: l.footer()})
}

// preWhy says what a pre-existing finding is.
const preWhy = "findings the base has too (the same rule on the same object and field, or the same render error): this PR does not introduce them, so they never fail the check"

// preBlocks are the pre-existing findings: collapsed under one summary line, or
// under a heading in Pages' layout (a page break may fall between rows).
func (l *layout) preBlocks() []block {
	n := len(l.rows) - l.nIntro
	shown := n - l.hiddenPre
	if shown <= 0 {
		return nil
	}
	var bs []block
	what := plural(n, "pre-existing finding", "pre-existing findings")
	if shown < n {
		what = thousands(shown) + " of " + what
	}
	if l.paged {
		bs = append(bs, block{text: "\n**" + what + "**: " + preWhy + ".\n"})
	} else {
		bs = append(bs, block{text: "\n<details><summary>" + what + "</summary>\n\n" + capitalize(preWhy) + ".\n"})
	}
	for i := l.nIntro; i < l.nIntro+shown; i++ {
		bs = append(bs, block{text: l.rowTexts[i], row: true, idx: i})
	}
	if !l.paged {
		bs = append(bs, block{text: "\n</details>\n"})
	}
	return bs
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// restAt says where a reader finds what the comment leaves out.
func (l *layout) restAt() string {
	if reportLink(l.opts) != "" {
		return "the full report linked above has all of it"
	}
	return "run `driftpreview preview` locally for all of it"
}

// join writes blocks after prefix, opening the findings table before its first row.
func (l *layout) join(prefix string, bs []block) string {
	var b strings.Builder
	b.WriteString(prefix)
	prevRow := false
	for _, bl := range bs {
		if bl.row && !prevRow {
			b.WriteString(l.tableHeader())
		}
		b.WriteString(bl.String())
		prevRow = bl.row
	}
	return b.String()
}

// severityCounts is how many findings the PR introduces of each severity; the
// headlines start from them, and count the pre-existing ones apart.
func (l *layout) severityCounts() (errs, warns, notes int) {
	for _, rw := range l.rows[:l.nIntro] {
		switch rw.f.Severity {
		case diffing.SeverityError:
			errs++
		case diffing.SeverityWarning:
			warns++
		default:
			notes++
		}
	}
	return errs, warns, notes
}

// headline is the verdict a reader sees first.
func (l *layout) headline() string {
	errs, warns, notes := l.severityCounts()
	parts := []string{l.coverage()}
	if errs > 0 {
		parts = append(parts, "🔴 "+plural(errs, "error", "errors"))
	}
	if warns > 0 {
		parts = append(parts, "🟠 "+plural(warns, "warning", "warnings"))
	}
	if notes > 0 {
		parts = append(parts, "⚪ "+plural(notes, "note", "notes"))
	}
	switch {
	case l.nIntro > 0:
	case l.preExisting > 0:
		parts = append(parts, "✅ no new findings")
	default:
		parts = append(parts, "✅ no findings")
	}
	if l.preExisting > 0 {
		parts = append(parts, thousands(l.preExisting)+" pre-existing")
	}
	return "### driftpreview: " + strings.Join(parts, " · ") + ". " + l.verdict() + "\n"
}

// verdict is the headline's last sentence: what the policy says of the merge.
func (l *layout) verdict() string {
	_, notCompared := l.r.Coverage()
	switch {
	case l.r.Failing:
		return "Policy blocks this merge."
	case l.r.NothingCompared():
		// Never "safe": nothing was looked at.
		return "This PR is not judged."
	case l.nIntro == 0 && l.preExisting == 0 && !l.anyChange():
		return "No changes."
	case notCompared > 0:
		return "Safe to merge by policy for the targets compared."
	case l.preExisting > 0:
		return "Safe to merge by policy: nothing this PR introduces fails it."
	}
	return "Safe to merge by policy."
}

// coverage is the headline's first part: how many targets, and how many of them
// could not be compared ("3 targets (1 not rendered)", "nothing compared: 2
// targets not rendered").
func (l *layout) coverage() string {
	compared, notCompared := l.r.Coverage()
	switch {
	case compared == 0 && notCompared > 0:
		return "nothing compared: " + plural(notCompared, "target", "targets") + " not rendered"
	case l.r.NothingCompared():
		return "nothing compared: `.driftpreview.yaml` is invalid"
	case compared+notCompared == 0:
		return "no targets"
	case notCompared > 0:
		return plural(compared+notCompared, "target", "targets") + " (" + thousands(notCompared) + " not rendered)"
	}
	return plural(compared, "target", "targets")
}

func (l *layout) anyChange() bool {
	for _, s := range l.sections {
		if !s.unaffected {
			return true
		}
	}
	return false
}

// maxNoticeNames is how many targets the live notice names per reason.
const maxNoticeNames = 5

// liveNotice says up top which targets were not compared with the live cluster,
// since the comment then cannot speak for what the merge does there.
func (l *layout) liveNotice() string {
	// It depends on the targets only, and fit measures the comment many times.
	if l.notice == nil {
		n := l.makeLiveNotice()
		l.notice = &n
	}
	return *l.notice
}

func (l *layout) makeLiveNotice() string {
	var reasons []string
	byReason := map[string][]string{}
	total := 0
	for i := range l.r.Targets {
		t := &l.r.Targets[i]
		if t.LiveChecked || t.Error != "" || t.Skipped != "" || t.NotAffected != "" {
			continue
		}
		why := noLiveReason(t)
		if _, ok := byReason[why]; !ok {
			reasons = append(reasons, why)
		}
		byReason[why] = append(byReason[why], codeSpan(l.targetName(i)))
		total++
	}
	if total == 0 {
		return ""
	}
	var parts []string
	for _, why := range reasons {
		names := byReason[why]
		switch {
		case len(l.r.Targets) == 1:
			parts = append(parts, why)
		case len(names) == len(l.r.Targets):
			parts = append(parts, why+" for all targets")
		case len(names) > maxNoticeNames:
			parts = append(parts, why+" for "+strings.Join(names[:maxNoticeNames], ", ")+
				" and "+thousands(len(names)-maxNoticeNames)+" more targets")
		default:
			parts = append(parts, why+" for "+strings.Join(names, ", "))
		}
	}
	scope := "This comment shows"
	if total < len(l.r.Targets) {
		scope = "For those targets it shows"
	}
	return "\n> **No live comparison:** " + strings.Join(parts, "; ") + ". " + scope +
		" only what the PR changes in git, not what the merge does to the cluster.\n"
}

func (l *layout) tableHeader() string {
	if l.targetCol {
		return "\n| | finding | target | object | what happens on merge |\n|---|---|---|---|---|\n"
	}
	return "\n| | finding | object | what happens on merge |\n|---|---|---|---|\n"
}

func (l *layout) rowText(rw row) string {
	f := rw.f
	sev := sevEmoji(f.Severity)
	if l.markFailing && f.Failing {
		sev += " 🚫"
	}
	var object string
	switch {
	case f.Key.Kind != "" || f.Key.Name != "":
		object = objectMD(f.Key)
	case rw.target >= 0:
		object = "target " + codeSpan(l.targetName(rw.target))
	default:
		object = codeSpan(".driftpreview.yaml")
	}
	msg := f.Message
	if msg == "" {
		msg = f.Path
	}
	rule := codeSpan(string(f.Rule))
	if f.PreExisting {
		rule += " _pre-existing_"
	}
	cells := []string{sev, rule}
	if l.targetCol {
		target := "—"
		if rw.target >= 0 {
			target = text(l.targetName(rw.target))
		}
		cells = append(cells, target)
	}
	cells = append(cells, object, inlineMD(msg))
	for i := range cells {
		cells[i] = cell(cells[i])
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// footer says exactly what was compared, how to re-run and how to silence a
// finding properly.
func (l *layout) footer() string {
	r := l.r
	var b strings.Builder
	b.WriteString("\n<sub>Compared base " + codeSpan(revOrUnknown(shortRev(r.Base, l.opts.ShortSHA))) +
		" ↔ head " + codeSpan(revOrUnknown(shortRev(r.Head, l.opts.ShortSHA))))
	var clusters, modes []string
	ignoredF, ignoredL := 0, 0
	fromArgo := false // an Application's ignoreDifferences hid something
	for i := range r.Targets {
		t := &r.Targets[i]
		ignoredF += t.Summary.IgnoredFindings
		ignoredL += t.Summary.IgnoredLines
		if c := t.Controller; c != nil && c.Kind == "Application" && t.Summary.IgnoredFindings+t.Summary.IgnoredLines > 0 {
			fromArgo = true
		}
		if !t.LiveChecked {
			continue
		}
		if c := codeSpan(t.Cluster); t.Cluster != "" && !slices.Contains(clusters, c) {
			clusters = append(clusters, c)
		}
		mode := "simulate (read-only)"
		if t.LiveMode == diffing.LiveDryRun {
			mode = "dry-run (server-side apply, dryRun=All)"
		}
		if !slices.Contains(modes, mode) {
			modes = append(modes, mode)
		}
	}
	switch len(clusters) {
	case 0:
	case 1:
		b.WriteString(" ↔ live cluster " + clusters[0])
	default:
		b.WriteString(" ↔ live clusters " + strings.Join(clusters, ", "))
	}
	if !r.GeneratedAt.IsZero() {
		b.WriteString(" at " + r.GeneratedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	b.WriteString(".")
	if len(modes) > 0 {
		b.WriteString(" Live mode: " + strings.Join(modes, ", ") + ".")
	} else {
		b.WriteString(" No live comparison.")
	}
	var hid []string
	if ignoredF > 0 {
		hid = append(hid, plural(ignoredF, "finding", "findings"))
	}
	if ignoredL > 0 {
		hid = append(hid, plural(ignoredL, "line", "lines"))
	}
	if len(hid) > 0 {
		who := "Ignore rules"
		if l.opts.IgnoreRules > 0 {
			who = plural(l.opts.IgnoreRules, "ignore rule", "ignore rules")
		}
		see := "`.driftpreview.yaml`"
		if fromArgo {
			see += " and the Argo CD Applications' `ignoreDifferences`"
		}
		b.WriteString(" " + who + " hid " + strings.Join(hid, " and ") + " (see " + see + ").")
	}
	b.WriteString("\n")
	hint := l.opts.RerunHint
	if hint == "" {
		hint = "Re-run `driftpreview preview` to refresh."
		if len(clusters) > 0 {
			hint = "Re-run `driftpreview preview` to refresh against the live cluster."
		}
	}
	b.WriteString(oneLine(hint) + " To accept a finding, add an ignore rule with a `reason` and an `expires` date.</sub>\n")
	return b.String()
}

func revOrUnknown(rev string) string {
	if rev == "" {
		return "unknown"
	}
	return rev
}
