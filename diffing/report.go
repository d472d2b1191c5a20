package diffing

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// Severity ranks findings; a report's Worst is the maximum over its findings.
type Severity int

// Severities run info < warning < error.
const (
	SeverityNone Severity = iota
	SeverityInfo
	SeverityWarning
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityInfo:
		return "info"
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "none"
}

// ParseSeverity reads the names used in config and JSON.
func ParseSeverity(s string) (Severity, error) {
	switch s {
	case "info":
		return SeverityInfo, nil
	case "warning":
		return SeverityWarning, nil
	case "error":
		return SeverityError, nil
	case "none":
		return SeverityNone, nil
	}
	return SeverityNone, fmt.Errorf("unknown severity %q (want info, warning or error)", s)
}

// MarshalJSON writes the severity by name, as the JSON contract requires.
func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a severity name.
func (s *Severity) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err != nil {
		return err
	}
	v, err := ParseSeverity(name)
	*s = v
	return err
}

// Rule is a finding's stable ID: the public contract of config, JSON and comment.
type Rule string

// The rules of DESIGN.md's table.
const (
	RulePrune           Rule = "prune"
	RulePruneStateful   Rule = "prune-stateful"
	RulePruneCascade    Rule = "prune-cascade"
	RuleDataLoss        Rule = "data-loss"
	RuleOrphan          Rule = "orphan"
	RuleRename          Rule = "rename"
	RuleStatefulChange  Rule = "stateful-change"
	RuleImmutableField  Rule = "immutable-field"
	RuleFieldConflict   Rule = "field-conflict"
	RuleLiveDrift       Rule = "live-drift"
	RuleSecretChange    Rule = "secret-change"
	RuleRenderError     Rule = "render-error"
	RuleConfigError     Rule = "config-error"
	RuleIgnoreExpired   Rule = "ignore-expired"
	RuleLiveUnavailable Rule = "live-unavailable"
	// RuleSyncDisabled and RuleControllerMissing come from live GitOps controller
	// state (Argo CD Applications, Flux Kustomizations): the merge will not reach
	// the cluster on its own.
	RuleSyncDisabled      Rule = "sync-disabled"
	RuleControllerMissing Rule = "controller-missing"
	// RuleNotRendered lists a target whose source lies outside the repository.
	RuleNotRendered Rule = "not-rendered"
	// RuleApplyError is an admission or validation rejection of a head object that
	// is not about an immutable field: the sync fails until the manifest is fixed.
	RuleApplyError Rule = "apply-error"
	// RuleHashRotation is a kustomize generator's ConfigMap or Secret under a new
	// content-hash name: kustomize rewrites the references, so nothing breaks.
	RuleHashRotation Rule = "hash-rotation"
	// RuleSharedResource is an object that two GitOps controller objects deploy
	// (two Applications or Kustomizations of the PR, or one of the PR and the
	// live owner its tracking marks name): each overwrites the other's apply.
	RuleSharedResource Rule = "shared-resource"
)

// DefaultSeverity is each rule's severity before policy.severity overrides it.
var DefaultSeverity = map[Rule]Severity{
	RulePrune:             SeverityWarning,
	RulePruneStateful:     SeverityError,
	RulePruneCascade:      SeverityError,
	RuleDataLoss:          SeverityError,
	RuleOrphan:            SeverityInfo,
	RuleRename:            SeverityWarning, // error when the kind is stateful
	RuleHashRotation:      SeverityInfo,
	RuleStatefulChange:    SeverityWarning,
	RuleImmutableField:    SeverityError,
	RuleFieldConflict:     SeverityWarning,
	RuleLiveDrift:         SeverityWarning,
	RuleSecretChange:      SeverityInfo,
	RuleRenderError:       SeverityError,
	RuleConfigError:       SeverityError,
	RuleIgnoreExpired:     SeverityWarning,
	RuleLiveUnavailable:   SeverityError,
	RuleSyncDisabled:      SeverityWarning,
	RuleControllerMissing: SeverityWarning,
	RuleNotRendered:       SeverityInfo,
	RuleApplyError:        SeverityError,
	RuleSharedResource:    SeverityWarning, // error under Argo CD FailOnSharedResource=true
}

