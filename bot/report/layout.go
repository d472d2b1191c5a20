package report

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// A unit is one collapsible diff of one object: the droppable part of a comment.
// Units are cut in steps when the comment is over budget: first the diff goes and
// the object is only listed by name, then the name goes and the object is counted.
type unit struct {
	sec   int
	idx   int
	live  bool
	key   render.ObjectKey
	full  string // the nested <details> with the diff; "" when there is none
	entry string // Kind `ns/name` (action), for the "cut" line
	// same marks a live diff equal to the PR diff: it is named, not repeated.
	same  bool
	state int
	// worst and failing rank the object's findings, so the riskiest diffs stay.
	worst   diffing.Severity
	failing bool
	// pre marks a diff of a target the PR does not change (live drift the
	// merge reverts): pre-existing material, cut before any change of the PR.
	pre bool
}

const (
	stateFull    = iota // the diff is shown
	stateListed         // the diff is cut, the object is named
	stateCounted        // the diff is cut, the object is only counted
)

// A section is one target's <details>.
type section struct {
	t          *diffing.TargetReport
	open       string // <details><summary>…</summary> and the blank line after it
	preamble   string // error, controller, live status
	notes      string // the target's notes
	pr, live   []*unit
	prHead     string
	liveHead   string
	liveNone   string
	unaffected bool
	// liveOnly: the PR changes nothing here, but the merge changes the live
	// objects (drift it reverts); shown after the targets the PR changes.
	liveOnly bool
	// shown: the comment has a section for the target (the PR changes it, its
	// render fails where the base's did not, or the merge changes it live).
	shown     bool
	collapsed bool
	noNotes   bool // the target's notes were cut to fit
	limit     int
	worst     diffing.Severity
	failing   bool
}

// A row is one finding in the table; target is -1 for report-level findings.
type row struct {
	f      diffing.Finding
	target int
}

// layout is the comment as parts that can be measured, cut and paged.
//
// The comment spends its budget on what the PR changes (issue 23): the
// headline, the findings the PR introduces, the targets the PR changes with
// their diffs, then (collapsed) the pre-existing findings, and last one line
// per reason for the targets it has no section for. Cuts take pre-existing
// material and notes before any change of the PR.
type layout struct {
	r    *diffing.Report
	opts Options
	// rows are the findings the PR introduces (rows[:nIntro]), then the
	// pre-existing ones, each group sorted by severity. A pre-existing
	// not-rendered finding of a target listed as not rendered is not a row:
	// the not-compared lines count it (folded).
	rows        []row
	nIntro      int
	folded      int
	rowTexts    []string // rows as table lines, rendered once
	targetCol   bool
	markFailing bool
	preExisting int // findings the base already has, folded ones included
	sections    []*section
	shown       []*section     // the sections the comment shows, in order
	units       []*unit        // every unit, in cutting order
	hiddenRows  int            // introduced findings left out (Markdown's last resort)
	hiddenPre   int            // pre-existing findings left out to fit
	shortLines  bool           // the not-compared lines without target names
	paged       bool           // Pages' layout: pre-existing findings as a plain table
	continued   bool           // Pages continues the left-out pre-existing findings
	reserve     int            // bytes fit keeps free (Pages' "continued" line)
	names       map[string]int // targets by name, for targetName
	notice      *string        // liveNotice, made once
	images      *string        // imagesMD, made once
	lines       *string        // notCompared, made once per shortLines
	linesShort  bool
}

// targetName names target i in the table and lists: its name, or name@cluster
// when another target of the report has the same name (Flux's clusters/staging and
// clusters/production both applying Kustomization apps).
func (l *layout) targetName(i int) string {
	t := &l.r.Targets[i]
	if t.Cluster == "" {
		return t.Name
	}
	if l.names == nil {
		// Counted once: a scan of all targets per name made the report
		// quadratic in targets (BenchmarkLayoutTargets).
		l.names = make(map[string]int, len(l.r.Targets))
		for j := range l.r.Targets {
			l.names[l.r.Targets[j].Name]++
		}
	}
	if l.names[t.Name] > 1 {
		return t.Name + "@" + t.Cluster
	}
	return t.Name
}

