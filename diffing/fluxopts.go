package diffing

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// The object marks kustomize-controller reads before it applies or prunes
// (fluxcd/kustomize-controller internal/controller/kustomization_controller.go:
// apply() sets ApplyOptions.ExclusionSelector, IfNotPresentSelector and
// ForceSelector, deleteObjects() the prune Exclusions; the values are api/v1
// kustomization_types.go's EnabledValue, DisabledValue, IfNotPresentValue,
// IgnoreValue and MergeValue).
const (
	FluxSSAMark       = GroupFluxKustomize + "/ssa"
	FluxForceMark     = GroupFluxKustomize + "/force"
	FluxPruneMark     = GroupFluxKustomize + "/prune"
	FluxReconcileMark = GroupFluxKustomize + "/reconcile"
)

// fluxMarked reports whether obj carries key=val as a label or an annotation,
// the value compared case-insensitively, as fluxcd/pkg ssa/utils/meta.go
// AnyInMetadata matches every selector above.
func fluxMarked(obj *unstructured.Unstructured, key, val string) bool {
	if obj == nil {
		return false
	}
	l, a := obj.GetLabels()[key], obj.GetAnnotations()[key]
	return (l != "" && strings.EqualFold(l, val)) || (a != "" && strings.EqualFold(a, val))
}

// fluxPruneExclusion names the mark that keeps kustomize-controller from deleting
// obj when it garbage-collects (deleteObjects' Exclusions: prune disabled,
// reconcile disabled, ssa Ignore), or "".
func fluxPruneExclusion(obj *unstructured.Unstructured) string {
	switch {
	case fluxMarked(obj, FluxPruneMark, "disabled"):
		return code(FluxPruneMark + ": disabled")
	case fluxMarked(obj, FluxSSAMark, "Ignore"):
		return code(FluxSSAMark + ": Ignore")
	case fluxMarked(obj, FluxReconcileMark, "disabled"):
		return code(FluxReconcileMark + ": disabled")
	}
	return ""
}

// fluxKustomize says whether the target is applied by kustomize-controller.
func (d *differ) fluxKustomize() bool { return d.opts.Manager == FluxKustomization.Manager }

// fluxSkip says why kustomize-controller does not apply head onto live, or "".
// fluxcd/pkg ssa/manager_apply.go shouldSkipApply: an object whose desired or
// in-cluster metadata matches the ExclusionSelector (ssa: Ignore, reconcile:
// disabled) is skipped; one whose desired metadata matches the
// IfNotPresentSelector (ssa: IfNotPresent) is skipped once it exists.
func (d *differ) fluxSkip(head, live *unstructured.Unstructured) (mark, what string) {
	if !d.fluxKustomize() {
		return "", ""
	}
	for _, o := range []*unstructured.Unstructured{head, live} {
		switch {
		case fluxMarked(o, FluxSSAMark, "Ignore"):
			return code(FluxSSAMark + ": Ignore"), "never applies it"
		case fluxMarked(o, FluxReconcileMark, "disabled"):
			return code(FluxReconcileMark + ": disabled"), "never applies it"
		}
	}
	if live != nil && fluxMarked(head, FluxSSAMark, "IfNotPresent") {
		return code(FluxSSAMark + ": IfNotPresent"), "creates it only when it is missing and never updates it"
	}
	return "", ""
}

// skipApply records that the controller leaves a head object alone: nothing
// changes live, and a change the PR makes to it is a sync-disabled finding that
// names the mark, since the file diff promises a change the merge does not make.
func (d *differ) skipApply(k render.ObjectKey, mark, what string) {
	c := d.changes[k]
	c.LiveAction, c.LiveDiff = ActionUnchanged, ""
	d.skipped[k] = true
	// Nothing is applied in place: a stateful-change (checkModified) would say
	// the contrary.
	d.found = slices.DeleteFunc(d.found, func(f Finding) bool { return f.Key == k && f.Rule == RuleStatefulChange })
	if c.Action == ActionUnchanged {
		return
	}
	verb := "change to it"
	if c.Action == ActionCreated {
		verb = "new object"
	}
	d.add(Finding{Rule: RuleSyncDisabled, Key: k, Message: fmt.Sprintf(
		"%s: %s %s, so this PR's %s is not applied.", mark, d.who(), what, verb)})
}

