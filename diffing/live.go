package diffing

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// checkLive compares each head object with the live cluster: the live diff and
// action, field-conflict and live-drift findings, and apply errors. It runs only
// when the live state was read completely.
func (d *differ) checkLive() {
	live := d.in.Live
	for _, ho := range d.in.Head.Objects {
		k := ho.Key
		c := d.changes[k]
		lo := live.Objects[k]
		pred, ok := live.Predictions[k]
		if mark, what := d.fluxSkip(ho.Obj, lo); mark != "" {
			d.skipApply(k, mark, what)
			continue
		}
		if mark, what := d.helmCRDSkip(k, lo); mark != "" {
			d.skipApply(k, mark, what)
			continue
		}
		if pred.Err != nil {
			d.refused(k, ho.Obj, lo, pred)
			continue
		}
		if pred.Note != "" {
			d.note(pred.Note)
		}
		if lo != nil && live.Mode == LiveDryRun {
			d.serverJudged[k] = true // the apiserver accepted the update
		}
		predicted := pred.Object
		if !ok || predicted == nil {
			if lo != nil {
				d.liveUnavailable(k, fmt.Sprintf("The merge's effect on the live object could not be predicted in cluster `%s`, so its live diff, conflicts and drift are missing.", d.clusterName()))
				continue
			}
			predicted = ho.Obj // a create applies head as it is
		}
		diff, hidden, changed := d.objectDiff(k, lo, predicted, secretValues(lo), predictedSecretValues(lo, ho.Obj))
		c.IgnoredLines += hidden
		switch {
		case lo == nil:
			c.LiveAction = ActionCreated
		case changed:
			c.LiveAction = ActionModified
		default:
			c.LiveAction = ActionUnchanged
		}
		if changed {
			c.LiveDiff = diff
		}
		if lo == nil {
			continue
		}
		if d.opts.DriftFields {
			c.Drift = d.driftFields(k, lo, predicted)
		}
		for _, cf := range pred.Conflicts {
			if unchangedByMerge(k, cf, predicted) {
				continue
			}
			d.conflict(k, cf)
		}
		d.scanDrift(k, lo, ho.Obj, predicted)
	}
}

// unchangedByMerge reports whether the server would keep the live value of a
// conflicting field: head writes it in another form that the server stores the
// same way (a quantity "2000m" for a stored "2"), so the apply takes ownership of
// the field but changes nothing, and nobody fights over it. Secret predictions are
// masked, so their conflicts always count.
func unchangedByMerge(k render.ObjectKey, cf Conflict, predicted *unstructured.Unstructured) bool {
	if predicted == nil || isSecretKey(k) || cf.Live == nil {
		return false
	}
	pv, ok := getPath(predicted.Object, cf.Path)
	return ok && valuesEqual(pv, cf.Live)
}

// predictedSecretValues is what a Secret holds after head is applied onto live:
// live's values with head's over them. It lets a masked live diff say which keys
// change without Prediction.Object carrying values.
func predictedSecretValues(live, head *unstructured.Unstructured) map[string]string {
	if !isSecret(head) {
		return nil
	}
	out := secretValues(live)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range secretValues(head) {
		out[k] = v
	}
	return out
}

// conflict turns one apply conflict into a field-conflict or, for a human
// manager, a live-drift finding.
func (d *differ) conflict(k render.ObjectKey, cf Conflict) {
	if cf.Manager == d.opts.Manager {
		return
	}
	if HumanManager(cf.Manager, d.opts.HumanManagers) {
		base := d.base[k]
		if base != nil {
			if bv, ok := getPath(base.Obj.Object, cf.Path); ok && valuesEqual(bv, cf.Live) {
				return // live still holds what base set: the PR changes it, not drift
			}
		}
		d.drift(k, cf.Path, cf.Manager, cf.Time, cf.Live, cf.Head)
		return
	}
	if valuesEqual(cf.Live, cf.Head) {
		return
	}
	id := k.String() + "\x00" + cf.Path
	if d.reported[id] {
		return
	}
	d.reported[id] = true
	owner := code(cf.Manager)
	if desc := describeManager(cf.Manager, cf.Path); desc != "" && desc != cf.Manager {
		owner += " (" + desc + ")"
	}
	values := fmt.Sprintf("The PR sets %s and live is %s", code(formatValue(cf.Head)), code(formatValue(cf.Live)))
	if isSecretKey(k) {
		values = "The PR sets another value than live (values hidden)"
	}
	d.add(Finding{
		Rule: RuleFieldConflict, Key: k, Path: cf.Path, Manager: cf.Manager, Since: cf.Time,
		Message: fmt.Sprintf("%s is owned by %s. %s, so the two controllers will fight.", code(cf.Path), owner, values),
	})
}

