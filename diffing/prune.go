package diffing

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// checkRemoved reports what happens to objects removed from git: prune,
// prune-stateful, orphan, rename, prune-cascade and data-loss. The scope is every
// key in base, plus every live key tracked as this target's, that head lacks.
func (d *differ) checkRemoved() {
	var gone []render.ObjectKey
	for k := range d.base {
		if _, ok := d.head[k]; !ok {
			gone = append(gone, k)
		}
	}
	if d.liveOK {
		for k, tracked := range d.in.Live.Tracked {
			_, inBase := d.base[k]
			_, inHead := d.head[k]
			if tracked && !inBase && !inHead && d.in.Live.Objects[k] != nil {
				gone = append(gone, k)
			}
		}
	}
	slices.SortFunc(gone, render.ObjectKey.Compare)
	rotated := d.hashRotations(gone)
	renames := d.detectRenames(slices.DeleteFunc(slices.Clone(gone), func(k render.ObjectKey) bool {
		_, ok := rotated[k]
		return ok
	}), rotated)

	for _, k := range gone {
		var live *unstructured.Unstructured
		if d.liveOK {
			live = d.in.Live.Objects[k]
		}
		c := d.changes[k]
		if c == nil {
			// Tracked live but in neither render: the merge still prunes it.
			c = &Change{Key: k, Action: ActionDeleted}
			d.changes[k] = c
		}
		if d.liveOK && live == nil {
			// Not in the cluster: removing it from git deletes nothing.
			c.LiveAction = ActionUnchanged
			continue
		}
		var baseObj *unstructured.Unstructured
		if b := d.base[k]; b != nil {
			baseObj = b.Obj
		}
		newKey, renamed := renames[k]
		stateful := Stateful(k.GroupKind(), d.opts.StatefulKinds)
		if renamed {
			d.renameFinding(k, newKey, stateful)
		}
		var argo argoRemoval
		var protect string
		if d.opts.Argo != nil {
			// Argo CD's own rules (ArgoSync.removal): sync options, not the
			// Helm or Flux annotations, decide a prune.
			argo = d.opts.Argo.removal(k, d.opts.Removal != "", baseObj, live)
			protect = argo.keep
			if argo.later != "" && d.argoSyncsAnyway(gone) {
				argo.later = "" // another change starts the sync, which prunes it
			}
		} else if protect = protection(baseObj); protect == "" {
			protect = protection(live)
		}
		if protect == "" {
			protect = d.helmCRDKept(k)
		}
		if protect == "" && d.opts.Removal != "" {
			protect = RemovalKeeps(d.opts.RemovedKind, live)
		}
		if newKey, ok := rotated[k]; ok {
			d.hashRotation(k, newKey, protect)
			if live != nil && d.opts.Prune && protect == "" {
				c.LiveAction = ActionDeleted
				c.LiveDiff, _, _ = d.objectDiff(k, live, nil, nil, nil)
			} else if live != nil {
				c.LiveAction = ActionUnchanged
			}
			continue
		}
		if !d.opts.Prune || protect != "" {
			msg := "Removed from git, but prune is off: it keeps running unmanaged."
			if d.opts.Argo != nil && !d.opts.Argo.Automated {
				msg = "Removed from git. The Application has no automated sync: nothing happens until someone syncs, and a sync without the prune option leaves it running unmanaged (a sync with prune deletes it)."
			}
			switch {
			case d.opts.Prune && d.opts.Removal != "":
				msg = fmt.Sprintf("%s, but %s keeps this object: it keeps running unmanaged.", d.opts.Removal, protect)
				if _, detail := d.children(k); detail != "" {
					// A CRD that stays keeps every custom resource of its kind.
					msg = strings.TrimSuffix(msg, ".") + fmt.Sprintf(", and so do the custom resources of its kind (%s).", detail)
				}
			case d.opts.Prune:
				msg = fmt.Sprintf("Removed from git, but %s protects it from prune: it keeps running unmanaged.", protect)
			case d.opts.Removal != "":
				msg = d.opts.Removal + ": this object keeps running unmanaged."
			}
			d.add(Finding{Rule: RuleOrphan, Key: k, Message: msg})
			if live != nil {
				c.LiveAction = ActionUnchanged
			}
			continue
		}
		rule := RulePrune
		if stateful {
			rule = RulePruneStateful
		}
		msg := fmt.Sprintf("Removed from git while prune is on: %s deletes it.", d.who())
		switch {
		case d.opts.Removal != "":
			msg = d.opts.Removal + ": this object is deleted with it."
		case renamed:
			msg = fmt.Sprintf("Removed from git while prune is on: %s deletes it and creates %s in its place, so this is a delete and a create, not a move.",
				d.who(), code(keyRef(newKey)))
		}
		if stateful && k.Kind == "PersistentVolumeClaim" && k.Group == "" {
			msg = strings.TrimSuffix(msg, ".") + ", and the claim's volume is released."
		}
		msg = argo.message(msg, d.who())
		d.add(Finding{Rule: rule, Key: k, Message: msg})
		if live != nil {
			c.LiveAction = ActionDeleted
			c.LiveDiff, _, _ = d.objectDiff(k, live, nil, nil, nil)
		}
		d.cascade(k)
		d.controllerCascade(k, baseObj, live)
		if k.Group == "" && k.Kind == "PersistentVolumeClaim" {
			verb := "Pruned"
			if renamed {
				verb = "Pruned by the rename"
			}
			d.dataLoss(k, verb)
		}
	}
}

