package diffing

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// DriftField is one field of a live object that differs from what git
// declares, as the live prediction sees it: applying git onto the live object
// (what the GitOps controller's next sync does) changes it. Options.DriftFields
// asks Diff to list them in Change.Drift; `driftpreview drift` reads them.
type DriftField struct {
	// Path is a JSON pointer into the object ("/data/LOG_LEVEL").
	Path string `json:"path"`
	// Live is the value the cluster holds and Git the value after git is
	// applied, written short (formatValue); LiveAbsent and GitAbsent say the
	// field is missing on that side. Both are MaskedValue for a Secret.
	Live       string `json:"live,omitempty"`
	Git        string `json:"git,omitempty"`
	LiveAbsent bool   `json:"liveAbsent,omitempty"`
	GitAbsent  bool   `json:"gitAbsent,omitempty"`
	// Manager is the field manager that owns the live value (from
	// metadata.managedFields), and Since the time of that manager's last
	// operation on the object (managedFields[].time); empty and nil when no
	// manager owns it (a field removed by hand has no owner).
	Manager string     `json:"manager,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	// By classifies Manager as the engine's findings do: DriftByHuman (a
	// live-drift: kubectl and the configured human managers), DriftByController
	// (a field-conflict: an HPA through the scale subresource, an operator, a
	// webhook), DriftByGitOps (the GitOps controller's own last apply: git
	// changed since it synced) or DriftByUnknown (no owner).
	By DriftBy `json:"by"`
	// Ignored is true when an ignore rule (.driftpreview.yaml, Argo CD
	// ignoreDifferences, argocd-cm) hides the field or its finding.
	Ignored bool `json:"ignored,omitempty"`
}

// DriftBy says who made a live field differ from git.
type DriftBy string

// The kinds of DriftField.By.
const (
	DriftByHuman      DriftBy = "human"
	DriftByController DriftBy = "controller"
	DriftByGitOps     DriftBy = "gitops"
	DriftByUnknown    DriftBy = "unknown"
)

// Rule is the finding rule the engine gives such a field: live-drift for a
// person's edit, field-conflict for another controller; "" otherwise.
func (b DriftBy) Rule() Rule {
	switch b {
	case DriftByHuman:
		return RuleLiveDrift
	case DriftByController:
		return RuleFieldConflict
	}
	return ""
}

// driftFields lists the fields of live that applying git changes: every leaf
// where the prediction (git applied onto live) and live differ, both ways, with
// the manager that owns it live. It works on the objects before ignore rules
// strip them, so that ignored drift is listed too, marked Ignored.
func (d *differ) driftFields(k render.ObjectKey, live, predicted *unstructured.Unstructured) []DriftField {
	if live == nil || predicted == nil || normalizedEqual(live, predicted) {
		return nil
	}
	ln, pn := normalizedView(live), normalizedView(predicted)
	var paths []string
	leafDiffs(pn.Object, ln.Object, nil, &paths) // git sets it otherwise, or live lacks it
	var extra []string
	leafDiffs(ln.Object, pn.Object, nil, &extra) // live has it, the apply removes it
	for _, p := range extra {
		if !slices.ContainsFunc(paths, func(q string) bool { return pointerCovers(q, p) }) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	lines := d.ig.linePaths(k)
	sl, sp := strip(ln, lines), strip(pn, lines)
	owners := fieldOwners(live)
	secret := isSecretKey(k)
	var out []DriftField
	for _, p := range paths {
		if noisyPath(p) {
			continue
		}
		lv, inLive := getPath(ln.Object, p)
		gv, inGit := getPath(pn.Object, p)
		f := DriftField{Path: p, LiveAbsent: !inLive, GitAbsent: !inGit}
		switch {
		case secret:
			if inLive {
				f.Live = MaskedValue
			}
			if inGit {
				f.Git = MaskedValue
			}
		default:
			if inLive {
				f.Live = formatValue(lv)
			}
			if inGit {
				f.Git = formatValue(gv)
			}
		}
		if o := liveOwner(ownersUnder(owners, p), d.opts.Manager, d.opts.HumanManagers); o != nil {
			f.Manager, f.Since = o.Manager, o.Time
		}
		switch {
		case f.Manager == "":
			f.By = DriftByUnknown
		case f.Manager == d.opts.Manager:
			f.By = DriftByGitOps
		case HumanManager(f.Manager, d.opts.HumanManagers):
			f.By = DriftByHuman
		default:
			f.By = DriftByController
		}
		// Ignored: the ignore rules' stripped views agree where the objects
		// do not (paths and jq expressions alike), or a rule hides the finding
		// the engine gives this field (managers, rules).
		slv, sIn := getPath(sl.Object, p)
		sgv, sgIn := getPath(sp.Object, p)
		f.Ignored = (!sIn && !sgIn) || (sIn && sgIn && valuesEqual(slv, sgv))
		if !f.Ignored && f.By.Rule() != "" {
			f.Ignored = d.ig.hideFinding(Finding{Rule: f.By.Rule(), Key: k, Path: p, Manager: f.Manager})
		}
		out = append(out, f)
	}
	return out
}

// noisyPath says whether p is server bookkeeping no drift is about: the
// annotations noisyAnnotations names (the client-side-apply copy of the
// object, a Deployment's revision), which Mask and the diffs leave out too.
func noisyPath(p string) bool {
	for _, a := range noisyAnnotations {
		if pointerCovers("/metadata/annotations/"+strings.ReplaceAll(a, "/", "~1"), p) {
			return true
		}
	}
	return strings.HasPrefix(p, "/metadata/managedFields")
}

// ownersUnder is who owns p: the managers of p or of fields below it (a list
// of another length is one leaf, its items are owned one by one), else of its
// nearest owned parent (ownersOf).
func ownersUnder(owners map[string][]owner, p string) []owner {
	var out []owner
	prefix := p + "/"
	for q, os := range owners {
		if q == p || strings.HasPrefix(q, prefix) {
			out = append(out, os...)
		}
	}
	if len(out) > 0 {
		return out
	}
	return ownersOf(owners, p)
}

// liveOwner picks who changed a field among its owners: a human manager over
// another controller over the GitOps manager (which shares every field it
// applied), the latest first among equals.
func liveOwner(os []owner, gitops string, humans []string) *owner {
	rank := func(o owner) int {
		switch {
		case HumanManager(o.Manager, humans):
			return 2
		case o.Manager != gitops:
			return 1
		}
		return 0
	}
	var best *owner
	for i := range os {
		o := os[i]
		if best == nil || rank(o) > rank(*best) || (rank(o) == rank(*best) && (later(o.Time, best.Time) ||
			(!later(best.Time, o.Time) && o.Manager < best.Manager))) {
			best = &o
		}
	}
	return best
}
