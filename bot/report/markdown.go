package report

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// Markdown renders r as one comment of at most opts.MaxChars bytes. Over budget it
// cuts diffs, least risky and largest first, and says so; it never drops a finding
// unless the findings alone do not fit, and then it says how many it left out (Pages
// keeps them all).
func Markdown(r *diffing.Report, opts Options) string {
	l := newLayout(r, opts)
	if !l.fit() {
		// Last resort: leave out the least severe findings, with a note.
		n := len(l.rows)
		k := sort.Search(n+1, func(k int) bool {
			l.hiddenRows = k
			return l.size() <= l.opts.MaxChars
		})
		l.hiddenRows = min(k, n)
	}
	return hardLimit(l.join(l.opts.Marker+"\n", l.blocks()), l.opts.MaxChars)
}

// Pages renders r as one or more comments of at most opts.MaxChars bytes each. It
// returns Markdown's single comment when the findings fit in one; otherwise the
// first page holds the marker, the headline and the findings table, which runs on
// over the following pages, then the targets and the footer. Every follow-up page
// starts with its own marker ("<!-- driftpreview:sticky v1 page N -->") and
// "(continued N/M)", so an adapter can update each page in place.
func Pages(r *diffing.Report, opts Options) []string {
	l := newLayout(r, opts)
	if l.fit() {
		return []string{hardLimit(l.join(l.opts.Marker+"\n", l.blocks()), l.opts.MaxChars)}
	}
	// All diffs are cut by now (fit went through every step); the targets get
	// their summaries back, since they may take pages of their own.
	for _, s := range l.sections {
		s.collapsed = false
	}
	return l.paginate()
}

// block is one unit of layout that a page break may not split.
type block struct {
	text string
	sec  *section
	row  bool
	idx  int // the row's index in layout.rows
}

func (b block) size() int {
	if b.sec != nil {
		return b.sec.size()
	}
	return len(b.text)
}

func (b block) String() string {
	if b.sec != nil {
		return b.sec.text()
	}
	return b.text
}

