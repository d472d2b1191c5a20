package report

import (
	"cmp"
	"slices"
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
	preamble   string // error, controller, live status, notes
	pr, live   []*unit
	prHead     string
	liveHead   string
	liveNone   string
	unaffected bool
	collapsed  bool
	limit      int
	worst      diffing.Severity
	failing    bool
}

// A row is one finding in the table; target is -1 for report-level findings.
type row struct {
	f      diffing.Finding
	target int
}

// layout is the comment as parts that can be measured, cut and paged.
type layout struct {
	r           *diffing.Report
	opts        Options
	rows        []row
	rowTexts    []string // rows as table lines, rendered once
	targetCol   bool
	markFailing bool
	preExisting int // rows the base already has
	sections    []*section
	units       []*unit        // every unit, in cutting order
	hiddenRows  int            // findings left out of the table (Markdown's last resort)
	names       map[string]int // targets by name, for targetName
	notice      *string        // liveNotice, made once
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
	for _, rw := range l.rows {
		if !rw.f.PreExisting && rw.f.Failing != (rw.f.Severity == diffing.SeverityError) {
			// The policy is not "every error fails": say which ones do.
			l.markFailing = true
		}
		if rw.f.PreExisting {
			l.preExisting++
		}
	}

	for _, rw := range l.rows {
		l.rowTexts = append(l.rowTexts, l.rowText(rw))
	}
	for i := range r.Targets {
		l.sections = append(l.sections, l.newSection(i))
	}
	for _, s := range l.sections {
		l.units = append(l.units, s.pr...)
		l.units = append(l.units, s.live...)
	}
	// Cut the least risky diffs first, and among equals the largest.
	slices.SortStableFunc(l.units, func(a, b *unit) int {
		return cmp.Or(
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
				u.full = nestedDiff(objectHTML(c.Key)+": "+esc(string(c.Action))+riskSuffix(o), c.Diff)
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
				u.full = nestedDiff(objectHTML(c.Key)+": "+esc(what)+riskSuffix(o), c.LiveDiff)
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
	return s
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

// nestedDiff is one object's collapsed diff.
func nestedDiff(summary, diff string) string {
	return "<details><summary>" + summary + "</summary>\n\n" + fenced(diff, "diff") + "</details>\n\n"
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
	if len(t.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range t.Notes {
			b.WriteString("- " + inlineMD(oneLine(n)) + "\n")
		}
		b.WriteString("\n")
	}
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
	if s.prHead != "" {
		out = append(out, s.prHead)
		out = appendUnits(out, s.pr)
	}
	if s.liveHead != "" {
		out = append(out, s.liveHead, s.liveNone)
		out = appendUnits(out, s.live)
	}
	switch {
	case s.t.NotAffected != "":
		out = append(out, "Not affected by this PR (not rendered: "+inlineMD(oneLine(s.t.NotAffected))+").\n")
	case s.unaffected:
		out = append(out, "Not affected by this PR.\n")
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
