package diffing

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render"
)

// Input is one target's rendered base and head, and what the cluster holds for it.
type Input struct {
	Name, Path, Cluster string
	Base, Head          render.ObjectSet
	// BaseErr and HeadErr are render failures; a *render.Error names file and line.
	BaseErr, HeadErr error
	// Live is nil when the live comparison is off.
	Live *LiveState
}

// differ holds the state of one Diff call.
type differ struct {
	in      Input
	opts    Options
	ig      ignores
	liveOK  bool // Live is set and was read completely
	base    map[render.ObjectKey]*render.Object
	head    map[render.ObjectKey]*render.Object
	changes map[render.ObjectKey]*Change
	found   []Finding
	tr      TargetReport
	// reported marks (key, path) pairs that already have a live-drift or
	// field-conflict finding, so conflicts and the base↔live scan do not repeat.
	reported map[string]bool
	// serverJudged marks head keys whose update the apiserver answered in dry-run
	// mode (accepted, or refused as immutable): the immutable table is not asked.
	serverJudged map[render.ObjectKey]bool
	// skipped marks head keys the controller does not apply (a Flux ssa mark, a
	// Helm CRD policy): nothing changes live and no update is judged.
	skipped map[render.ObjectKey]bool
}

// Diff compares one target's base and head with each other and, when in.Live is
// set, with the live cluster, and states every risk as a Finding. It never fails:
// render errors and an unreadable cluster become findings, so one broken target
// never hides the others. Call Finish on the whole Report to apply the policy.
func Diff(in Input, opts Options) TargetReport {
	d := &differ{
		in:       in,
		opts:     opts,
		changes:  map[render.ObjectKey]*Change{},
		reported: map[string]bool{},

		serverJudged: map[render.ObjectKey]bool{},
		skipped:      map[render.ObjectKey]bool{},
	}
	d.tr = TargetReport{
		Name:     in.Name,
		Path:     in.Path,
		Cluster:  in.Cluster,
		LiveMode: LiveOff,
		Manager:  opts.Manager,
		Notes:    slices.Clone(in.Head.Notes),
		Changes:  []Change{},
		Findings: []Finding{},
	}
	d.ig = newIgnores(opts.Ignore, d.note)

	if in.Live != nil {
		d.tr.LiveMode = in.Live.Mode
		if d.tr.Cluster == "" {
			d.tr.Cluster = in.Live.Cluster
		}
	}
	if d.renderErrors() {
		d.finishTarget()
		return d.tr
	}
	if in.Live != nil {
		if in.Live.Err != nil {
			d.liveUnavailable(render.ObjectKey{}, fmt.Sprintf("The live state of cluster `%s` could not be read (%s), so this report has no live comparison: no live diffs, conflicts, drift or cascades.",
				d.clusterName(), oneLine(in.Live.Err.Error())))
		} else {
			d.liveOK = true
			d.tr.LiveChecked = true
		}
	}
	d.base = in.Base.Index()
	d.head = in.Head.Index()

	d.computeChanges()
	d.checkModified()
	if d.liveOK {
		if d.opts.RecordLive {
			d.seenLive()
		}
		d.checkLive()
	}
	d.checkImmutable()
	d.dropCoveredStatefulChanges()
	d.failedSyncsChangeNothing()
	d.checkRemoved()
	d.finishTarget()
	return d.tr
}