// protection names the annotation that keeps obj from being pruned, or "".
func protection(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	ann := obj.GetAnnotations()
	switch {
	case strings.Contains(ann["argocd.argoproj.io/sync-options"], "Prune=false"):
		return code("argocd.argoproj.io/sync-options: Prune=false")
	case fluxPruneExclusion(obj) != "":
		return fluxPruneExclusion(obj)
	case ann["helm.sh/resource-policy"] == "keep":
		return code("helm.sh/resource-policy: keep")
	}
	return ""
}

// cascade reports prune-cascade for a pruned Namespace or CRD with live children.
func (d *differ) cascade(k render.ObjectKey) {
	what, detail := d.children(k)
	if what == "" {
		return
	}
	msg := fmt.Sprintf("Pruning it deletes %s too", what)
	if detail != "" {
		msg += ": " + detail
	}
	d.add(Finding{Rule: RulePruneCascade, Key: k, Message: msg + "."})
}

// children says what lives in a Namespace or under a CRD that is removed ("all
// 2 of its custom resources", detail "2 Gizmos"), or "" when nothing does or
// the live state is not known.
func (d *differ) children(k render.ObjectKey) (what, detail string) {
	isNS := k.Group == "" && k.Kind == "Namespace"
	isCRD := k.Group == "apiextensions.k8s.io" && k.Kind == "CustomResourceDefinition"
	if !d.liveOK || (!isNS && !isCRD) {
		return "", ""
	}
	ch, ok := d.in.Live.Children[k]
	if !ok || ch.Total <= 0 {
		return "", ""
	}
	kinds := slices.Collect(maps.Keys(ch.ByKind))
	slices.SortFunc(kinds, func(a, b string) int {
		sa, sb := d.statefulKind(a), d.statefulKind(b)
		if sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(ch.ByKind[b], ch.ByKind[a]), strings.Compare(a, b))
	})
	var parts []string
	listed := 0
	for _, kind := range kinds {
		n := ch.ByKind[kind]
		if n <= 0 {
			continue
		}
		if len(parts) == 4 {
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, plural(kind, n)))
		listed += n
	}
	if rest := ch.Total - listed; rest > 0 && len(parts) > 0 {
		parts = append(parts, fmt.Sprintf("%d other %s", rest, plural("object", rest)))
	}
	what = fmt.Sprintf("the %d %s in the namespace", ch.Total, plural("object", ch.Total))
	if isCRD {
		what = fmt.Sprintf("all %d of its custom %s", ch.Total, plural("resource", ch.Total))
	}
	if len(parts) > 0 {
		detail = joinAnd(parts, len(parts))
	}
	return what, detail
}

