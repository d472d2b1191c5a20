package diffing

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// Options configures the diff of one target. The bot builds it from the repo config
// and the GitOps controller object; diffing never reads config files itself.
type Options struct {
	// Prune is true when the GitOps controller deletes objects removed from git.
	Prune bool
	// Replace is true when the controller replaces objects (Argo CD Replace=true), so
	// an immutable-field change recreates the object instead of failing the sync.
	Replace bool
	// SelfHeal is true when the controller reverts live drift on its own (Argo CD
	// selfHeal, Flux), merge or not.
	SelfHeal bool
	// Manager is the GitOps field manager (kustomize-controller, argocd-controller…).
	Manager string
	// StatefulKinds extends the built-in stateful kinds (PVC, PV, StatefulSet,
	// Namespace, CustomResourceDefinition).
	StatefulKinds []schema.GroupKind
	// HumanManagers extends the built-in human field managers (kubectl-edit …).
	HumanManagers []string
	// Ignore are the ignore rules in force; expiry is judged before, once per
	// report (JudgeIgnores).
	Ignore []IgnoreRule
	Policy Policy
	// HelmCRDs are a Flux HelmRelease's policies for its chart's crds/
	// directory (Manager helm-controller only).
	HelmCRDs HelmCRDs
	// Removal, when set, says that this PR deletes the controller object that
	// deploys the target, and what that does to the objects ("Application
	// `argocd/shop` is deleted by this PR, and Argo CD's resources finalizer
	// deletes what it deployed"); head is then empty and Prune says whether the
	// deletion cascades. It leads every prune and orphan message of the target.
	Removal string
	// Argo, for a target an Argo CD Application deploys, holds its sync options
	// and policy: they and the objects' sync-options annotations decide prunes,
	// cascade deletions and replaces (ArgoSync). Nil for other controllers.
	Argo *ArgoSync
	// ChartMetadata are label and annotation keys (path.Match patterns) that
	// are chart bookkeeping: their changes are folded out of the diff shown
	// (Change.ChartMetadata). DefaultOptions sets DefaultChartMetadata; empty
	// folds nothing.
	ChartMetadata []string
	// DriftFields asks Diff to list, for every head object it compares with
	// live, the fields applying git changes with who owns them live
	// (Change.Drift): `driftpreview drift`. Off for previews.
	DriftFields bool
	// RecordLive asks Diff to record, in TargetReport.Live, every live object
	// it compared with a hash per field (SeenLive): what serve's watch of open
	// PRs needs. Off for the CLI, which would hash every live field for nothing.
	RecordLive bool
	// RemovedKind is the kind of that controller object (a ControllerKinds
	// row): what its controller leaves in place of a cascade (RemovalKeeps).
	RemovedKind string
}

// DefaultOptions is prune on, manager "driftpreview", and the default policy.
func DefaultOptions() Options {
	return Options{Prune: true, Manager: "driftpreview", Policy: DefaultPolicy(), ChartMetadata: slices.Clone(DefaultChartMetadata)}
}

// IgnoreRule hides matching findings and diff lines. Empty fields match anything.
type IgnoreRule struct {
	Group     string   `json:"group,omitempty"`
	Kind      string   `json:"kind,omitempty"`
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name,omitempty"`
	Paths     []string `json:"paths,omitempty"` // JSON pointers; a prefix matches its subtree
	// JQ are Argo CD jqPathExpressions: the fields each selects are removed
	// from both sides of the object's diffs (del(expr), as Argo CD does). They
	// hide diff lines, not findings.
	JQ       []string `json:"jq,omitempty"`
	Managers []string `json:"managers,omitempty"`
	Rules    []Rule   `json:"rules,omitempty"`
	Reason   string   `json:"reason"`
	// Expires is the day the rule stops applying; zero means never.
	Expires time.Time `json:"expires,omitzero"`
	// Origin says where the rule came from (".driftpreview.yaml:12", an Application).
	Origin string `json:"origin,omitempty"`
}

// Policy decides which findings fail the status check.
type Policy struct {
	// Fail lists rules that fail the check whatever their severity (say, prune at
	// warning). Every error-severity finding fails in any case, so raising a rule to
	// error in Severity also makes it fail: a failing status never hides an error.
	Fail []Rule
	// Severity overrides a rule's default severity.
	Severity map[Rule]Severity
}

// DefaultPolicy fails on any error-severity finding.
func DefaultPolicy() Policy { return Policy{} }

// LiveMode says how the live comparison predicts what applying head does: simulated
// locally, by the apiserver's dry run, or not at all.
type LiveMode string

