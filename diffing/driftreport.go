package diffing

import (
	"fmt"
	"slices"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// DriftReport is what `driftpreview drift` found: one commit of the repository
// (rendered as a preview renders its head) compared with the live cluster,
// target by target, with no base↔head diff. NewDriftReport builds it from the
// preview Report of that commit diffed against itself.
type DriftReport struct {
	// Ref is the ref as asked (or the default branch it resolved to), Commit
	// its SHA.
	Ref         string        `json:"ref"`
	Commit      string        `json:"commit"`
	GeneratedAt time.Time     `json:"generatedAt"`
	Targets     []DriftTarget `json:"targets"`
	// Findings not tied to one target (config-error, ignore-expired, the
	// not-rendered cap).
	Findings []Finding `json:"findings,omitempty"`
	Notes    []string  `json:"notes,omitempty"`
	// Drifted is true when some object of some target has drift that git does
	// not describe (DriftObject.Drifted): the CLI exits 1.
	Drifted bool `json:"drifted"`
}

// DriftTarget is one target's drift.
type DriftTarget struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Cluster string `json:"cluster,omitempty"`
	// Controller is the Argo CD or Flux object that deploys the target, with
	// the sync policy that decides each Outcome: the live object's when it was
	// read (its autoSync, selfHeal, suspended), else git's.
	Controller *Controller `json:"controller,omitempty"`
	// LiveChecked is true when the whole live state of the target was read
	// and compared; NotCompared says why not (not rendered, a render error,
	// the cluster could not be read).
	LiveChecked bool   `json:"liveChecked"`
	NotCompared string `json:"notCompared,omitempty"`
	// DriftedObjects counts the objects with drift git does not describe
	// (Objects[].drifted): the gauge driftpreview_drift_objects.
	DriftedObjects int           `json:"driftedObjects"`
	Objects        []DriftObject `json:"objects"`
	// Findings are the target's findings that are not drift itself: the
	// controller's state (sync-disabled, controller-missing), a cluster that
	// could not be read (live-unavailable), render errors, refused applies.
	Findings []Finding `json:"findings,omitempty"`
	Notes    []string  `json:"notes,omitempty"`
}

// DriftState says how a live object differs from git.
type DriftState string

// The states of DriftObject.State.
const (
	// DriftModified: the object is live, and fields differ (Fields).
	DriftModified DriftState = "modified"
	// DriftMissing: git declares the object, the cluster lacks it (deleted
	// by hand, or never synced).
	DriftMissing DriftState = "missing"
	// DriftExtra: the controller tracks the object live, git no longer
	// declares it (not yet pruned, or prune is off).
	DriftExtra DriftState = "extra"
)

// DriftOutcome is what the GitOps controller does about a drift.
type DriftOutcome string

// The outcomes.
const (
	// DriftReverted: the controller puts git back on its own (Argo CD
	// self-heal, kustomize-controller's next reconcile, helm-controller's
	// drift correction), or recreates a missing object.
	DriftReverted DriftOutcome = "reverted"
	// DriftKept: nothing reverts it until the next sync (self-heal off,
	// auto-sync off, suspended, Helm drift detection off or warn-only).
	DriftKept DriftOutcome = "kept"
	// DriftFights: another controller owns the field (an HPA's replicas):
	// the GitOps controller reverts it and that controller sets it again.
	DriftFights DriftOutcome = "fights"
	// DriftIgnored: an ignore rule (Argo CD ignoreDifferences,
	// .driftpreview.yaml) hides it: git describes it.
	DriftIgnored DriftOutcome = "ignored"
	// DriftPending: the GitOps controller's own last apply differs from
	// git (git changed since it synced): the next sync applies it. Git
	// describes it; it is not drift.
	DriftPending DriftOutcome = "pending"
	// DriftPruned: an extra object the controller prunes on its next sync.
	DriftPruned DriftOutcome = "pruned"
)

// undescribed says whether an outcome is drift that git does not describe.
func (o DriftOutcome) undescribed() bool {
	return o == DriftReverted || o == DriftKept || o == DriftFights
}