// newLayout prepares every part of the comment for r, with all diffs shown.
func newLayout(r *diffing.Report, opts Options) *layout {
	if r == nil {
		r = &diffing.Report{}
	}
	l := &layout{r: r, opts: opts.normalized()}

	// Findings: report-level ones first in their group, then targets in order.
	owners := map[int]bool{}
	for _, f := range r.Findings {
		l.rows = append(l.rows, row{f: f, target: -1})
		owners[-1] = true
	}
	for i := range r.Targets {
		for _, f := range r.Targets[i].Findings {
			l.rows = append(l.rows, row{f: f, target: i})
			owners[i] = true
		}
	}
	slices.SortStableFunc(l.rows, func(a, b row) int {
		return cmp.Or(
			-cmp.Compare(a.f.Severity, b.f.Severity),
			-boolCmp(a.f.Failing, b.f.Failing),
			strings.Compare(string(a.f.Rule), string(b.f.Rule)),
			cmp.Compare(a.target, b.target),
			a.f.Key.Compare(b.f.Key),
			strings.Compare(a.f.Path, b.f.Path),
			strings.Compare(a.f.Message, b.f.Message),
		)
	})
	l.targetCol = len(r.Targets) > 1 && len(owners) > 1
	var intro, pre []row
	for _, rw := range l.rows {
		if !rw.f.PreExisting && rw.f.Failing != (rw.f.Severity == diffing.SeverityError) {
			// The policy is not "every error fails": say which ones do.
			l.markFailing = true
		}
		switch {
		case !rw.f.PreExisting:
			intro = append(intro, rw)
		case rw.f.Rule == diffing.RuleNotRendered && rw.target >= 0 && r.Targets[rw.target].Skipped != "":
			// One line per reason says it (notCompared), not one row per target.
			l.preExisting++
			l.folded++
		default:
			l.preExisting++
			pre = append(pre, rw)
		}
	}
	l.rows, l.nIntro = append(intro, pre...), len(intro)

	for _, rw := range l.rows {
		l.rowTexts = append(l.rowTexts, l.rowText(rw))
	}
	for i := range r.Targets {
		l.sections = append(l.sections, l.newSection(i))
	}
	// The targets the PR changes, then those it changes only live.
	for _, live := range []bool{false, true} {
		for _, s := range l.sections {
			if s.shown && s.liveOnly == live {
				l.shown = append(l.shown, s)
			}
		}
	}
	for _, s := range l.shown {
		l.units = append(l.units, s.pr...)
		l.units = append(l.units, s.live...)
	}
	// Cut pre-existing material first, then the least risky diffs, and among
	// equals the largest.
	slices.SortStableFunc(l.units, func(a, b *unit) int {
		return cmp.Or(
			-boolCmp(a.pre, b.pre),
			cmp.Compare(a.worst, b.worst),
			boolCmp(a.failing, b.failing),
			-cmp.Compare(len(a.full), len(b.full)),
			cmp.Compare(a.sec, b.sec),
			-boolCmp(a.live, b.live),
			cmp.Compare(a.idx, b.idx),
		)
	})
	return l
}

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// objectRisk is the worst severity among the findings about one object of one
// target, and whether any of them fails the policy.
type objectRisk struct {
	worst   diffing.Severity
	failing bool
	rules   []diffing.Rule
}