// renderErrors turns BaseErr and HeadErr into findings; it reports whether the
// target cannot be compared at all. An error the base has too is not the PR's
// doing: the same error at both sides is one pre-existing finding, and a base
// that does not render is pre-existing whatever the head does. Only a head error
// the base does not have (none, or another one) is the PR's.
func (d *differ) renderErrors() bool {
	baseErr, headErr := d.in.BaseErr, d.in.HeadErr
	if baseErr == nil && headErr == nil {
		return false
	}
	var base, head string
	if baseErr != nil {
		base = strings.Join(strings.Fields(renderErrorText(baseErr)), " ")
	}
	if headErr != nil {
		head = strings.Join(strings.Fields(renderErrorText(headErr)), " ")
	}
	if baseErr != nil && headErr != nil && base == head {
		text := oneLine(head)
		d.add(Finding{Rule: RuleRenderError, PreExisting: true, Message: fmt.Sprintf(
			"The target does not render at the base nor at the head (%s). The error is the same at both, so it is not this PR's, and the target is not compared.", text)})
		d.tr.Error = "base and head: " + text
		return true
	}
	var texts []string
	if headErr != nil {
		text := oneLine(head)
		texts = append(texts, "head: "+text)
		d.add(Finding{Rule: RuleRenderError, Message: fmt.Sprintf(
			"The PR's head does not render (%s), so this target is not compared and the controller cannot sync it after the merge.", text)})
	}
	if baseErr != nil {
		text := oneLine(base)
		texts = append(texts, "base: "+text)
		d.add(Finding{Rule: RuleRenderError, PreExisting: true, Message: fmt.Sprintf(
			"The base does not render (%s), so this PR's changes to the target cannot be compared.", text)})
	}
	d.tr.Error = strings.Join(texts, "; ")
	return true
}

// renderErrorText prefers the *render.Error form "file:line: msg".
func renderErrorText(err error) string {
	var re *render.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	return err.Error()
}

// oneLine folds an error text onto one line and caps its length, since API and
// render errors can be long; the cut falls between words and is marked.
func oneLine(s string) string {
	return render.Shorten(strings.Join(strings.Fields(s), " "), 300)
}

func (d *differ) clusterName() string {
	if d.tr.Cluster != "" {
		return d.tr.Cluster
	}
	return "(unnamed)"
}

// who names the controller that applies and prunes, for messages.
func (d *differ) who() string {
	if d.opts.Manager == "" || d.opts.Manager == "driftpreview" {
		return "the GitOps controller"
	}
	return d.opts.Manager
}

// failedSyncsChangeNothing clears the live diff of objects whose update the API
// refuses (an immutable-field error without Replace): the sync fails, so the merge
// leaves the live object as it is, and a predicted diff would show a state the
// cluster never reaches.
func (d *differ) failedSyncsChangeNothing() {
	for _, f := range d.found {
		if f.Rule != RuleImmutableField || f.Severity != SeverityError {
			continue
		}
		if c := d.changes[f.Key]; c != nil && c.LiveAction == ActionModified {
			c.LiveAction, c.LiveDiff, c.RevertsDrift = ActionUnchanged, "", false
		}
	}
}

// dropCoveredStatefulChanges removes a stateful-change finding whose only changed
// field also has an immutable-field finding: "cannot be updated" and "applied in
// place" would contradict each other, and the immutable finding says more.
func (d *differ) dropCoveredStatefulChanges() {
	d.found = slices.DeleteFunc(d.found, func(f Finding) bool {
		return f.Rule == RuleStatefulChange && f.Path != "" &&
			slices.ContainsFunc(d.found, func(g Finding) bool {
				return g.Rule == RuleImmutableField && g.Key == f.Key && pointerCovers(g.Path, f.Path)
			})
	})
}

// add records a finding, filling in the rule's default severity when unset.
func (d *differ) add(f Finding) {
	if f.Severity == SeverityNone {
		f.Severity = DefaultSeverity[f.Rule]
	}
	d.found = append(d.found, f)
}

func (d *differ) liveUnavailable(k render.ObjectKey, msg string) {
	d.tr.LiveChecked = false
	d.add(Finding{Rule: RuleLiveUnavailable, Key: k, Message: msg})
}

