package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// DriftMaxChars bounds DriftMarkdown: below GitHub's 65,536 characters of an
// issue or comment body, with room for a caller's own lines.
const DriftMaxChars = 60000

// driftTableRows is how many fields the Markdown table lists; the rest are
// counted.
const driftTableRows = 100

// DriftJSON renders a drift report as the indented JSON contract of
// `driftpreview drift --format json` (README, "driftpreview drift"): times in
// UTC, empty lists as [], ending with a newline. r is not modified.
func DriftJSON(r *diffing.DriftReport) ([]byte, error) {
	if r == nil {
		return nil, fmt.Errorf("rendering drift JSON: no report")
	}
	out := *r
	out.GeneratedAt = r.GeneratedAt.UTC()
	out.Findings = stableFindings(r.Findings)
	if len(out.Findings) == 0 {
		out.Findings = nil
	}
	out.Targets = make([]diffing.DriftTarget, len(r.Targets))
	for i, t := range r.Targets {
		t.Findings = stableFindings(t.Findings)
		if len(t.Findings) == 0 {
			t.Findings = nil
		}
		t.Objects = slices.Clone(t.Objects)
		if t.Objects == nil {
			t.Objects = []diffing.DriftObject{}
		}
		for j, o := range t.Objects {
			o.Fields = slices.Clone(o.Fields)
			for k := range o.Fields {
				if s := o.Fields[k].Since; s != nil {
					u := s.UTC()
					o.Fields[k].Since = &u
				}
			}
			t.Objects[j] = o
		}
		out.Targets[i] = t
	}
	if out.Targets == nil {
		out.Targets = []diffing.DriftTarget{}
	}
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("rendering drift JSON: %w", err)
	}
	return append(b, '\n'), nil
}

// DriftHeadline is the report's verdict in one line of plain text: "no drift"
// when every target compared matches git, else how many objects drifted in
// how many targets, and how many targets could not be compared.
func DriftHeadline(r *diffing.DriftReport) string {
	compared, notCompared := r.Compared()
	objects, targets := 0, 0
	for _, t := range r.Targets {
		if t.DriftedObjects > 0 {
			objects += t.DriftedObjects
			targets++
		}
	}
	var s string
	switch {
	case compared == 0 && notCompared == 0:
		s = "no drift: no targets"
	case compared == 0:
		s = "nothing compared: " + plural(notCompared, "target", "targets") + " not compared"
	case objects == 0:
		s = "no drift in " + plural(compared, "target", "targets") + " compared"
	default:
		s = fmt.Sprintf("%s drifted from git in %d of %s", plural(objects, "object", "objects"), targets, plural(compared, "target", "targets"))
	}
	if compared > 0 && notCompared > 0 {
		s += " (" + plural(notCompared, "target", "targets") + " not compared)"
	}
	return s
}

// outcomeWords says an outcome in a few words.
func outcomeWords(o diffing.DriftOutcome) string {
	switch o {
	case diffing.DriftReverted:
		return "reverted"
	case diffing.DriftKept:
		return "stays"
	case diffing.DriftFights:
		return "controllers fight"
	case diffing.DriftIgnored:
		return "ignored"
	case diffing.DriftPending:
		return "not synced yet"
	case diffing.DriftPruned:
		return "pruned"
	}
	return string(o)
}

func outcomeEmoji(undescribed bool) string {
	if undescribed {
		return "🟠"
	}
	return "⚪"
}

// entryDrifted says whether one field is drift git does not describe.
func entryDrifted(e diffing.DriftEntry) bool {
	return e.Outcome == diffing.DriftReverted || e.Outcome == diffing.DriftKept || e.Outcome == diffing.DriftFights
}

// fieldValues is "live → git" for one field, as plain text.
func fieldValues(f diffing.DriftField) (live, git string) {
	live, git = f.Live, f.Git
	if f.LiveAbsent {
		live = "(absent)"
	}
	if f.GitAbsent {
		git = "(absent)"
	}
	return live, git
}

func fieldWhen(f diffing.DriftField) string {
	if f.Since == nil {
		return ""
	}
	return f.Since.UTC().Format("2006-01-02 15:04 UTC")
}

// driftTargetWhere names a target, its controller and its cluster.
func driftTargetWhere(t *diffing.DriftTarget) string {
	where := t.Name
	if c := t.Controller; c != nil && controllerName(c) != "" {
		where += " (" + controllerName(c) + " " + objectName(render.ObjectKey{Namespace: c.Namespace, Name: c.Name}) + ", " + syncPolicy(c)
		if c.DriftDetection != "" {
			where += ", driftDetection " + c.DriftDetection
		}
		where += ")"
	}
	if t.Cluster != "" {
		where += " → cluster " + t.Cluster
	}
	return where
}