func (l *layout) newSection(i int) *section {
	t := &l.r.Targets[i]
	s := &section{t: t, limit: l.opts.MaxChars}

	risk := map[render.ObjectKey]*objectRisk{}
	for _, f := range t.Findings {
		o := risk[f.Key]
		if o == nil {
			o = &objectRisk{}
			risk[f.Key] = o
		}
		o.worst = max(o.worst, f.Severity)
		o.failing = o.failing || f.Failing
		if !slices.Contains(o.rules, f.Rule) {
			o.rules = append(o.rules, f.Rule)
		}
		s.worst = max(s.worst, f.Severity)
		s.failing = s.failing || f.Failing
	}

	changes := slices.Clone(t.Changes)
	slices.SortStableFunc(changes, func(a, b diffing.Change) int { return a.Key.Compare(b.Key) })
	changed := 0
	for ci, c := range changes {
		o := risk[c.Key]
		if o == nil {
			o = &objectRisk{}
		}
		if c.Action != diffing.ActionUnchanged && c.Action != "" {
			changed++
			u := &unit{sec: i, idx: ci, key: c.Key, worst: o.worst, failing: o.failing,
				entry: objectMD(c.Key) + " (" + string(c.Action) + ")"}
			if c.Diff != "" {
				body := fieldsMD(c)
				if d := c.ReaderDiff(); d != "" {
					body += fenced(d, "diff")
					if len(c.ChartMetadata) > 0 {
						body += "\n"
					}
				}
				if lead := chartMetadataLead(c); lead != "" {
					body += lead + ": " + codeSpans(c.ChartMetadata) + "\n\n"
				}
				u.full = nestedDiff(objectHTML(c.Key)+": "+esc(string(c.Action))+riskSuffix(o), body)
			}
			s.pr = append(s.pr, u)
		}
		liveShown := t.LiveChecked && t.Error == "" // never a partial live diff
		if liveShown && (c.LiveDiff != "" || (c.LiveAction != "" && c.LiveAction != diffing.ActionUnchanged)) {
			what := string(c.LiveAction)
			if c.RevertsDrift {
				what = "reverts live drift"
			} else if what == "" {
				what = "changes"
			}
			u := &unit{sec: i, idx: ci, live: true, key: c.Key, worst: o.worst, failing: o.failing,
				entry: objectMD(c.Key) + " (" + what + ")"}
			if c.RevertsDrift {
				// Reverting a hand edit is what a reviewer cannot see elsewhere.
				u.worst = max(u.worst, diffing.SeverityWarning)
			}
			if c.LiveDiff != "" && sameChanges(c.LiveDiff, c.Diff) {
				u.same = true
			} else if c.LiveDiff != "" {
				u.full = nestedDiff(objectHTML(c.Key)+": "+esc(what)+riskSuffix(o), fenced(c.LiveDiff, "diff"))
			}
			s.live = append(s.live, u)
		}
	}

	// Risky objects first, as in the findings table; then by kind and name.
	byRisk := func(a, b *unit) int {
		return cmp.Or(
			-cmp.Compare(a.worst, b.worst),
			-boolCmp(a.failing, b.failing),
			strings.Compare(a.key.Kind, b.key.Kind),
			strings.Compare(a.key.Namespace, b.key.Namespace),
			strings.Compare(a.key.Name, b.key.Name),
			strings.Compare(a.key.Group, b.key.Group),
		)
	}
	slices.SortStableFunc(s.pr, byRisk)
	slices.SortStableFunc(s.live, byRisk)

	s.open = "<details><summary>" + l.sectionSummary(t, changed) + "</summary>\n\n"
	s.preamble = l.preamble(t)
	s.notes = notes(t)
	if len(s.pr) > 0 {
		s.prHead = "**This PR changes** (base → head)\n\n"
	}
	if t.LiveChecked && t.Error == "" {
		s.liveHead = "**The merge does to the live cluster** (head → live, " + liveHow(t) + ")\n\n"
		refused := refusedObjects(t)
		switch {
		case len(refused) > 0:
			stay := "it stays as it is"
			if len(refused) > 1 {
				stay = "they stay as they are"
			}
			s.liveNone = "The API refuses the update of " + strings.Join(refused, ", ") +
				", so the sync fails and " + stay + " live (see the findings).\n\n"
		case len(s.live) == 0:
			s.liveNone = "No difference between head and the live objects.\n\n"
			if len(s.pr) == 0 {
				s.liveHead, s.liveNone = "", ""
			}
		}
	}
	s.unaffected = t.Error == "" && t.Skipped == "" && len(s.pr) == 0 && len(s.live) == 0
	s.liveOnly = t.Error == "" && len(s.pr) == 0 && len(s.live) > 0
	s.shown = len(s.pr) > 0 || s.liveOnly || (t.Error != "" && !errorPreExisting(t))
	for _, u := range s.live {
		u.pre = s.liveOnly
	}
	return s
}