// controllerCascade reports prune-cascade for a pruned GitOps controller object whose
// deletion deletes what it deploys: an Argo CD Application with the resources
// finalizer, a Flux Kustomization with prune on (garbage collection), a Flux
// HelmRelease (uninstalled). Removing one from an app-of-apps looks like one small
// prune in the file diff; the live status says how much goes with it.
func (d *differ) controllerCascade(k render.ObjectKey, objs ...*unstructured.Unstructured) {
	var why string
	for _, o := range objs {
		if o == nil {
			continue
		}
		switch {
		case k.GroupKind() == ArgoCDApplication.GroupKind() && ArgoCDCascades(o.GetFinalizers()):
			why = "Argo CD's resources finalizer cascades the delete"
		case k.GroupKind() == FluxKustomization.GroupKind():
			if prune, _, _ := unstructured.NestedBool(o.Object, "spec", "prune"); prune {
				why = "kustomize-controller garbage-collects what it applied (prune is on)"
			}
		case k.GroupKind() == FluxHelmRelease.GroupKind():
			why = "helm-controller uninstalls the release"
		}
	}
	if why == "" {
		return
	}
	byKind := map[string]int{}
	total := 0
	if d.liveOK {
		if live := d.in.Live.Objects[k]; live != nil {
			resources, _, _ := unstructured.NestedSlice(live.Object, "status", "resources")
			for _, r := range resources {
				if m, ok := r.(map[string]any); ok {
					kind, _ := m["kind"].(string)
					byKind[kind]++
					total++
				}
			}
			entries, _, _ := unstructured.NestedSlice(live.Object, "status", "inventory", "entries")
			for _, e := range entries {
				if m, ok := e.(map[string]any); ok {
					id, _ := m["id"].(string) // namespace_name_group_kind
					parts := strings.Split(id, "_")
					byKind[parts[len(parts)-1]]++
					total++
				}
			}
		}
	}
	msg := "Pruning it also deletes everything it deploys, since " + why
	if total > 0 {
		kinds := slices.Sorted(maps.Keys(byKind))
		slices.SortStableFunc(kinds, func(a, b string) int {
			sa, sb := d.statefulKind(a), d.statefulKind(b)
			if sa != sb {
				if sa {
					return -1
				}
				return 1
			}
			return cmp.Compare(byKind[b], byKind[a])
		})
		var parts []string
		for _, kind := range kinds[:min(4, len(kinds))] {
			parts = append(parts, fmt.Sprintf("%d %s", byKind[kind], plural(kind, byKind[kind])))
		}
		msg += fmt.Sprintf(": %d live %s, %s", total, plural("object", total), joinAnd(parts, len(parts)))
	}
	d.add(Finding{Rule: RulePruneCascade, Key: k, Message: msg + "."})
}

// statefulKind reports whether a kind name (without its group, as children counts
// and controller inventories give it) is one of the stateful kinds.
func (d *differ) statefulKind(kind string) bool {
	for _, gk := range append(slices.Clone(statefulKinds), d.opts.StatefulKinds...) {
		if gk.Kind == kind {
			return true
		}
	}
	return false
}

// plural gives an English plural of a kind for counts ("2 NetworkPolicies").
func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	switch {
	case strings.HasSuffix(word, "ss"), strings.HasSuffix(word, "x"), strings.HasSuffix(word, "ch"):
		return word + "es"
	case strings.HasSuffix(word, "s"):
		return word
	case strings.HasSuffix(word, "y") && !strings.HasSuffix(word, "ay") && !strings.HasSuffix(word, "ey"):
		return word[:len(word)-1] + "ies"
	}
	return word + "s"
}

// dataLoss reports data-loss when the PVC's bound volume is deleted with it.
func (d *differ) dataLoss(k render.ObjectKey, verb string) {
	if !d.liveOK {
		return
	}
	pv := d.in.Live.Volumes[k]
	if pv == nil {
		return
	}
	policy, _, _ := unstructured.NestedString(pv.Object, "spec", "persistentVolumeReclaimPolicy")
	if policy != "Delete" {
		return
	}
	size, _, _ := unstructured.NestedString(pv.Object, "spec", "capacity", "storage")
	if size == "" {
		size = "unknown size"
	}
	d.add(Finding{Rule: RuleDataLoss, Key: k, Message: fmt.Sprintf(
		"%s: its volume %s (%s) has reclaimPolicy Delete, so the data on it is destroyed.", verb, code(pv.GetName()), size)})
}

// renameFinding reports that old looks renamed to newKey.
func (d *differ) renameFinding(old, newKey render.ObjectKey, stateful bool) {
	f := Finding{Rule: RuleRename, Key: old}
	consequence := fmt.Sprintf("%s deletes the old object and creates a new one, so anything that uses the old name breaks", d.who())
	if !d.opts.Prune {
		consequence = "with prune off, the old object keeps running unmanaged next to the new one"
	}
	if stateful {
		f.Severity = SeverityError
		if d.opts.Prune {
			consequence += ", and its data does not move to the new one"
		}
	}
	f.Message = fmt.Sprintf("Looks renamed to %s: %s.", code(keyRef(newKey)), consequence)
	d.add(f)
}