// DriftObject is one live object that differs from git.
type DriftObject struct {
	Key   render.ObjectKey `json:"key"`
	State DriftState       `json:"state"`
	// Outcome is the object's: for a modified object the first of kept,
	// fights, reverted, pending and ignored that one of its fields has.
	Outcome DriftOutcome `json:"outcome"`
	// Drifted is true when the object has drift git does not describe: a
	// field by anyone but the GitOps controller that no ignore rule hides,
	// or a missing object.
	Drifted bool `json:"drifted"`
	// Message says what happens, in a sentence.
	Message string `json:"message"`
	// Fields are the fields that differ (modified objects), ignored ones
	// included.
	Fields []DriftEntry `json:"fields,omitempty"`
	// Diff is live → git (what the next sync does), masked, ignored fields
	// left out, as preview's liveDiff.
	Diff string `json:"diff,omitempty"`
}

// DriftEntry is one drifted field with what the controller does about it.
type DriftEntry struct {
	DriftField
	// Rule is the finding the engine gives the field in a preview:
	// live-drift (a person's edit) or field-conflict (another controller).
	Rule    Rule         `json:"rule,omitempty"`
	Outcome DriftOutcome `json:"outcome"`
	Message string       `json:"message"`
}

// TargetCount is one target's count of drifted objects.
type TargetCount struct {
	Target, Cluster string
	Objects         int
}

// Counts lists, per target that was compared with live, how many objects
// have drift git does not describe, in target order: the values of the
// driftpreview_drift_objects{repo,target,cluster} gauge. Targets that could
// not be compared are left out (their count is unknown, not zero).
func (r *DriftReport) Counts() []TargetCount {
	var out []TargetCount
	for _, t := range r.Targets {
		if t.NotCompared == "" {
			out = append(out, TargetCount{Target: t.Name, Cluster: t.Cluster, Objects: t.DriftedObjects})
		}
	}
	return out
}

// Compared counts the targets compared with live and those that were not.
func (r *DriftReport) Compared() (compared, notCompared int) {
	for _, t := range r.Targets {
		if t.NotCompared == "" {
			compared++
		} else {
			notCompared++
		}
	}
	return compared, notCompared
}

// NewDriftReport turns the preview Report of one commit diffed against itself
// and the live cluster (with Options.DriftFields) into its drift: per target,
// the live objects that differ from git, each field with who changed it, when,
// and what the GitOps controller does about it.
func NewDriftReport(rep *Report, ref string) *DriftReport {
	out := &DriftReport{Ref: ref, Commit: rep.Head, GeneratedAt: rep.GeneratedAt, Targets: []DriftTarget{},
		Findings: slices.Clone(rep.Findings), Notes: slices.Clone(rep.Notes)}
	for i := range rep.Targets {
		t := driftTarget(&rep.Targets[i])
		out.Drifted = out.Drifted || t.DriftedObjects > 0
		out.Targets = append(out.Targets, t)
	}
	return out
}