// drift reports a live-drift finding and marks the change as reverting it.
func (d *differ) drift(k render.ObjectKey, path, manager string, at *time.Time, liveVal, headVal any) {
	id := k.String() + "\x00" + path
	if d.reported[id] {
		return
	}
	d.reported[id] = true
	when := ""
	if at != nil {
		when = " on " + at.UTC().Format("2006-01-02 15:04 UTC")
	}
	// With self-heal on (Argo CD selfHeal, Flux's reconcile loop), the controller
	// reapplies git whenever live drifts, merge or not: when the PR does not change
	// the object, the hand edit is reverted anyway, not by this merge.
	reverts, anyway := "This merge reverts it", ""
	if c := d.changes[k]; c != nil && c.Action == ActionUnchanged && d.opts.SelfHeal {
		reverts, anyway = "This PR does not change the object; self-heal reverts it", " anyway"
	}
	var msg string
	if isSecretKey(k) {
		msg = fmt.Sprintf("%s was changed by %s%s (values hidden). %s%s.", code(path), code(manager), when, reverts, anyway)
	} else {
		msg = fmt.Sprintf("%s was changed to %s by %s%s. %s to %s%s.",
			code(path), code(formatValue(liveVal)), code(manager), when, reverts, code(formatValue(headVal)), anyway)
	}
	d.add(Finding{Rule: RuleLiveDrift, Key: k, Path: path, Manager: manager, Since: at, Message: msg})
	d.changes[k].RevertsDrift = true
}

// scanDrift finds fields where live differs from what base set, owned live by a
// human manager, that head sets and the merge changes: hand edits that the merge
// reverts even when the apply reports no conflict (a forced apply, dry-run, a
// client-side-apply manager). Head is compared as the server stores it: a Secret's
// stringData counts as data, and for other kinds the predicted value decides
// (a quantity head writes as "2000m" does not revert a stored "2").
func (d *differ) scanDrift(k render.ObjectKey, live, head, predicted *unstructured.Unstructured) {
	base := d.base[k]
	if base == nil {
		return
	}
	if predicted != nil && predicted == live && !isSecretKey(k) {
		// A proven no-op (the prediction is live itself): each path below
		// would find the predicted value equal to live's and go on. A merge
		// that changes nothing reverts no hand edit.
		return
	}
	var paths []string
	leafDiffs(normalizedView(base.Obj).Object, normalizedView(live).Object, nil, &paths)
	if len(paths) == 0 {
		return
	}
	owners := fieldOwners(live)
	headN := normalizedView(head)
	for _, p := range paths {
		if strings.HasPrefix(p, "/metadata/managedFields") {
			continue
		}
		var human *owner
		for _, o := range ownersOf(owners, p) {
			if HumanManager(o.Manager, d.opts.HumanManagers) && (human == nil || later(o.Time, human.Time)) {
				human = &o
			}
		}
		if human == nil {
			continue
		}
		hv, inHead := getPath(headN.Object, p)
		lv, _ := getPath(live.Object, p)
		if !inHead || valuesEqual(hv, lv) {
			continue // the merge keeps the hand edit, or no longer sets the field
		}
		if predicted != nil && !isSecretKey(k) {
			if pv, ok := getPath(predicted.Object, p); ok && valuesEqual(pv, lv) {
				continue // the server stores head's value as live holds it
			}
		}
		d.drift(k, p, human.Manager, human.Time, lv, hv)
	}
}

func later(a, b *time.Time) bool {
	return a != nil && (b == nil || a.After(*b))
}