// Finding is one risk, stated as a sentence about one object. Message never holds a
// Secret value.
type Finding struct {
	Rule     Rule             `json:"rule"`
	Severity Severity         `json:"severity"`
	Key      render.ObjectKey `json:"key"`
	// Path is a JSON pointer into the object, e.g. /spec/replicas.
	Path string `json:"path,omitempty"`
	// Manager is the field manager that owns Path live, when one is involved.
	Manager string     `json:"manager,omitempty"`
	Since   *time.Time `json:"since,omitempty"`
	Message string     `json:"message"`
	// Failing is true when policy makes this finding fail the status check: a
	// finding the PR introduces whose severity or rule the policy fails on. It is
	// always written to JSON, false included.
	Failing bool `json:"failing"`
	// PreExisting is true when the same finding (rule, object and path, at the
	// same or a worse severity) already holds at the PR's base, such as a render
	// error identical at base and head or live drift on an object the PR does not
	// change. The PR does not introduce it, so it never fails the check.
	PreExisting bool `json:"preExisting,omitempty"`
}

// Action says what the PR does to one object.
type Action string

// The actions of the JSON contract.
const (
	ActionCreated   Action = "created"
	ActionModified  Action = "modified"
	ActionDeleted   Action = "deleted"
	ActionUnchanged Action = "unchanged"
)

// Change is one object's base→head change, plus what applying head does to the live
// object. Diffs are unified YAML diffs over normalised, masked objects.
type Change struct {
	Key    render.ObjectKey `json:"key"`
	Action Action           `json:"action"`
	Source string           `json:"source,omitempty"`
	// Diff is base → head (what this PR changes).
	Diff string `json:"diff,omitempty"`
	// LiveDiff is live → predicted live after the merge (what the merge does).
	LiveDiff string `json:"liveDiff,omitempty"`
	// LiveAction is what the merge does to the live object: created, modified,
	// deleted or unchanged; empty when live was not compared.
	LiveAction Action `json:"liveAction,omitempty"`
	// RevertsDrift is true when LiveDiff undoes a human edit.
	RevertsDrift bool `json:"revertsDrift,omitempty"`
	// IgnoredLines counts diff lines hidden by ignore rules.
	IgnoredLines int `json:"ignoredLines,omitempty"`
	// Fields are the changed fields of a modified object, by path, as Diff
	// shows them (normalised, masked, ignored paths removed): at most
	// MaxFieldChanges, and MoreFields counts the rest. For a terminal's
	// summary; not part of the JSON contract.
	Fields     []FieldChange `json:"-"`
	MoreFields int           `json:"-"`
	// ChartMetadata are the chart bookkeeping labels and annotations
	// (Options.ChartMetadata) a modified object's Diff changes, sorted; then
	// ShownDiff is Diff without them ("" when nothing else changed), the diff
	// a reader is shown with one "chart metadata changed" line. Fields leave
	// them out too. Not part of the JSON contract: Diff keeps every line.
	ChartMetadata []string `json:"-"`
	ShownDiff     *string  `json:"-"`
	// Drift lists the live fields applying git changes, with who owns them
	// live, ignored ones included (Options.DriftFields; nil otherwise). Not
	// part of the preview's JSON: `driftpreview drift` reports it.
	Drift []DriftField `json:"-"`
}

// ReaderDiff is the diff to show a reader: Diff with chart bookkeeping folded
// out when there is some (ShownDiff), else Diff.
func (c Change) ReaderDiff() string {
	if c.ShownDiff != nil {
		return *c.ShownDiff
	}
	return c.Diff
}

// Summary counts a target's changes.
type Summary struct {
	Created   int `json:"created"`
	Modified  int `json:"modified"`
	Deleted   int `json:"deleted"`
	Unchanged int `json:"unchanged"`
	// Ignored counts findings and diff lines hidden by ignore rules.
	IgnoredFindings int `json:"ignoredFindings,omitempty"`
	IgnoredLines    int `json:"ignoredLines,omitempty"`
}

// Controller says where a target came from when it was discovered from a GitOps
// controller object (Argo CD Application, Flux Kustomization/HelmRelease).
type Controller struct {
	Kind      string `json:"kind"` // a ControllerKinds row: Application, ApplicationSet, Kustomization, HelmRelease
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Source    string `json:"source,omitempty"` // file in the repo that declares it
	AutoSync  bool   `json:"autoSync"`
	Prune     bool   `json:"prune"`
	SelfHeal  bool   `json:"selfHeal"`
	Suspended bool   `json:"suspended,omitempty"`
	Replace   bool   `json:"replace,omitempty"`
	// Deleted is true when this PR deletes the controller object: base declares
	// it and head does not. What it deployed goes with it when the deletion
	// cascades (see Finalizer), and stays unmanaged otherwise.
	Deleted bool `json:"deleted,omitempty"`
	// RenamedTo is set on a deleted Argo CD Application when the same PR
	// declares an Application of another name with the same source and
	// destination ("namespace/name"): the PR renames it.
	RenamedTo string `json:"renamedTo,omitempty"`
	// Finalizer is true when the Argo CD Application carries Argo CD's resources
	// finalizer (resources-finalizer.argocd.argoproj.io), which makes deleting the
	// Application delete everything it deployed.
	Finalizer bool `json:"-"`
	// Generator names the ApplicationSet that generates the Application (in the
	// Application's namespace); empty for an Application declared as such.
	Generator string `json:"generator,omitempty"`
	// GeneratorKeeps is true when that ApplicationSet's applicationsSync policy
	// (create-only, create-update) does not let its controller delete an
	// Application it no longer generates.
	GeneratorKeeps bool `json:"-"`
	// Argo holds an Argo CD Application's sync options and policy as the head
	// declares them (the base's when the head does not): what the controller
	// does after the merge (Options.Argo).
	Argo *ArgoSync `json:"-"`
	// DeletionPolicy is a Flux Kustomization's spec.deletionPolicy (empty:
	// MirrorPrune, which follows Prune): what deleting it does to its inventory.
	DeletionPolicy string `json:"-"`
	// DriftDetection is a Flux HelmRelease's spec.driftDetection.mode
	// (enabled, warn, disabled; empty: disabled): SelfHeal is true for
	// enabled only.
	DriftDetection string `json:"-"`
}