func driftTarget(tr *TargetReport) DriftTarget {
	t := DriftTarget{Name: tr.Name, Path: tr.Path, Cluster: tr.Cluster, Controller: tr.Controller,
		LiveChecked: tr.LiveChecked, Objects: []DriftObject{}, Notes: slices.Clone(tr.Notes)}
	for _, f := range tr.Findings {
		switch f.Rule {
		case RuleLiveDrift, RuleFieldConflict, RulePrune, RulePruneStateful, RuleOrphan, RuleDataLoss, RulePruneCascade:
			// Drift itself, and what the next sync does to extra objects:
			// in Objects.
		default:
			f.PreExisting, f.Failing = false, false
			t.Findings = append(t.Findings, f)
		}
	}
	switch {
	case tr.Skipped != "":
		t.NotCompared = "not rendered: " + tr.Skipped
	case tr.Error != "":
		t.NotCompared = "render error: " + tr.Error
	case tr.LiveMode == LiveOff || tr.LiveMode == "":
		t.NotCompared = "no live comparison for this target's cluster"
	case !tr.LiveChecked:
		t.NotCompared = "the live state could not be read completely"
		for _, f := range tr.Findings {
			if f.Rule == RuleLiveUnavailable && f.Key == (render.ObjectKey{}) {
				t.NotCompared = f.Message
				break
			}
		}
	}
	heals, how := selfHeals(tr.Controller)
	for _, c := range tr.Changes {
		var o DriftObject
		switch {
		case c.Action == ActionDeleted:
			if c.LiveAction == ActionUnchanged || c.LiveAction == "" {
				if !slices.ContainsFunc(tr.Findings, func(f Finding) bool { return f.Key == c.Key && f.Rule == RuleOrphan }) {
					continue // not live: nothing to prune
				}
				o = DriftObject{Key: c.Key, State: DriftExtra, Outcome: DriftKept}
			} else {
				o = DriftObject{Key: c.Key, State: DriftExtra, Outcome: DriftPruned, Diff: c.LiveDiff}
			}
			o.Message = extraMessage(tr, c.Key, o.Outcome)
		case c.LiveAction == ActionCreated:
			o = DriftObject{Key: c.Key, State: DriftMissing, Outcome: DriftKept, Drifted: true,
				Message: "Git declares it and the cluster lacks it (deleted, or never synced). " + how + ".", Diff: c.LiveDiff}
			if heals {
				o.Outcome = DriftReverted
			}
		case len(c.Drift) > 0 || c.LiveAction == ActionModified:
			o = modifiedObject(tr, c, heals, how)
		default:
			continue
		}
		if o.Drifted {
			t.DriftedObjects++
		}
		t.Objects = append(t.Objects, o)
	}
	return t
}

// modifiedObject classifies the drifted fields of one live object.
func modifiedObject(tr *TargetReport, c Change, heals bool, how string) DriftObject {
	o := DriftObject{Key: c.Key, State: DriftModified, Diff: c.LiveDiff}
	for _, f := range c.Drift {
		e := DriftEntry{DriftField: f, Rule: f.By.Rule()}
		e.Outcome, e.Message = fieldOutcome(tr, f, heals, how)
		o.Drifted = o.Drifted || e.Outcome.undescribed()
		o.Fields = append(o.Fields, e)
	}
	if len(o.Fields) == 0 {
		// The live diff shows a change no field names (a value the
		// server stores in another form): the object as a whole.
		o.Outcome, o.Drifted = DriftKept, true
		if heals {
			o.Outcome = DriftReverted
		}
		o.Message = "The live object differs from git: " + how
		return o
	}
	for _, want := range []DriftOutcome{DriftKept, DriftFights, DriftReverted, DriftPending, DriftIgnored} {
		if i := slices.IndexFunc(o.Fields, func(e DriftEntry) bool { return e.Outcome == want }); i >= 0 {
			o.Outcome = want
			break
		}
	}
	n := len(o.Fields)
	switch {
	case n == 1:
		o.Message = o.Fields[0].Message
	default:
		o.Message = fmt.Sprintf("%d fields differ from git.", n)
	}
	return o
}

// fieldOutcome says what the controller does about one drifted field.
func fieldOutcome(tr *TargetReport, f DriftField, heals bool, how string) (DriftOutcome, string) {
	who := "someone (no field manager owns the live value)"
	if f.Manager != "" {
		who = code(f.Manager)
		if desc := describeManager(f.Manager, f.Path); desc != "" && desc != f.Manager {
			who += " (" + desc + ")"
		}
	}
	when := ""
	if f.Since != nil {
		when = " on " + f.Since.UTC().Format("2006-01-02 15:04 UTC")
	}
	what := fmt.Sprintf("%s was changed by %s%s", code(f.Path), who, when)
	if f.By == DriftByUnknown {
		what = fmt.Sprintf("%s differs from git, and no field manager owns the live value", code(f.Path))
	}
	switch {
	case f.Ignored && tr.Controller != nil && tr.Controller.Argo != nil && !tr.Controller.Argo.RespectsIgnores():
		// Without RespectIgnoreDifferences=true a sync applies the ignored
		// fields as git has them (argo-cd user-guide/sync-options.md).
		return DriftIgnored, what + ". Argo CD's ignoreDifferences hides it, so self-heal leaves it; without the sync option RespectIgnoreDifferences=true the next sync of another change sets git's value again."
	case f.Ignored:
		return DriftIgnored, what + ". An ignore rule hides it (ignoreDifferences or .driftpreview.yaml), so the controller leaves it."
	case f.By == DriftByGitOps:
		return DriftPending, fmt.Sprintf("%s holds what %s last applied; git changed since, and the next sync applies it.", code(f.Path), code(f.Manager))
	case f.By == DriftByController && heals:
		// Argo CD's self-heal and Flux's reconcile reapply git over the
		// field, and the other controller sets it again: they fight, as a
		// preview's field-conflict says.
		return DriftFights, what + ". " + how + ", and " + code(f.Manager) + " sets it again: the two controllers fight over it."
	case heals:
		return DriftReverted, what + ". " + how + "."
	}
	return DriftKept, what + ". " + how + "."
}