// hashRotations pairs removed objects with created ones that are the same
// kustomize configMapGenerator/secretGenerator output under a new content hash:
// same kind and namespace, and the same name before the hash suffix the render step
// marked (render.Object.HashSuffix). It never guesses from the name alone.
func (d *differ) hashRotations(gone []render.ObjectKey) map[render.ObjectKey]render.ObjectKey {
	stem := func(o *render.Object) (render.ObjectKey, bool) {
		if o == nil || o.HashSuffix == "" || !strings.HasSuffix(o.Key.Name, "-"+o.HashSuffix) {
			return render.ObjectKey{}, false
		}
		k := o.Key
		k.Name = strings.TrimSuffix(k.Name, "-"+o.HashSuffix)
		return k, true
	}
	created := map[render.ObjectKey]render.ObjectKey{} // stem → created key
	for k, h := range d.head {
		if _, inBase := d.base[k]; inBase {
			continue
		}
		if s, ok := stem(h); ok {
			created[s] = k
		}
	}
	out := map[render.ObjectKey]render.ObjectKey{}
	for _, k := range gone {
		if s, ok := stem(d.base[k]); ok {
			if n, ok := created[s]; ok {
				out[k] = n
			}
		}
	}
	return out
}

// hashRotation reports a generated ConfigMap or Secret whose content hash changed.
// kustomize names generator output "<name>-<hash of the content>" and rewrites every
// reference in the build to the new name, so the workloads that use it roll to the
// new object and nothing that kustomize built breaks: the old one is left to prune.
func (d *differ) hashRotation(old, newKey render.ObjectKey, protect string) {
	kind := "configMapGenerator"
	if old.Kind == "Secret" {
		kind = "secretGenerator"
	}
	after := fmt.Sprintf("%s deletes the old one", d.who())
	switch {
	case !d.opts.Prune:
		after = "with prune off, the old one stays behind unmanaged"
	case protect != "":
		after = fmt.Sprintf("%s keeps the old one from prune, so it stays behind unmanaged", protect)
	}
	d.add(Finding{Rule: RuleHashRotation, Key: old, Message: fmt.Sprintf(
		"Its content changed, so kustomize's %s names it %s now: kustomize rewrote every reference in this target to the new name, so the workloads that use it roll over to it and no reference breaks; %s.",
		kind, code(keyRef(newKey)), after)})
}

// maxRenamePairs caps the pairs compared per kind; beyond it only pairs whose
// names share a part are compared, so a huge PR stays fast.
const maxRenamePairs = 2500

// renameThreshold is the share of equal lines above which a deleted and a created
// object of one kind count as the same object renamed.
const renameThreshold = 0.9

// detectRenames pairs removed keys with created keys of the same kind whose
// content, without names and with references renamed alike, is near-equal. The
// new names of hash rotations are not candidates.
func (d *differ) detectRenames(gone []render.ObjectKey, rotated map[render.ObjectKey]render.ObjectKey) map[render.ObjectKey]render.ObjectKey {
	taken := map[render.ObjectKey]bool{}
	for _, n := range rotated {
		taken[n] = true
	}
	created := map[schema.GroupKind][]render.ObjectKey{}
	for k := range d.head {
		if _, ok := d.base[k]; !ok && !taken[k] {
			created[k.GroupKind()] = append(created[k.GroupKind()], k)
		}
	}
	names := map[string]bool{}
	for k := range d.base {
		names[k.Name] = true
	}
	type pair struct {
		old, new render.ObjectKey
		score    float64
		affix    int
	}
	var pairs []pair
	byKind := map[schema.GroupKind][]render.ObjectKey{}
	for _, k := range gone {
		byKind[k.GroupKind()] = append(byKind[k.GroupKind()], k)
	}
	for gk, olds := range byKind {
		news := created[gk]
		slices.SortFunc(news, render.ObjectKey.Compare)
		many := len(olds)*len(news) > maxRenamePairs
		for _, o := range olds {
			oldObj := d.oldVersion(o)
			if oldObj == nil {
				continue
			}
			for _, n := range news {
				cp, cs := commonAffix(o.Name, n.Name)
				if many && cp+cs < 3 {
					continue
				}
				score := renameSimilarity(oldObj, d.head[n].Obj, o.Name, n.Name, names)
				if score >= renameThreshold {
					pairs = append(pairs, pair{o, n, score, cp + cs})
				}
			}
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(b.affix, a.affix),
			a.old.Compare(b.old), a.new.Compare(b.new))
	})
	out := map[render.ObjectKey]render.ObjectKey{}
	usedNew := map[render.ObjectKey]bool{}
	for _, p := range pairs {
		if _, ok := out[p.old]; ok || usedNew[p.new] {
			continue
		}
		out[p.old] = p.new
		usedNew[p.new] = true
	}
	return out
}