// TargetReport is everything found for one target.
type TargetReport struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Cluster string `json:"cluster,omitempty"`
	// LiveChecked is true only when the live comparison ran completely.
	LiveChecked bool        `json:"liveChecked"`
	LiveMode    LiveMode    `json:"liveMode,omitempty"`
	Manager     string      `json:"manager,omitempty"` // the GitOps field manager simulated
	Controller  *Controller `json:"controller,omitempty"`
	Summary     Summary     `json:"summary"`
	Changes     []Change    `json:"changes"`
	// Images are the container images the PR adds, removes or changes, in
	// object key order (ImageChanges).
	Images   []ImageChange `json:"images,omitempty"`
	Findings []Finding     `json:"findings"`
	Notes    []string      `json:"notes,omitempty"`
	Error    string        `json:"error,omitempty"`
	// Skipped says why a listed target was not rendered at all (its source is
	// outside the repository, an unsupported generator…).
	Skipped string `json:"skipped,omitempty"`
	// NotAffected says why the target was judged unchanged without rendering
	// it: the pull request changes none of the files it is rendered from. It
	// has no changes, and no live comparison was made for it.
	NotAffected string   `json:"notAffected,omitempty"`
	Worst       Severity `json:"worst"`
	// LiveOwners are the other GitOps controller objects that live head objects
	// are tracked by (LiveState.Owners), for the pipeline's shared-resource
	// findings across targets.
	LiveOwners map[render.ObjectKey]render.ObjectKey `json:"-"`
	// Live are the live objects of every base and head key as this preview
	// read them (absent ones included), in key order; only when the live state
	// was read. The bot's watch re-previews the pull request when one of them
	// changes (bot/watch). Not part of the JSON contract.
	Live []LiveObject `json:"-"`
}

// Report is the whole result of one preview: what the comment and the check show.
type Report struct {
	Base        string         `json:"base"`
	Head        string         `json:"head"`
	GeneratedAt time.Time      `json:"generatedAt"`
	Targets     []TargetReport `json:"targets"`
	// Findings not tied to one target (config-error, ignore-expired).
	Findings []Finding `json:"findings,omitempty"`
	// Notes are remarks about the run as a whole (discovery, unsupported sources).
	Notes []string `json:"notes,omitempty"`
	Worst Severity `json:"worst"`
	// Failing is true when a finding the PR introduces fails the policy;
	// pre-existing findings never do.
	Failing bool `json:"failing"`
}

// Compared reports whether the target's base and head were both rendered and
// diffed, or judged alike because the PR changes none of the target's files
// (NotAffected): a target that failed to render, or was listed as not
// rendered, was not.
func (t *TargetReport) Compared() bool { return t.Error == "" && t.Skipped == "" }

// Coverage counts the targets that were compared and those that were not.
func (r *Report) Coverage() (compared, notCompared int) {
	if r == nil {
		return 0, 0
	}
	for i := range r.Targets {
		if r.Targets[i].Compared() {
			compared++
		} else {
			notCompared++
		}
	}
	return compared, notCompared
}

// NothingCompared is true when the report cannot judge the PR at all: no target
// was compared, because every target failed to render or was not rendered, or the
// repo config is invalid. It is then neither safe nor failing by itself: the bot
// reports a neutral check (unless an introduced finding fails it).
func (r *Report) NothingCompared() bool {
	compared, notCompared := r.Coverage()
	if r == nil || compared > 0 {
		return false
	}
	return notCompared > 0 || slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Rule == RuleConfigError })
}