// replacedBy names the option that makes the controller delete and recreate an
// object whose update the API refuses, or "" when the sync fails instead: the
// target's replace option, or kustomize-controller's force mark on the desired or
// in-cluster object (fluxcd/pkg ssa/manager_apply.go shouldForceApply: an
// immutable-field error with ApplyOptions.Force, set from the Kustomization's
// spec.force, or a ForceSelector match deletes the object and applies it again).
func (d *differ) replacedBy(k render.ObjectKey) string {
	if a := d.opts.Argo; a != nil {
		// The object's Force=true (ArgoSync.Recreates).
		head, live := d.objects(k)
		by, _ := a.Recreates(k, head, live)
		return by
	}
	if d.fluxKustomize() {
		var live *unstructured.Unstructured
		if d.liveOK {
			live = d.in.Live.Objects[k]
		}
		var head *unstructured.Unstructured
		if h := d.head[k]; h != nil {
			head = h.Obj
		}
		switch {
		case d.opts.Replace:
			return "the Kustomization's `spec.force: true`"
		case fluxMarked(head, FluxForceMark, "enabled") || fluxMarked(live, FluxForceMark, "enabled"):
			return code(FluxForceMark + ": enabled")
		}
		return ""
	}
	if d.opts.Replace {
		return "replace"
	}
	return ""
}

// gkJob is a batch Job: recreating one runs it again.
var gkJob = schema.GroupKind{Group: "batch", Kind: "Job"}

// HelmCRDs are helm-controller's policies for the CustomResourceDefinitions in a
// chart's crds/ directory, which Helm applies apart from the release
// (fluxcd/helm-controller internal/action/crds.go applyCRDs): Skip, Create or
// CreateReplace, for the install and for an upgrade. Empty is the controller's
// default.
type HelmCRDs struct {
	Install, Upgrade string
}

// crdsDirObject says whether a rendered object comes from a chart's crds/
// directory (render/helm.go parses ch.CRDObjects() with their file names), not
// from templates/.
func crdsDirObject(o *render.Object) bool {
	if o == nil || o.Key.Group != "apiextensions.k8s.io" || o.Key.Kind != "CustomResourceDefinition" {
		return false
	}
	return slices.Contains(strings.Split(path.Dir(o.Source), "/"), "crds") &&
		!slices.Contains(strings.Split(path.Dir(o.Source), "/"), "templates")
}

// helmCRDPolicy is the CRD policy that applies to this merge, and the field that
// sets it: the upgrade's when the release is installed (any base object exists
// live), else the install's. helm-controller resolves an empty policy to Create
// for both (internal/action/crds.go crdPolicyOrDefault, DefaultCRDPolicy; its
// docs call Skip the upgrade default, and both leave an existing CRD as it is).
func (d *differ) helmCRDPolicy() (policy, field string) {
	c := d.opts.HelmCRDs
	policy, field = c.Install, "spec.install.crds"
	for k := range d.base {
		if d.in.Live.Objects[k] != nil {
			policy, field = c.Upgrade, "spec.upgrade.crds"
			break
		}
	}
	if policy == "" {
		return "Create", field + " (default Create)"
	}
	return policy, field + ": " + policy
}

// helmCRDSkip says why helm-controller leaves a CRD of the chart's crds/
// directory as it is live, or "": Skip applies none, Create only creates
// missing ones, CreateReplace updates existing ones too.
func (d *differ) helmCRDSkip(k render.ObjectKey, live *unstructured.Unstructured) (mark, what string) {
	if d.opts.Manager != FluxHelmRelease.Manager || !crdsDirObject(d.head[k]) {
		return "", ""
	}
	policy, field := d.helmCRDPolicy()
	switch {
	case strings.EqualFold(policy, "Skip"):
		return code(field), "applies no CRD of the chart's `crds/` directory"
	case strings.EqualFold(policy, "Create") && live != nil:
		return code(field), "creates the chart's `crds/` CRDs that are missing but never updates one that exists"
	}
	return "", ""
}

// helmCRDKept names why a CRD the chart no longer has stays: Helm keeps the
// CRDs of a chart's crds/ directory out of the release, so no upgrade or
// uninstall deletes them (helm.sh/docs chart_best_practices/custom_resource_definitions).
func (d *differ) helmCRDKept(k render.ObjectKey) string {
	if d.opts.Manager != FluxHelmRelease.Manager || !crdsDirObject(d.base[k]) {
		return ""
	}
	return "the chart's `crds/` directory (Helm never deletes the CRDs it installs from there)"
}