// computeChanges fills one Change per key in base or head.
func (d *differ) computeChanges() {
	keys := slices.Collect(maps.Keys(d.base))
	for k := range d.head {
		if _, ok := d.base[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, render.ObjectKey.Compare)
	for _, k := range keys {
		b, h := d.base[k], d.head[k]
		c := &Change{Key: k}
		var bo, ho *unstructured.Unstructured
		if b != nil {
			bo, c.Source = b.Obj, b.Source
		}
		if h != nil {
			ho, c.Source = h.Obj, h.Source
		}
		var diff string
		var hidden int
		var changed bool
		if bo == nil || bo != ho {
			// One object at both sides (the base diffed as the head, as
			// markPreExisting does) is unchanged, with nothing ignored to
			// count: learnt without normalising it twice.
			var fields *fieldList
			if bo != nil && ho != nil {
				fields = &fieldList{}
			}
			diff, hidden, changed = d.objectDiffFields(k, bo, ho, secretValues(bo), secretValues(ho), fields)
			if fields != nil && changed {
				c.Fields, c.MoreFields = fields.list, fields.more
				if len(fields.chartMeta) > 0 {
					c.ChartMetadata, c.ShownDiff = fields.chartMeta, &fields.shown
				}
			}
		}
		switch {
		case b == nil:
			c.Action = ActionCreated
		case h == nil:
			c.Action = ActionDeleted
		case changed:
			c.Action = ActionModified
		default:
			c.Action = ActionUnchanged
		}
		if c.Action != ActionUnchanged {
			c.Diff = diff
		}
		c.IgnoredLines = hidden
		if c.Action != ActionUnchanged {
			d.tr.Images = append(d.tr.Images, ImageChanges(k, bo, ho)...)
		}
		d.changes[k] = c
	}
}

// objectDiff is the unified diff of two versions of one object (either may be nil)
// after normalising, masking and removing ignored paths. It also returns how many
// changed lines the ignore rules hid and whether anything is left changed.
func (d *differ) objectDiff(k render.ObjectKey, oldObj, newObj *unstructured.Unstructured, oldVals, newVals map[string]string) (string, int, bool) {
	return d.objectDiffFields(k, oldObj, newObj, oldVals, newVals, nil)
}

// fieldList is where objectDiffFields puts the changed fields it finds, and
// the chart bookkeeping it folds (chartMeta: the keys; shown: the diff without
// them).
type fieldList struct {
	list      []FieldChange
	more      int
	chartMeta []string
	shown     string
}

// objectDiffFields is objectDiff that also lists the changed fields of what the
// diff shows into fields, when fields is not nil.
func (d *differ) objectDiffFields(k render.ObjectKey, oldObj, newObj *unstructured.Unstructured, oldVals, newVals map[string]string, fields *fieldList) (string, int, bool) {
	paths := d.ig.linePaths(k)
	if paths.empty() && normalizedEqual(oldObj, newObj) {
		// Nothing to show and no ignored lines to count, learnt without copying.
		return "", 0, false
	}
	// Views, not copies: strip and maskPair copy before they change anything.
	on, nn := normalizedView(oldObj), normalizedView(newObj)
	ma, mb := maskPair(strip(on, paths), strip(nn, paths), oldVals, newVals)
	if sameContent(ma, mb) {
		// Equal content marshals to equal text: no diff, and no YAML to write
		// (most objects of a large PR; marshalling was a fifth of a run's CPU).
		hidden := 0
		if !paths.empty() {
			if fa, fb := maskPair(on, nn, oldVals, newVals); !sameContent(fa, fb) {
				hidden = changedLines(toYAML(fa), toYAML(fb))
			}
		}
		return "", hidden, false
	}
	a, b := toYAML(ma), toYAML(mb)
	hidden := 0
	if !paths.empty() {
		fa, fb := maskPair(on, nn, oldVals, newVals)
		hidden = max(changedLines(toYAML(fa), toYAML(fb))-changedLines(a, b), 0)
	}
	if a == b {
		return "", hidden, false
	}
	if fields != nil && ma != nil && mb != nil {
		// Chart bookkeeping is folded into one line for the reader: the
		// fields and the diff shown leave it out; Diff keeps it (issue 23).
		sa, sb := ma, mb
		if keys := chartMetaChanges(ma.Object, mb.Object, d.opts.ChartMetadata); len(keys) > 0 {
			sa, sb = withoutChartMeta(ma, d.opts.ChartMetadata), withoutChartMeta(mb, d.opts.ChartMetadata)
			fields.chartMeta, fields.shown = keys, unified(toYAML(sa), toYAML(sb))
		}
		fields.list, fields.more = FieldChanges(sa.Object, sb.Object, MaxFieldChanges)
	}
	return unified(a, b), hidden, true
}

// sameContent reports whether two objects (either may be nil) hold exactly the
// same Go values, so toYAML gives both the same text. Values that differ only in
// type (int64 1 and float64 1) are not the same here, and are left to the text
// comparison.
func sameContent(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return JSONEqual(a.Object, b.Object)
}

// finishTarget applies ignore rules, sorts findings and fills the Summary,
// Changes and Worst.
func (d *differ) finishTarget() {
	for _, f := range d.found {
		if d.ig.hideFinding(f) {
			d.tr.Summary.IgnoredFindings++
			continue
		}
		d.tr.Findings = append(d.tr.Findings, f)
		if f.Rule == RuleLiveDrift {
			if c := d.changes[f.Key]; c != nil {
				c.LiveDiff = annotateDrift(c.LiveDiff, f)
			}
		}
	}
	SortFindings(d.tr.Findings)
	keys := slices.Collect(maps.Keys(d.changes))
	slices.SortFunc(keys, render.ObjectKey.Compare)
	for _, k := range keys {
		c := d.changes[k]
		d.tr.Changes = append(d.tr.Changes, *c)
		switch c.Action {
		case ActionCreated:
			d.tr.Summary.Created++
		case ActionModified:
			d.tr.Summary.Modified++
		case ActionDeleted:
			d.tr.Summary.Deleted++
		case ActionUnchanged:
			d.tr.Summary.Unchanged++
		}
		d.tr.Summary.IgnoredLines += c.IgnoredLines
	}
	d.tr.Worst = worst(d.tr.Findings)
}

// annotateDrift marks the removed line of a live diff that holds a hand edit with
// who made it and when ("-  LOG_LEVEL: debug   # kubectl-edit, 2026-11-02 03:14
// UTC"), so the reader of the diff sees what the merge reverts. It matches the
// field's key on a removed line and leaves the diff as it is when it cannot.
func annotateDrift(diff string, f Finding) string {
	segs := splitPointer(f.Path)
	if diff == "" || f.Manager == "" || len(segs) == 0 {
		return diff
	}
	leaf := segs[len(segs)-1]
	if _, err := strconv.Atoi(leaf); err == nil {
		return diff // a list index names no line
	}
	note := "   # " + f.Manager
	if f.Since != nil {
		note += ", " + f.Since.UTC().Format("2006-01-02 15:04 UTC")
	}
	lines := strings.Split(diff, "\n")
	for i, l := range lines {
		body, ok := strings.CutPrefix(l, "-")
		if !ok || strings.HasPrefix(l, "---") || strings.Contains(l, "   # ") {
			continue
		}
		if key, _, found := strings.Cut(strings.TrimLeft(body, " -"), ":"); found && key == leaf {
			lines[i] = l + note
			return strings.Join(lines, "\n")
		}
	}
	return diff
}

// SortFindings orders findings the way the report lists them: errors first, then
// by rule, object key, path and message, so output is stable.
func SortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(b.Severity, a.Severity),
			strings.Compare(string(a.Rule), string(b.Rule)),
			a.Key.Compare(b.Key),
			strings.Compare(a.Path, b.Path),
			strings.Compare(a.Message, b.Message),
		)
	})
}

func worst(fs []Finding) Severity {
	w := SeverityNone
	for _, f := range fs {
		w = max(w, f.Severity)
	}
	return w
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// code wraps s in backticks for a message.
// code writes a value of a message as an inline code span that survives the
// backticks it holds (mdtext, the one escaper of PR-controlled text).
func code(s string) string { return mdtext.Code(s) }

// keyRef writes another object's key for a message: namespace/name.
func keyRef(k render.ObjectKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}