// oldVersion is a removed object as base rendered it, or as it is live.
func (d *differ) oldVersion(k render.ObjectKey) *unstructured.Unstructured {
	if b := d.base[k]; b != nil {
		return b.Obj
	}
	if d.liveOK {
		return d.in.Live.Objects[k]
	}
	return nil
}

// commonAffix gives the lengths of the common prefix and suffix of two names,
// not overlapping.
func commonAffix(a, b string) (int, int) {
	cp := 0
	for cp < len(a) && cp < len(b) && a[cp] == b[cp] {
		cp++
	}
	cs := 0
	for cs < len(a)-cp && cs < len(b)-cp && a[len(a)-1-cs] == b[len(b)-1-cs] {
		cs++
	}
	return cp, cs
}

// renameSimilarity compares an old and a new object the way a rename leaves them:
// without metadata.name and namespace, and with the old side's references to
// other objects' names (and a bare release name) renamed the way this name was.
func renameSimilarity(oldObj, newObj *unstructured.Unstructured, oldName, newName string, names map[string]bool) float64 {
	on, nn := Normalize(oldObj), Normalize(newObj)
	for _, u := range []*unstructured.Unstructured{on, nn} {
		unstructured.RemoveNestedField(u.Object, "metadata", "name")
		unstructured.RemoveNestedField(u.Object, "metadata", "namespace")
	}
	rename := nameTransform(oldName, newName)
	cp, cs := commonAffix(oldName, newName)
	oldMid := strings.Trim(oldName[cp:len(oldName)-cs], "-.")
	newMid := strings.Trim(newName[cp:len(newName)-cs], "-.")
	renamed := &unstructured.Unstructured{Object: mapStrings(on.Object, func(s string) string {
		switch {
		case names[s]:
			return rename(s)
		case oldMid != "" && s == oldMid:
			return newMid
		}
		return s
	}).(map[string]any)}
	// A string equal to a name may be a reference (renamed along) or a label or
	// container name (kept): take, line by line, whichever form head has.
	raw, ren, b := splitLines(toYAML(on)), splitLines(toYAML(renamed)), toYAML(nn)
	if len(raw) == len(ren) {
		inHead := map[string]bool{}
		for _, l := range splitLines(b) {
			inHead[l] = true
		}
		for i := range raw {
			if inHead[ren[i]] {
				raw[i] = ren[i]
			}
		}
		return similarity(strings.Join(raw, "\n")+"\n", b)
	}
	return max(similarity(toYAML(on), b), similarity(toYAML(renamed), b))
}

// nameTransform derives from one rename the function that renames other names
// alike: a changed prefix (kustomize namePrefix, Helm release), a changed suffix
// (nameSuffix), or a changed middle part.
func nameTransform(oldName, newName string) func(string) string {
	cp, cs := commonAffix(oldName, newName)
	oldMid, newMid := oldName[cp:len(oldName)-cs], newName[cp:len(newName)-cs]
	switch {
	case oldName == newName:
		return func(s string) string { return s }
	case cp == 0:
		return func(s string) string {
			if strings.HasPrefix(s, oldMid) {
				return newMid + s[len(oldMid):]
			}
			return s
		}
	case cs == 0:
		return func(s string) string {
			if strings.HasSuffix(s, oldMid) {
				return s[:len(s)-len(oldMid)] + newMid
			}
			return s
		}
	}
	return func(s string) string {
		if oldMid != "" {
			return strings.Replace(s, oldMid, newMid, 1)
		}
		return s
	}
}

// mapStrings returns a copy of v with every string value (not map keys) passed
// through f.
func mapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = mapStrings(e, f)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mapStrings(e, f)
		}
		return out
	case string:
		return f(x)
	}
	return v
}

// argoSyncsAnyway says whether the PR makes the Application OutOfSync by more
// than removing objects marked IgnoreExtraneous: a created or modified object, or
// a removed one without the mark (argo-cd controller/state.go). Its automated
// sync then starts, and prunes the marked ones too.
func (d *differ) argoSyncsAnyway(gone []render.ObjectKey) bool {
	for k, c := range d.changes {
		switch c.Action {
		case ActionCreated, ActionModified:
			return true
		}
		if !slices.Contains(gone, k) {
			continue
		}
		var live, base *unstructured.Unstructured
		if d.liveOK {
			live = d.in.Live.Objects[k]
		}
		if b := d.base[k]; b != nil {
			base = b.Obj
		}
		if (live != nil || !d.liveOK) && !argoIgnoresExtraneous(live, base) {
			return true
		}
	}
	return false
}