// refused reports an apply the API would refuse. A classified refusal (the
// apiserver's own answer in dry-run mode) gives exactly one finding: RBAC and
// escalation refusals are about the asking identity, so only that object's live
// side is unavailable; admission denials and invalid objects are apply-errors
// naming who refused; immutable fields are immutable-field. An unclassified error
// is read from its text.
func (d *differ) refused(k render.ObjectKey, head, live *unstructured.Unstructured, pred Prediction) {
	c := d.changes[k]
	r := pred.Refusal
	if r == nil {
		d.applyError(k, head, live, pred.Err)
		c.LiveAction = ActionUnchanged
		return
	}
	verb := "update"
	if live == nil {
		verb = "create"
	}
	switch r.Kind {
	case RefusalForbidden:
		c.LiveAction = ""
		d.serverJudged[k] = false
		d.liveUnavailable(k, fmt.Sprintf("RBAC refused the dry-run %s of this object (%s), so its live diff, conflicts and drift are missing. This is about the identity driftpreview runs as, not the manifest.",
			verb, oneLine(scrubSecrets(r.Detail, head, live))))
		d.note(fmt.Sprintf("Dry-run mode needs `patch` permission on every object it previews (a dry-run persists nothing); on cluster `%s` the identity lacks it for %s. Grant it, or use simulate mode, which needs only get and list.", d.clusterName(), k.Kind))
	case RefusalEscalation:
		c.LiveAction = ""
		d.liveUnavailable(k, fmt.Sprintf("The apiserver's RBAC escalation prevention refused the dry-run %s: the identity driftpreview runs as does not hold every permission this %s grants, so the apiserver will not let it grant them. This says nothing about the manifest: the sync succeeds if %s holds those permissions (or may `escalate`/`bind`). Grant the dry-run identity `escalate` and `bind` on roles and clusterroles to preview it.",
			verb, k.Kind, d.who()))
	case RefusalAdmission:
		c.LiveAction = ActionUnchanged
		by := r.By
		if by == "" {
			by = "admission"
		}
		detail := ""
		if r.Detail != "" && !isSecretKey(k) {
			detail = " (" + oneLine(r.Detail) + ")"
		}
		d.add(Finding{Rule: RuleApplyError, Key: k, Message: fmt.Sprintf(
			"%s denies the %s%s, so the sync will fail until the manifest or the admission rule changes.", upperFirst(by), verb, detail)})
	case RefusalImmutable:
		c.LiveAction = ActionUnchanged
		d.serverJudged[k] = true
		d.immutableRefused(k, head, live, r)
		if d.replacedBy(k) != "" && live != nil {
			// The controller replaces what it cannot update (Argo CD Replace=true,
			// Flux force), so the live object does change: to head, as simulate
			// predicts it.
			if diff, hidden, changed := d.objectDiff(k, live, head, secretValues(live), predictedSecretValues(live, head)); changed {
				c.LiveAction, c.LiveDiff = ActionModified, diff
				c.IgnoredLines += hidden
			}
		}
	default:
		c.LiveAction = ActionUnchanged
		text := r.Detail
		if text == "" {
			text = pred.Err.Error()
		}
		text = oneLine(scrubSecrets(text, head, live))
		d.add(Finding{Rule: RuleApplyError, Key: k, Message: fmt.Sprintf(
			"The API rejects the object (%s), so the sync will fail until the manifest is fixed.", text)})
	}
}

// immutableRefused reports the apiserver's refusal to update a field: one finding,
// at the field the immutable table names when it knows the change (the server
// may only say `spec`), else at the first field the server names.
func (d *differ) immutableRefused(k render.ObjectKey, head, live *unstructured.Unstructured, r *Refusal) {
	path := ""
	if len(r.Paths) > 0 {
		path = r.Paths[0]
	}
	if live != nil {
		var base *unstructured.Unstructured
		if b := d.base[k]; b != nil {
			base = b.Obj
		}
		for _, h := range immutableHits(k, head, live, base, true) {
			if path == "" || pointerCovers(path, h.path) || pointerCovers(h.path, path) {
				path = h.path
				break
			}
		}
	}
	detail := r.Detail
	if detail == "" {
		detail = "field is immutable"
	}
	d.immutableFinding(k, path, fmt.Sprintf("The API refuses the update (%s)", oneLine(scrubSecrets(detail, head, live))))
}

// note adds a remark to the target's notes once.
func (d *differ) note(n string) {
	if !slices.Contains(d.tr.Notes, n) {
		d.tr.Notes = append(d.tr.Notes, n)
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// applyError reports an error the API returns for applying head: immutable-field
// when it refuses to update a field, apply-error for other rejections.
func (d *differ) applyError(k render.ObjectKey, head, live *unstructured.Unstructured, err error) {
	text := oneLine(scrubSecrets(err.Error(), head, live))
	if !immutableError(text) {
		d.add(Finding{Rule: RuleApplyError, Key: k, Message: fmt.Sprintf(
			"The API rejects the object (%s), so the sync will fail until the manifest is fixed.", text)})
		return
	}
	if slices.ContainsFunc(d.found, func(f Finding) bool { return f.Rule == RuleImmutableField && f.Key == k }) {
		return
	}
	d.immutableFinding(k, errorPath(text), fmt.Sprintf("The API refuses the update (%s)", text))
}

// immutableError reports whether an API error says a field cannot be updated.
func immutableError(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "immutable") ||
		(strings.Contains(text, "Forbidden: updates to") && strings.Contains(text, "are forbidden")) ||
		strings.Contains(text, "Forbidden: spec is immutable")
}

// errorPath pulls the field out of an API validation error ("spec.selector:
// Invalid value: …") as a JSON pointer, or "".
func errorPath(text string) string {
	for _, marker := range []string{": Invalid value", ": Forbidden"} {
		i := strings.Index(text, marker)
		if i < 0 {
			continue
		}
		field := text[:i]
		if j := strings.LastIndexAny(field, " :"); j >= 0 {
			field = field[j+1:]
		}
		field = strings.NewReplacer("[", ".", "]", "").Replace(field)
		if field == "" || strings.ContainsAny(field, "\"'") {
			return ""
		}
		return joinPointer(strings.Split(field, "."))
	}
	return ""
}