// errorPreExisting reports whether a target's render fails at base as it does
// at head: the PR does not introduce the failure.
func errorPreExisting(t *diffing.TargetReport) bool {
	found := false
	for _, f := range t.Findings {
		if f.Rule == diffing.RuleRenderError {
			if !f.PreExisting {
				return false
			}
			found = true
		}
	}
	return found
}

// riskSuffix names an object's findings in its diff summary, so a reader who
// opens the table can find the diff behind a finding.
func riskSuffix(o *objectRisk) string {
	if len(o.rules) == 0 {
		return ""
	}
	names := make([]string, len(o.rules))
	for i, r := range o.rules {
		names[i] = string(r)
	}
	slices.Sort(names)
	return " " + sevEmoji(o.worst) + " " + esc(strings.Join(names, ", "))
}

// nestedDiff is one object's collapsed diff (body: its fenced diff, after the
// changed fields when there are some).
func nestedDiff(summary, body string) string {
	return "<details><summary>" + summary + "</summary>\n\n" + body + "</details>\n\n"
}

// fieldsMD is a modified object's changed fields by path before its diff
// (issue 23): "- `spec.values.resources.limits.memory`: `512Mi` → `768Mi`",
// list items by their name (`containers[name=app].image`). Every path and
// value is a code span (mdtext), whatever the PR put in it.
func fieldsMD(c diffing.Change) string {
	fs := FieldSummary(c)
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("- " + codeSpan(f.Path) + ": ")
		switch {
		case f.Lines > 0:
			b.WriteString(linesChanged(f.Lines))
		case f.Reordered:
			b.WriteString("reordered, " + codeSpan(f.Before) + " → " + codeSpan(f.After))
		case f.Added:
			b.WriteString(codeSpan(f.After) + " (added)")
		case f.Removed:
			b.WriteString(codeSpan(f.Before) + " (removed)")
		default:
			b.WriteString(codeSpan(f.Before) + " → " + codeSpan(f.After))
		}
		b.WriteString("\n")
	}
	if c.MoreFields > 0 {
		b.WriteString("- and " + plural(c.MoreFields, "more field", "more fields") + "\n")
	}
	return b.String() + "\n"
}

// ChartMetadataLine is the one line that stands for a modified object's
// chart bookkeeping changes (issue 23), in plain text: "and chart metadata
// changed: helm.sh/chart, checksum/config" after the rest of its diff, "Chart
// metadata changed: …" when nothing else changed; "" when none changed.
func ChartMetadataLine(c diffing.Change) string {
	if lead := chartMetadataLead(c); lead != "" {
		return lead + ": " + strings.Join(c.ChartMetadata, ", ")
	}
	return ""
}

// chartMetadataLead is ChartMetadataLine's words before the keys.
func chartMetadataLead(c diffing.Change) string {
	switch {
	case len(c.ChartMetadata) == 0:
		return ""
	case c.ReaderDiff() == "":
		return "Chart metadata changed"
	}
	return "and chart metadata changed"
}

// codeSpans writes names as code spans separated by commas.
func codeSpans(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = codeSpan(n)
	}
	return strings.Join(out, ", ")
}

// liveHow says how the live result was computed and as which field manager.
func liveHow(t *diffing.TargetReport) string {
	how := "simulated read-only"
	if t.LiveMode == diffing.LiveDryRun {
		how = "dry-run by the API server"
	}
	if t.Manager != "" {
		how += " as " + codeSpan(t.Manager)
	}
	return how
}

// sectionSummary is the one line a collapsed target shows.
func (l *layout) sectionSummary(t *diffing.TargetReport, changed int) string {
	var where string
	if c := t.Controller; c != nil && controllerName(c) != "" {
		where = esc(controllerName(c)) + " <code>" + esc(c.Name) + "</code>"
		if t.Skipped == "" {
			where += ", " + esc(syncPolicy(c))
		}
	} else {
		where = esc(t.Path)
	}
	if t.Cluster != "" {
		where += " → cluster <code>" + esc(t.Cluster) + "</code>"
	}
	var counts string
	switch {
	case t.Error != "":
		counts = "render failed"
	case t.Skipped != "":
		counts = "not rendered"
	case changed == 0:
		counts = "no changes"
	default:
		counts = summaryCounts(t.Summary, changed)
	}
	return "<b>" + esc(t.Name) + "</b> (" + where + "): " + counts
}