// selfHeals says whether the controller reverts live drift on its own, and how
// (or why not), in a clause.
func selfHeals(c *Controller) (bool, string) {
	if c == nil {
		return false, "No Argo CD or Flux object deploys the target and its sync.selfHeal is off, so it stays until git is applied again"
	}
	name := code(c.Namespace + "/" + c.Name)
	switch c.Kind {
	case ArgoCDApplication.Kind:
		// Argo CD's automated sync policy (user-guide/auto_sync.md,
		// "Automatic Self-Healing"): with selfHeal a sync starts whenever
		// live drifts from git; without it an automated sync runs only on a
		// new commit, and without automated only when someone syncs.
		switch {
		case c.SelfHeal && c.AutoSync:
			return true, "Argo CD self-heal reverts it (Application " + name + " has syncPolicy.automated.selfHeal)"
		case c.AutoSync:
			return false, "Self-heal is off for Application " + name + ", so it stays until the next commit is synced"
		default:
			return false, "Auto-sync is off for Application " + name + ", so it stays until someone syncs it"
		}
	case FluxKustomization.Kind:
		// kustomize-controller re-applies every object on each
		// reconciliation (spec.interval) with a forced server-side apply,
		// which takes the fields back (its README: "corrects drift by
		// patching objects with Kubernetes server-side apply"); a suspended
		// Kustomization is not reconciled.
		if c.Suspended {
			return false, "Kustomization " + name + " is suspended, so it stays until it is resumed"
		}
		return true, "kustomize-controller reverts it at the next reconciliation of Kustomization " + name + " (spec.interval, a forced server-side apply)"
	case FluxHelmRelease.Kind:
		// helm-controller's spec.driftDetection.mode (internal/reconcile/
		// state.go, DetermineReleaseState): "enabled" detects and corrects
		// drift, "warn" only reports it in an event and the log,
		// "disabled" (the default) does not look.
		switch {
		case c.Suspended:
			return false, "HelmRelease " + name + " is suspended, so it stays until it is resumed"
		case c.SelfHeal:
			return true, "helm-controller corrects it (HelmRelease " + name + " has spec.driftDetection.mode: enabled)"
		case c.DriftDetection == "warn":
			return false, "helm-controller only reports it (HelmRelease " + name + " has spec.driftDetection.mode: warn), so it stays until the next Helm upgrade"
		default:
			return false, "helm-controller's drift detection is off for HelmRelease " + name + " (spec.driftDetection.mode), so it stays until the next Helm upgrade"
		}
	}
	if c.SelfHeal {
		return true, "The target's sync.selfHeal says its controller reverts it"
	}
	return false, "The target's sync.selfHeal is off, so it stays until git is applied again"
}

// extraMessage says what happens to an object the controller tracks live and
// git no longer declares, from the preview's prune or orphan finding.
func extraMessage(tr *TargetReport, k render.ObjectKey, o DriftOutcome) string {
	for _, f := range tr.Findings {
		if f.Key == k && (f.Rule == RulePrune || f.Rule == RulePruneStateful || f.Rule == RuleOrphan) {
			return "Live and tracked by the controller, not in git: " + lowerFirst(f.Message)
		}
	}
	if o == DriftPruned {
		return "Live and tracked by the controller, not in git: the next sync prunes it."
	}
	return "Live and tracked by the controller, not in git: it stays."
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	if c := s[0]; c >= 'A' && c <= 'Z' {
		return string(c+'a'-'A') + s[1:]
	}
	return s
}