// DriftMarkdown renders a drift report as Markdown for an issue, a comment or
// a job summary: the headline, a table of every drifted field (object, field,
// live and git values, who changed it and when, what the controller does),
// then per target a collapsed section with each object's sentence and its
// live → git diff, the targets not compared with why, and the other findings.
// It stays under DriftMaxChars: past it, diffs are left out (and said so).
// Names, values and messages from the repository and the cluster are escaped
// (mdtext), and Secret values never appear.
func DriftMarkdown(r *diffing.DriftReport) string {
	var b strings.Builder
	emoji := "✅"
	if r.Drifted {
		emoji = "🟠"
	}
	fmt.Fprintf(&b, "### driftpreview drift: %s %s\n\n", emoji, text(DriftHeadline(r)))
	multi := len(r.Targets) > 1
	rows := 0
	more := 0
	var table strings.Builder
	for _, t := range r.Targets {
		for _, o := range t.Objects {
			if len(o.Fields) == 0 {
				if rows >= driftTableRows {
					more++
					continue
				}
				rows++
				driftRow(&table, multi, &t, o.Key, outcomeEmoji(o.Drifted), "(the object)", text(string(o.State)), "", "", outcomeWords(o.Outcome))
				continue
			}
			for _, e := range o.Fields {
				if rows >= driftTableRows {
					more++
					continue
				}
				rows++
				live, git := fieldValues(e.DriftField)
				by := e.Manager
				if by == "" {
					by = "unknown"
				}
				when := fieldWhen(e.DriftField)
				if when == "" && e.Manager != "" {
					when = "not recorded"
				}
				driftRow(&table, multi, &t, o.Key, outcomeEmoji(entryDrifted(e)), codeSpan(e.Path), codeSpan(live)+" → "+codeSpan(git), codeSpan(by), when, outcomeWords(e.Outcome))
			}
		}
	}
	if rows > 0 {
		b.WriteString("| | ")
		if multi {
			b.WriteString("target | ")
		}
		b.WriteString("object | field | live → git | changed by | when | what happens |\n|---|")
		if multi {
			b.WriteString("---|")
		}
		b.WriteString("---|---|---|---|---|---|\n")
		b.WriteString(table.String())
		if more > 0 {
			fmt.Fprintf(&b, "\nand %d more (below, or `driftpreview drift` locally).\n", more)
		}
		b.WriteString("\n")
	}
	diffsLeft := 0
	for i := range r.Targets {
		t := &r.Targets[i]
		if len(t.Objects) == 0 {
			continue
		}
		var s strings.Builder
		fmt.Fprintf(&s, "<details><summary>%s: %s</summary>\n\n", esc(driftTargetWhere(t)), esc(plural(t.DriftedObjects, "object", "objects")+" drifted"))
		for _, o := range t.Objects {
			fmt.Fprintf(&s, "- %s %s (%s, %s): %s\n", outcomeEmoji(o.Drifted), objectMD(o.Key), text(string(o.State)), text(outcomeWords(o.Outcome)), inlineMD(oneLine(o.Message)))
			if len(o.Fields) > 1 {
				for _, e := range o.Fields {
					fmt.Fprintf(&s, "  - %s %s\n", outcomeEmoji(entryDrifted(e)), inlineMD(oneLine(e.Message)))
				}
			}
		}
		var diffs strings.Builder
		for _, o := range t.Objects {
			if o.Diff != "" {
				fmt.Fprintf(&diffs, "\n%s, live → git:\n\n%s\n", objectMD(o.Key), fenced(o.Diff, "diff"))
			}
		}
		if b.Len()+s.Len()+diffs.Len() < DriftMaxChars-2000 {
			s.WriteString(diffs.String())
		} else if diffs.Len() > 0 {
			diffsLeft++
		}
		s.WriteString("\n</details>\n\n")
		if b.Len()+s.Len() >= DriftMaxChars-2000 {
			fmt.Fprintf(&b, "Target %s left out to fit; run `driftpreview drift` for it.\n\n", codeSpan(t.Name))
			continue
		}
		b.WriteString(s.String())
	}
	if diffsLeft > 0 {
		fmt.Fprintf(&b, "The live diffs of %s are left out to fit; `driftpreview drift` shows them.\n\n", plural(diffsLeft, "target", "targets"))
	}
	var other []string
	for _, t := range r.Targets {
		if t.NotCompared != "" {
			other = append(other, fmt.Sprintf("- %s: not compared: %s", text(driftTargetWhere(&t)), inlineMD(oneLine(strings.TrimPrefix(t.NotCompared, "not compared: ")))))
		}
		for _, f := range t.Findings {
			if f.Severity < diffing.SeverityWarning {
				continue
			}
			other = append(other, fmt.Sprintf("- %s `%s` %s: %s", sevEmoji(f.Severity), f.Rule, text(t.Name), inlineMD(oneLine(f.Message))))
		}
	}
	for _, f := range r.Findings {
		other = append(other, fmt.Sprintf("- %s `%s`: %s", sevEmoji(f.Severity), f.Rule, inlineMD(oneLine(f.Message))))
	}
	if len(other) > 0 {
		b.WriteString("**Also**\n\n")
		for _, l := range other {
			if b.Len()+len(l) > DriftMaxChars-500 {
				b.WriteString("- …and more (`driftpreview drift` lists them)\n")
				break
			}
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "<sub>%s</sub>\n", text(driftFooter(r)))
	return b.String()
}

func driftRow(b *strings.Builder, multi bool, t *diffing.DriftTarget, k render.ObjectKey, emoji, field, values, by, when, outcome string) {
	fmt.Fprintf(b, "| %s | ", emoji)
	if multi {
		b.WriteString(cell(text(t.Name)) + " | ")
	}
	fmt.Fprintf(b, "%s | %s | %s | %s | %s | %s |\n", cell(objectMD(k)), cell(field), cell(values), cell(by), cell(when), cell(text(outcome)))
}

// driftFooter says what was compared: the ref, its commit, the clusters, when.
func driftFooter(r *diffing.DriftReport) string {
	msg := "Compared " + r.Ref
	if c := shortRev(r.Commit, DefaultOptions().ShortSHA); c != "" && c != r.Ref {
		msg += " at " + c
	}
	var clusters []string
	for _, t := range r.Targets {
		if t.LiveChecked && t.Cluster != "" && !slices.Contains(clusters, t.Cluster) {
			clusters = append(clusters, t.Cluster)
		}
	}
	switch len(clusters) {
	case 0:
		msg += " with the live cluster"
	case 1:
		msg += " with live cluster " + clusters[0]
	default:
		msg += " with live clusters " + strings.Join(clusters, ", ")
	}
	if !r.GeneratedAt.IsZero() {
		msg += " at " + r.GeneratedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	return msg + "."
}

// DriftText renders a drift report for a terminal: the headline, then per
// target each drifted object with its fields (path, live → git, who changed it
// and when, what happens) and its live → git diff, the targets not compared,
// and the other findings. Strings from the repository and the cluster are
// written with their control characters escaped, as Text does.
func DriftText(r *diffing.DriftReport, opts TextOptions) string {
	w := &textWriter{color: opts.Color}
	style := styleBold
	if r.Drifted {
		style = styleWarning
	}
	w.put("driftpreview drift: "+DriftHeadline(r), style)
	w.nl()
	for i := range r.Targets {
		t := &r.Targets[i]
		if len(t.Objects) == 0 {
			continue
		}
		w.nl()
		w.put("target "+driftTargetWhere(t)+": "+plural(t.DriftedObjects, "object", "objects")+" drifted", styleBold)
		w.nl()
		for _, o := range t.Objects {
			w.b.WriteString("  ")
			st := styleFaint
			if o.Drifted {
				st = styleWarning
			}
			w.put(outcomeWords(o.Outcome), st)
			w.put("  "+o.Key.Kind+" "+objectName(o.Key)+" ("+string(o.State)+")", stylePlain)
			w.nl()
			if len(o.Fields) == 0 {
				w.line(4, o.Message)
			}
			for _, e := range o.Fields {
				live, git := fieldValues(e.DriftField)
				by := e.Manager
				if by == "" {
					by = "unknown"
				}
				line := e.Path + ": " + live + " → " + git + " (git), by " + by
				if when := fieldWhen(e.DriftField); when != "" {
					line += " on " + when
				}
				w.b.WriteString("    ")
				st := styleFaint
				if entryDrifted(e) {
					st = styleWarning
				}
				w.put(outcomeWords(e.Outcome), st)
				w.put("  "+line, stylePlain)
				w.nl()
				w.line(6, e.Message)
			}
			if o.Diff != "" {
				w.diff(o.Diff)
			}
		}
	}
	var other []string
	for i := range r.Targets {
		t := &r.Targets[i]
		if t.NotCompared != "" {
			other = append(other, "target "+driftTargetWhere(t)+": not compared: "+t.NotCompared)
		}
		for _, f := range t.Findings {
			if f.Severity >= diffing.SeverityWarning {
				other = append(other, severityWord(f.Severity)+" "+string(f.Rule)+" (target "+t.Name+"): "+f.Message)
			}
		}
	}
	for _, f := range r.Findings {
		other = append(other, severityWord(f.Severity)+" "+string(f.Rule)+": "+f.Message)
	}
	if len(other) > 0 {
		w.nl()
		for _, l := range other {
			w.line(0, "- "+l)
		}
	}
	w.nl()
	w.b.WriteString(w.faint(driftFooter(r)))
	w.nl()
	return w.b.String()
}