// controllerName is the GitOps object kind as people call it (the controller-kind
// table's display name); "" for targets from .driftpreview.yaml.
func controllerName(c *diffing.Controller) string {
	if k, ok := diffing.ControllerKindOf(c.Kind); ok {
		return k.DisplayName
	}
	return c.Kind
}

// syncPolicy is "auto-sync, prune, self-heal" and the like.
func syncPolicy(c *diffing.Controller) string {
	var p []string
	switch {
	case c.Suspended:
		p = append(p, "suspended")
	case c.AutoSync:
		p = append(p, "auto-sync")
	default:
		p = append(p, "manual sync")
	}
	if c.Prune {
		p = append(p, "prune")
	}
	if c.SelfHeal {
		p = append(p, "self-heal")
	}
	if c.Replace {
		p = append(p, "replace")
	}
	return strings.Join(p, ", ")
}

// preamble is what a target says before its diffs.
func (l *layout) preamble(t *diffing.TargetReport) string {
	var b strings.Builder
	if t.Error != "" {
		b.WriteString("**Rendering failed**, so this target was not compared:\n\n")
		b.WriteString(fenced(t.Error, ""))
		b.WriteString("\n")
	}
	if c := t.Controller; c != nil && controllerName(c) != "" {
		b.WriteString("Deployed by " + text(controllerName(c)) + " " + codeSpan(objectName(render.ObjectKey{Namespace: c.Namespace, Name: c.Name})))
		if c.Source != "" {
			b.WriteString(" (declared in " + codeSpan(c.Source) + ")")
		}
		if t.Path != "" {
			b.WriteString(" from " + codeSpan(t.Path))
		}
		if t.Skipped == "" {
			b.WriteString(": " + syncPolicy(c))
		}
		b.WriteString(".\n\n")
	}
	if t.Skipped != "" {
		b.WriteString("**Not rendered:** " + inlineMD(oneLine(t.Skipped)) + ".\n\n")
	}
	if !t.LiveChecked && t.Error == "" && t.Skipped == "" && t.NotAffected == "" {
		b.WriteString("No live comparison: " + noLiveReason(t) + ".\n\n")
	}
	return b.String()
}