// blocks lists the comment's parts in order, risk first.
func (l *layout) blocks() []block {
	bs := []block{{text: l.headline()}}
	if n := l.liveNotice(); n != "" {
		bs = append(bs, block{text: n})
	}
	shown := len(l.rows) - l.hiddenRows
	for i := range shown {
		bs = append(bs, block{text: l.rowTexts[i], row: true, idx: i})
	}
	if l.markFailing && shown > 0 {
		bs = append(bs, block{text: "\n🚫 marks the findings that fail the policy check; the others are reported only.\n"})
	}
	if l.preExisting > 0 && shown > 0 {
		bs = append(bs, block{text: "\n_pre-existing_ marks findings the base already has (the same rule on the same object and field, or the same render error): this PR does not introduce them, so they never fail the check.\n"})
	}
	if l.hiddenRows > 0 {
		bs = append(bs, block{text: "\n**" + plural(l.hiddenRows, "more finding", "more findings") +
			" not shown** to fit the " + thousands(l.opts.MaxChars) + "-character limit (the least severe); run `driftpreview preview --format json` for all of them.\n"})
	}
	if n := l.cutNote(); n != "" {
		bs = append(bs, block{text: n})
	}
	for _, s := range l.sections {
		bs = append(bs, block{sec: s})
	}
	return append(bs, block{text: l.footer()})
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

// size is len(l.join(marker, l.blocks())) without building the text.
func (l *layout) size() int {
	n := len(l.opts.Marker) + 1
	prevRow := false
	for _, bl := range l.blocks() {
		if bl.row && !prevRow {
			n += len(l.tableHeader())
		}
		n += bl.size()
		prevRow = bl.row
	}
	return n
}

// fit cuts diffs until the comment fits MaxChars: first it replaces diffs by the
// object's name, least risky and largest first, then names by a count, then
// collapses whole targets to their summary line. It reports whether that was
// enough; it never touches the findings.
func (l *layout) fit() bool {
	limit := l.opts.MaxChars
	if l.size() <= limit {
		return true
	}
	var diffs []*unit
	for _, u := range l.units {
		if u.full != "" {
			diffs = append(diffs, u)
		}
	}
	secs := slices.Clone(l.sections)
	slices.SortStableFunc(secs, func(a, b *section) int {
		return cmp.Or(cmp.Compare(a.worst, b.worst), boolCmp(a.failing, b.failing), -cmp.Compare(a.size(), b.size()))
	})
	steps := []struct {
		n     int
		apply func(i int, on bool)
	}{
		{len(diffs), func(i int, on bool) {
			diffs[i].state = stateFull
			if on {
				diffs[i].state = stateListed
			}
		}},
		{len(l.units), func(i int, on bool) {
			l.units[i].state = stateListed
			if on {
				l.units[i].state = stateCounted
			}
		}},
		{len(secs), func(i int, on bool) { secs[i].collapsed = on }},
	}
	for _, st := range steps {
		set := func(k int) {
			for i := 0; i < st.n; i++ {
				st.apply(i, i < k)
			}
		}
		// Each cut shrinks the comment, so the fewest cuts that fit are found by
		// bisection rather than by measuring after every single cut.
		k := sort.Search(st.n+1, func(k int) bool {
			set(k)
			return l.size() <= limit
		})
		for k < st.n {
			set(k)
			if l.size() <= limit {
				return true
			}
			k++ // not monotonic after all: keep cutting one by one
		}
		set(st.n)
		if l.size() <= limit {
			return true
		}
	}
	return false
}

// severityCounts is how many findings the layout holds of each severity; the
// headline and Title both start from them.
func (l *layout) severityCounts() (errs, warns, notes int) {
	for _, rw := range l.rows {
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
	if l.preExisting > 0 {
		parts = append(parts, thousands(l.preExisting)+" pre-existing")
	}
	if len(l.rows) == 0 {
		parts = append(parts, "✅ no findings")
	}
	_, notCompared := l.r.Coverage()
	verdict := "Safe to merge by policy."
	switch {
	case l.r.Failing:
		verdict = "Policy blocks this merge."
	case l.r.NothingCompared():
		// Never "safe": nothing was looked at.
		verdict = "This PR is not judged."
	case len(l.rows) == 0 && !l.anyChange():
		verdict = "No changes."
	case notCompared > 0:
		verdict = "Safe to merge by policy for the targets compared."
	case l.preExisting > 0:
		verdict = "Safe to merge by policy: nothing this PR introduces fails it."
	}
	return "### driftpreview: " + strings.Join(parts, " · ") + ". " + verdict + "\n"
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

// liveNotice says up top which targets were not compared with the live cluster,
// since the comment then cannot speak for what the merge does there.
func (l *layout) liveNotice() string {
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
			target = l.targetName(rw.target)
		}
		cells = append(cells, target)
	}
	cells = append(cells, object, inlineMD(msg))
	for i := range cells {
		cells[i] = cell(cells[i])
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// cutNote says what fit() cut, so nobody mistakes a short comment for the whole.
func (l *layout) cutNote() string {
	type obj struct {
		sec int
		key string
	}
	cut := map[obj]bool{}
	collapsed := 0
	for _, s := range l.sections {
		if s.collapsed {
			collapsed++
		}
	}
	for _, u := range l.units {
		if u.full != "" && (u.state != stateFull || l.sections[u.sec].collapsed) {
			cut[obj{u.sec, u.key.String()}] = true
		}
	}
	if len(cut) == 0 && collapsed == 0 {
		return ""
	}
	var what string
	switch {
	case len(cut) > 0 && collapsed > 0:
		what = "Diffs of " + plural(len(cut), "object", "objects") + " and the details of " + plural(collapsed, "target", "targets") + " were"
	case len(cut) > 0:
		what = "Diffs of " + plural(len(cut), "object", "objects") + " were"
	default:
		what = "The details of " + plural(collapsed, "target", "targets") + " were"
	}
	return "\n" + what + " cut to fit the " + thousands(l.opts.MaxChars) +
		"-character limit; run `driftpreview preview` locally for the full diff.\n"
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

// pageMarker is the sticky marker of follow-up page n.
func pageMarker(marker string, n int) string {
	if base, ok := strings.CutSuffix(marker, "-->"); ok {
		return strings.TrimRight(base, " ") + " page " + strconv.Itoa(n) + " -->"
	}
	return marker + " page " + strconv.Itoa(n)
}

const pageTail = "\n_Continued in the next comment._\n"

func (l *layout) pagePrefix(n, total int) string {
	if n == 1 {
		return l.opts.Marker + "\n"
	}
	return pageMarker(l.opts.Marker, n) + "\n_(continued " + strconv.Itoa(n) + "/" + strconv.Itoa(total) + ")_\n"
}

// paginate packs the blocks into pages of at most MaxChars bytes, repeating the
// table header where the table runs onto a new page.
func (l *layout) paginate() []string {
	limit := l.opts.MaxChars
	bs := l.blocks()
	// Reserve room for the widest prefix: there are never more pages than blocks.
	most := len(bs) + 1
	room := limit - max(len(l.pagePrefix(1, most)), len(l.pagePrefix(most, most))) - len(pageTail)
	hdr := len(l.tableHeader())
	for i := range bs {
		bs[i] = l.shrink(bs[i], room-hdr)
	}

	var pages [][]block
	var cur []block
	used := 0
	for _, bl := range bs {
		need := bl.size()
		if bl.row && (len(cur) == 0 || !cur[len(cur)-1].row) {
			need += hdr
		}
		if len(cur) > 0 && used+need > room {
			pages = append(pages, cur)
			cur, used = nil, 0
			need = bl.size()
			if bl.row {
				need += hdr
			}
		}
		cur = append(cur, bl)
		used += need
	}
	if len(cur) > 0 {
		pages = append(pages, cur)
	}

	out := make([]string, len(pages))
	for i, p := range pages {
		text := l.join(l.pagePrefix(i+1, len(pages)), p)
		if i < len(pages)-1 {
			text += pageTail
		}
		out[i] = hardLimit(text, limit)
	}
	return out
}

// shrink makes one block fit in room bytes: a target loses its details, a row its
// message's tail, anything else its tail.
func (l *layout) shrink(b block, room int) block {
	if b.size() <= room {
		return b
	}
	if b.sec != nil {
		b.sec.collapsed = true
		if b.size() <= room {
			return b
		}
		return block{text: hardLimit(b.sec.text(), room)}
	}
	if b.row {
		return block{text: l.rowWithin(l.rows[b.idx], room), row: true, idx: b.idx}
	}
	return block{text: hardLimit(b.text, room)}
}

// rowWithin shortens a row's message until the row fits in room bytes.
func (l *layout) rowWithin(rw row, room int) string {
	msg := rw.f.Message
	for len(msg) > 0 {
		rw.f.Message = truncateBytes(msg, len(msg)-max(1, len(l.rowText(rw))-room)) + " … (cut)"
		if t := l.rowText(rw); len(t) <= room {
			return t
		}
		msg = truncateBytes(msg, len(msg)*3/4)
	}
	return hardLimit(l.rowText(rw), room)
}

const cutMark = "\n\n… (cut to fit the limit)\n"

// hardLimit is the very last resort: it cuts text at a rune boundary so that no
// host refuses the comment, and says so.
func hardLimit(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit <= len(cutMark) {
		return truncateBytes(s, limit)
	}
	return truncateBytes(s, limit-len(cutMark)) + cutMark
}