// The live modes. The zero value means LiveSimulate where a mode is configured.
const (
	// LiveSimulate merges head onto live locally with the apiserver's own
	// server-side-apply code; it needs get/list and the OpenAPI document only.
	LiveSimulate LiveMode = "simulate"
	// LiveDryRun asks the apiserver for a server-side apply with dryRun=All; it
	// needs patch RBAC and also runs admission webhooks and validation.
	LiveDryRun LiveMode = "dry-run"
	// LiveOff does not read the cluster.
	LiveOff LiveMode = "off"
)

// LiveModes are the valid live modes, in the order help texts list them.
var LiveModes = []LiveMode{LiveSimulate, LiveDryRun, LiveOff}

// Valid reports whether m is one of LiveModes.
func (m LiveMode) Valid() bool { return slices.Contains(LiveModes, m) }

// LiveState is what diffing/live read from the cluster for one target. A nil
// *LiveState means the live comparison was off.
type LiveState struct {
	Mode    LiveMode // LiveSimulate or LiveDryRun
	Cluster string
	// Err, when set, means the cluster could not be read completely; diffing reports
	// live-unavailable and shows no live diff rather than a partial one.
	Err error
	// Objects are the live objects for every key in base or head, plus live objects
	// that belong to the target by tracking label/annotation or controller inventory.
	Objects map[render.ObjectKey]*unstructured.Unstructured
	// Tracked marks live keys that belong to this target (prune scope).
	Tracked map[render.ObjectKey]bool
	// Predictions hold, per head key, the result of applying head onto live.
	Predictions map[render.ObjectKey]Prediction
	// Children counts live objects inside a Namespace, or instances of a CRD, for
	// keys that head removes.
	Children map[render.ObjectKey]Children
	// Volumes maps a PVC key to its bound PersistentVolume.
	Volumes map[render.ObjectKey]*unstructured.Unstructured
	// Owners maps a head key whose live object carries another GitOps
	// controller object's tracking marks to that controller object's key (an
	// Argo CD Application by its tracking id, a Flux Kustomization by its owner
	// labels): the object is shared (RuleSharedResource).
	Owners map[render.ObjectKey]render.ObjectKey
}

// Prediction is the result of applying one head object onto the live cluster.
type Prediction struct {
	// Object is the predicted live object after the apply (masked for Secrets).
	// It is read only: for an apply that changes nothing it is the live object
	// itself (LiveState.Objects).
	Object *unstructured.Unstructured
	// Conflicts are fields head sets that another manager owns with another value.
	Conflicts []Conflict
	// Err is an apply error the API would return (immutable field, admission).
	Err error
	// Refusal classifies Err when the apiserver itself answered (dry-run mode). It
	// is nil for errors only known by their text (simulate), which diffing reads
	// from Err.
	Refusal *Refusal
	// Note is a remark for the target's notes, such as why an object was not
	// dry-run (its namespace does not exist yet).
	Note string
}

// RefusalKind says why the apiserver refused a dry-run apply.
type RefusalKind string

// The kinds of Refusal. Forbidden and Escalation are about the identity that asks,
// not the manifest: they give no verdict on the object.
const (
	// RefusalForbidden: RBAC denied the request (the identity lacks patch).
	RefusalForbidden RefusalKind = "forbidden"
	// RefusalEscalation: RBAC escalation prevention refused a Role, ClusterRole or
	// binding granting permissions the asking identity does not hold.
	RefusalEscalation RefusalKind = "escalation"
	// RefusalAdmission: an admission plugin, webhook or ValidatingAdmissionPolicy
	// denied the object.
	RefusalAdmission RefusalKind = "admission"
	// RefusalImmutable: validation refused to update a field that cannot change.
	RefusalImmutable RefusalKind = "immutable"
	// RefusalInvalid: any other rejection (validation, conflict, bad request).
	RefusalInvalid RefusalKind = "invalid"
)

// Refusal is one classified apiserver answer to a dry-run apply.
type Refusal struct {
	Kind RefusalKind
	// By names who refused: `admission webhook "x"`, `ValidatingAdmissionPolicy
	// "p"`, `admission plugin PersistentVolumeClaimResize`; empty when unknown.
	By string
	// Paths are the refused fields as JSON pointers (from the status causes).
	Paths []string
	// Detail is a short reason without values ("field is immutable"), safe to show
	// for Secrets too.
	Detail string
}

// Conflict is one field that head sets but another field manager owns live.
type Conflict struct {
	Path      string // JSON pointer
	Manager   string
	Operation string // Apply or Update
	Time      *time.Time
	Live      any // the live value (masked for Secrets)
	Head      any // the value head sets
}

// Children summarises what a pruned Namespace or CRD takes with it.
type Children struct {
	Total  int
	ByKind map[string]int // e.g. PersistentVolumeClaim: 2
}