// notes is what a target notes, after its preamble; cut before any diff.
func notes(t *diffing.TargetReport) string {
	if len(t.Notes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Notes:\n\n")
	for _, n := range t.Notes {
		b.WriteString("- " + inlineMD(oneLine(n)) + "\n")
	}
	b.WriteString("\n")
	return b.String()
}

// refusedObjects names the objects whose update the API refuses (an immutable field
// without Replace, an admission rejection): the merge leaves them unchanged live.
func refusedObjects(t *diffing.TargetReport) []string {
	var out []string
	for _, f := range t.Findings {
		if (f.Rule == diffing.RuleImmutableField || f.Rule == diffing.RuleApplyError) && f.Severity == diffing.SeverityError {
			if name := objectMD(f.Key); !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// noLiveReason says why a target was not compared with the live cluster.
func noLiveReason(t *diffing.TargetReport) string {
	for _, f := range t.Findings {
		if f.Rule == diffing.RuleLiveUnavailable && t.Cluster != "" {
			return "cluster " + codeSpan(t.Cluster) + " could not be read (see `live-unavailable`)"
		}
	}
	switch {
	case t.Controller != nil && t.Controller.Suspended && t.LiveMode == diffing.LiveOff:
		return text(controllerName(t.Controller)) + " " + codeSpan(objectName(render.ObjectKey{Namespace: t.Controller.Namespace, Name: t.Controller.Name})) +
			" is suspended, so merging changes nothing on the cluster until it is resumed; nothing is predicted"
	case t.LiveMode == diffing.LiveOff:
		return "live mode is off"
	case t.Cluster == "":
		return "no cluster configured"
	}
	return "no live state was read for cluster " + codeSpan(t.Cluster)
}

// pieces are the section's text, cut according to its units' states.
func (s *section) pieces() []string {
	if s.collapsed {
		return []string{s.open, "Details cut to fit the " + thousands(s.limit) + "-character limit.\n</details>\n"}
	}
	out := []string{s.open, s.preamble}
	if s.noNotes && len(s.t.Notes) > 0 {
		out = append(out, plural(len(s.t.Notes), "note", "notes")+" cut to fit.\n\n")
	} else {
		out = append(out, s.notes)
	}
	if s.prHead != "" {
		out = append(out, s.prHead)
		out = appendUnits(out, s.pr)
	}
	if s.liveHead != "" {
		out = append(out, s.liveHead, s.liveNone)
		out = appendUnits(out, s.live)
	}
	return append(out, "</details>\n")
}

// maxSameNamed is how many live diffs equal to their PR diff are named one by one.
const maxSameNamed = 5

// appendUnits writes the shown diffs, then one line naming the cut ones.
func appendUnits(out []string, units []*unit) []string {
	var cut, plain, same []string
	counted := 0
	for _, u := range units {
		switch {
		case u.same:
			same = append(same, u.entry)
		case u.state == stateCounted:
			counted++
		case u.full == "":
			plain = append(plain, u.entry)
		case u.state == stateFull:
			out = append(out, u.full)
		default:
			cut = append(cut, u.entry)
		}
	}
	switch {
	case len(same) > maxSameNamed:
		// A long list of names would crowd out diffs; the objects are the ones
		// shown above, under "This PR changes".
		out = append(out, "Same as the PR diff for "+plural(len(same), "other object", "other objects")+".\n\n")
	case len(same) > 0:
		out = append(out, "Same as the PR diff: "+strings.Join(same, ", ")+".\n\n")
	}
	if len(plain) > 0 {
		out = append(out, "No diff to show for "+strings.Join(plain, ", ")+".\n\n")
	}
	switch {
	case len(cut) > 0 && counted > 0:
		out = append(out, "Diffs cut to fit: "+strings.Join(cut, ", ")+" and "+plural(counted, "more object", "more objects")+".\n\n")
	case len(cut) > 0:
		out = append(out, "Diffs cut to fit: "+strings.Join(cut, ", ")+".\n\n")
	case counted > 0:
		out = append(out, "Diffs of "+plural(counted, "object", "objects")+" cut to fit.\n\n")
	}
	return out
}

func (s *section) text() string { return "\n" + strings.Join(s.pieces(), "") }

func (s *section) size() int {
	n := 1
	for _, p := range s.pieces() {
		n += len(p)
	}
	return n
}

// sameChanges reports whether two unified diffs add and remove the same lines.
// Their context may differ: the live object carries metadata git does not (the
// tracking marks a GitOps controller writes), which moves hunks and context
// lines without changing what the merge does.
func sameChanges(a, b string) bool {
	changed := func(d string) []string {
		var out []string
		for _, l := range strings.Split(d, "\n") {
			if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) &&
				!strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
				out = append(out, l)
			}
		}
		return out
	}
	return slices.Equal(changed(a), changed(b))
}

// maxLineNames is how many targets a not-compared line names before "and N more".
const maxLineNames = 3

// notCompared is the comment's last part before the footer: one line per reason
// for the targets it gives no section (issue 23), never one row per target.
func (l *layout) notCompared() string {
	if l.lines == nil || l.linesShort != l.shortLines {
		var b strings.Builder
		for _, ln := range l.reasonLines(true) {
			b.WriteString("- " + ln + "\n")
		}
		s := b.String()
		if s != "" {
			s = "\n" + s
		}
		l.lines, l.linesShort = &s, l.shortLines
	}
	return *l.lines
}

// reasonLines are the targets without a section, one line per reason: targets
// not rendered, grouped by their controller's kind and the reason's first
// clause; targets whose render fails at base as at head; and the targets this
// PR does not change. md writes Markdown (the counts bold, PR text escaped);
// otherwise plain text for the terminal.
func (l *layout) reasonLines(md bool) []string {
	type group struct {
		head, one string // "Flux HelmReleases not rendered", and for one target
		detail    string // the reason: "source outside this repo"
		full      string // the first target's whole reason, said when it is alone
		names     []string
	}
	var order []string
	groups := map[string]*group{}
	add := func(key string, g0 group, name string) {
		g := groups[key]
		if g == nil {
			g = &g0
			groups[key] = g
			order = append(order, key)
		}
		g.names = append(g.names, name)
	}
	plain := func(s string) string { return s }
	txt, inline, code, bold := plain, plain, plain, plain
	if md {
		txt, inline, code = text, inlineMD, codeSpan
		bold = func(s string) string { return "**" + s + "**" }
	}
	unchanged := 0
	for i, s := range l.sections {
		t := s.t
		name := code(l.targetName(i))
		switch {
		case s.shown:
		case t.Skipped != "":
			kind, kinds := "target", "targets"
			if c := t.Controller; c != nil && controllerName(c) != "" {
				kind = txt(controllerName(c))
				kinds = kind + "s"
			}
			why := reasonClass(t.Skipped)
			add("skipped\x00"+kind+"\x00"+why, group{head: kinds + " not rendered", one: kind + " not rendered",
				detail: inline(why), full: inline(truncateBytes(oneLine(t.Skipped), 300))}, name)
		case t.Error != "":
			add("error", group{head: "targets fail to render at base and head", one: "target fails to render at base and head",
				detail: "pre-existing"}, name)
		case t.NotAffected != "":
			why := reasonClass(t.NotAffected)
			add("unaffected\x00"+why, group{head: "targets not affected by this PR", one: "target not affected by this PR",
				detail: "not rendered, " + inline(why)}, name)
		default:
			unchanged++
		}
	}
	var out []string
	for _, key := range order {
		g := groups[key]
		n := len(g.names)
		head, detail := g.head, g.detail
		if n == 1 {
			head = g.one
			if g.full != "" {
				detail = g.full
			}
		}
		ln := bold(thousands(n)+" "+head) + ": " + detail
		if (!l.shortLines || !md) && !strings.HasPrefix(key, "unaffected") {
			names := g.names[:min(n, maxLineNames)]
			list := strings.Join(names, ", ")
			if n > len(names) {
				list += " and " + thousands(n-len(names)) + " more"
			}
			ln += " (" + list + ")"
		}
		out = append(out, ln+".")
	}
	if unchanged > 0 {
		out = append(out, bold(plural(unchanged, "target", "targets")+" not changed by this PR")+": rendered at base and head, no difference.")
	}
	return out
}

// reasonClass is a not-rendered reason without its per-target detail, so
// targets with the same cause share one line: leading clauses that name a
// place (a path, a file position, "OCI artifact oci://…") and a trailing URL
// are dropped ("clusters/home: OCI artifact oci://…: remote sources are not
// fetched (…)" is "remote sources are not fetched (…)", "source outside this
// repo: oci://…" is "source outside this repo"), quoted names written as "…".
func reasonClass(reason string) string {
	clauses := strings.Split(oneLine(reason), ": ")
	place := func(c string) bool {
		words := strings.Fields(c)
		return len(words) <= 1 || isPosition(c) || (len(words) <= 4 && strings.Contains(c, "://"))
	}
	for len(clauses) > 1 && place(clauses[0]) {
		clauses = clauses[1:]
	}
	for n := len(clauses); n > 1 && strings.Contains(clauses[n-1], "://") && len(strings.Fields(clauses[n-1])) <= 4; n-- {
		clauses = clauses[:n-1]
	}
	return truncateBytes(quoted.ReplaceAllString(strings.Join(clauses, ": "), `"…"`), 200)
}

var quoted = regexp.MustCompile(`"[^"]*"`)

// isPosition reports whether s is a file position such as apps/x/kustomization.yaml:8.
func isPosition(s string) bool {
	file, line, ok := strings.Cut(s, ":")
	if !ok || file == "" || strings.ContainsAny(file, " \t") {
		return false
	}
	_, err := strconv.Atoi(line)
	return err == nil
}
