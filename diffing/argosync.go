package diffing

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

// The annotations Argo CD reads sync and compare options from on an object
// (gitops-engine pkg/sync/common/types.go AnnotationSyncOptions, argo-cd
// common.AnnotationCompareOptions).
const (
	ArgoSyncOptionsAnnotation    = "argocd.argoproj.io/sync-options"
	ArgoCompareOptionsAnnotation = "argocd.argoproj.io/compare-options"
)

// ArgoSync is how the Argo CD Application that deploys a target syncs: its
// spec.syncPolicy.syncOptions, which an object's argocd.argoproj.io/sync-options
// annotation overrides for that object (docs/user-guide/sync-options.md: "setting a
// Prune sync option on the resource will always override a Prune sync policy
// defined in the Application"). Diffing and diffing/live read the options that
// change what a sync does from it; nil for targets of other controllers.
type ArgoSync struct {
	// Options are the Application's syncOptions as written ("Prune=confirm").
	Options []string `json:"syncOptions,omitempty"`
	// Automated is true when the Application has an enabled syncPolicy.automated:
	// without it nothing happens until someone syncs.
	Automated bool `json:"automated,omitempty"`
}

// appOption is SyncOptions.GetOptionValue (argo-cd pkg/apis/application/v1alpha1
// types.go): the value of the first "key=value" entry, compared exactly.
func (a *ArgoSync) appOption(key string) (string, bool) {
	if a == nil {
		return "", false
	}
	for _, o := range a.Options {
		if v, ok := strings.CutPrefix(o, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// ArgoObjectOption is resourceutil.GetAnnotationOptionValue (gitops-engine
// pkg/sync/resource/annotations.go): the value of key in the comma-separated,
// space-trimmed sync-options annotation of obj.
func ArgoObjectOption(obj *unstructured.Unstructured, annotation, key string) (string, bool) {
	if obj == nil {
		return "", false
	}
	for item := range strings.SplitSeq(obj.GetAnnotations()[annotation], ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(item), key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// argoHasObjectOption is resourceutil.HasAnnotationOption: opt is one of the
// comma-separated values of the annotation.
func argoHasObjectOption(obj *unstructured.Unstructured, annotation, opt string) bool {
	if obj == nil {
		return false
	}
	for item := range strings.SplitSeq(obj.GetAnnotations()[annotation], ",") {
		if strings.TrimSpace(item) == opt {
			return true
		}
	}
	return false
}

// Option is the value of the sync option key for an object: from the first of
// objs whose annotation sets it, else from the Application. from says where it
// was set, for messages ("`argocd.argoproj.io/sync-options: Prune=confirm`" or
// "the Application's sync option `Prune=confirm`").
func (a *ArgoSync) Option(key string, objs ...*unstructured.Unstructured) (value, from string, ok bool) {
	for _, o := range objs {
		if v, ok := ArgoObjectOption(o, ArgoSyncOptionsAnnotation, key); ok {
			return v, code(ArgoSyncOptionsAnnotation + ": " + key + "=" + v), true
		}
	}
	if v, ok := a.appOption(key); ok {
		return v, "the Application's sync option " + code(key+"="+v), true
	}
	return "", "", false
}

// Has reports whether the option "key=value" is on for an object, as gitops-engine
// reads Replace, Force and ServerSideApply: set on the Application or in the
// annotation of any of objs (sync_context.go applyObject reads both the target
// and the live object). from says where, as Option does.
func (a *ArgoSync) Has(opt string, objs ...*unstructured.Unstructured) (from string, ok bool) {
	for _, o := range objs {
		if argoHasObjectOption(o, ArgoSyncOptionsAnnotation, opt) {
			return code(ArgoSyncOptionsAnnotation + ": " + opt), true
		}
	}
	if a != nil && slices.Contains(a.Options, opt) {
		return "the Application's sync option " + code(opt), true
	}
	return "", false
}

// RespectsIgnores says whether a sync keeps the live values of the fields
// ignoreDifferences name (the Application's and argocd-cm's): only with
// RespectIgnoreDifferences=true (argo-cd controller/sync.go
// normalizeTargetResources). Otherwise they hide fields from Argo CD's diff, and
// a sync applies them as git has them. True for targets of other controllers,
// whose ignore rules are driftpreview's own.
func (a *ArgoSync) RespectsIgnores() bool {
	if a == nil {
		return true
	}
	_, ok := a.Has("RespectIgnoreDifferences=true")
	return ok
}

// ServerSide says whether Argo CD applies obj server-side
// (sync_context.go shouldUseServerSideApply): ServerSideApply=false on the object
// turns it off, else ServerSideApply=true on the Application or the object turns
// it on; the default is a client-side kubectl apply.
func (a *ArgoSync) ServerSide(target *unstructured.Unstructured) bool {
	if argoHasObjectOption(target, ArgoSyncOptionsAnnotation, "ServerSideApply=false") {
		return false
	}
	_, on := a.Has("ServerSideApply=true", target)
	return on
}

// Replaces says whether Argo CD syncs obj with kubectl replace (or create)
// instead of apply, and from where (sync_context.go applyObject: Replace=true on
// the Application, the target or the live object). A CRD or a Namespace is never
// replaced: it is updated (a PUT) instead, which refuses immutable changes alike.
func (a *ArgoSync) Replaces(k render.ObjectKey, head, live *unstructured.Unstructured) (from string, ok bool) {
	if a == nil || live == nil || isCRDKey(k) || (k.Group == "" && k.Kind == "Namespace") {
		return "", false
	}
	return a.Has("Replace=true", head, live)
}

// Recreates says whether Argo CD deletes and recreates obj when the API refuses
// to update it, and which option decides: Force=true on the target or the live
// object (the Application's Force=true sync option is not read by an automated
// sync, whose operation carries no sync strategy: controller/appcontroller.go
// autoSync, SyncStrategy.Force). With Replace it is kubectl replace --force,
// which always deletes and creates; with a client-side apply it is kubectl apply
// --force, which deletes and creates when the patch is refused as invalid or
// conflicting (k8s.io/kubectl pkg/cmd/apply/patcher.go). A server-side apply
// never recreates, nor is a CRD or a Namespace ever recreated.
func (a *ArgoSync) Recreates(k render.ObjectKey, head, live *unstructured.Unstructured) (string, bool) {
	if a == nil || live == nil || isCRDKey(k) || (k.Group == "" && k.Kind == "Namespace") {
		return "", false
	}
	var force string
	for _, o := range []*unstructured.Unstructured{head, live} {
		if argoHasObjectOption(o, ArgoSyncOptionsAnnotation, "Force=true") {
			force = code(ArgoSyncOptionsAnnotation + ": " + o.GetAnnotations()[ArgoSyncOptionsAnnotation])
			break
		}
	}
	if force == "" {
		return "", false
	}
	if _, replace := a.Replaces(k, head, live); !replace && a.ServerSide(head) {
		return "", false
	}
	return force, true
}

// argoIgnoresExtraneous says whether the first object given carries the
// compare option IgnoreExtraneous (controller/state.go: an extraneous object
// with it does not make the Application OutOfSync).
func argoIgnoresExtraneous(objs ...*unstructured.Unstructured) bool {
	for _, o := range objs {
		if o != nil {
			return argoHasObjectOption(o, ArgoCompareOptionsAnnotation, "IgnoreExtraneous")
		}
	}
	return false
}

func isCRDKey(k render.ObjectKey) bool {
	return k.Group == "apiextensions.k8s.io" && k.Kind == "CustomResourceDefinition"
}

// argoRemoval is what Argo CD does with a live object that head no longer has.
type argoRemoval struct {
	// keep names what keeps the object ("" when it is deleted).
	keep string
	// confirm names the option that makes the deletion wait for someone to
	// confirm it ("" when it does not wait).
	confirm string
	// later explains that the deletion waits for a sync another change starts
	// (IgnoreExtraneous keeps the Application Synced).
	later string
	// orphanPods is set when the pruned object's dependents keep running
	// (PrunePropagationPolicy=orphan).
	orphanPods string
	// helmKeep is set when the pruned object carries helm.sh/resource-policy:
	// keep, which Argo CD reads only when it deletes an Application.
	helmKeep bool
}

// removal says what Argo CD does with an object that leaves git (or whose
// Application is deleted, when deleted is set). base and live are the object as
// git had it and as it is live; Argo CD reads the live object's annotations.
//
// A prune (gitops-engine sync_context.go pruneObject, isPruningDisabled,
// objRequiresPruneConfirmation): the Prune option of the object, else the
// Application's, is false (skipped) or confirm (the sync waits for the
// confirmation). helm.sh/resource-policy: keep does not stop a prune.
//
// A cascade deletion of the Application (controller/appcontroller.go
// shouldBeDeleted): CRDs are never deleted, nor objects whose Delete option (the
// object's, else the Application's) is false, nor objects with
// helm.sh/resource-policy: keep; Delete=confirm waits for a confirmation
// (finalizeApplicationDeletion, IsDeletionConfirmed). Prune options do not count.
func (a *ArgoSync) removal(k render.ObjectKey, deleted bool, base, live *unstructured.Unstructured) argoRemoval {
	var r argoRemoval
	objs := []*unstructured.Unstructured{live, base}
	if live == nil {
		objs = []*unstructured.Unstructured{base}
	}
	if deleted {
		switch v, from, _ := a.Option("Delete", objs...); {
		case isCRDKey(k):
			r.keep = "Argo CD (it never deletes a CRD with an Application)"
		case v == "false":
			r.keep = from
		case argoHasObjectOption(live, "helm.sh/resource-policy", "keep") || (live == nil && argoHasObjectOption(base, "helm.sh/resource-policy", "keep")):
			r.keep = code("helm.sh/resource-policy: keep")
		case v == "confirm":
			r.confirm = from
		}
		return r
	}
	switch v, from, _ := a.Option("Prune", objs...); v {
	case "false":
		r.keep = from
		return r
	case "confirm":
		r.confirm = from
	}
	if argoIgnoresExtraneous(objs...) {
		r.later = code(ArgoCompareOptionsAnnotation + ": IgnoreExtraneous")
	}
	if v, from, _ := a.Option("PrunePropagationPolicy"); v == "orphan" && ownsPods(k) {
		r.orphanPods = from
	}
	for _, o := range objs {
		if argoHasObjectOption(o, "helm.sh/resource-policy", "keep") {
			r.helmKeep = true
		}
	}
	return r
}

// ownsPods says whether objects of k's kind own ReplicaSets, Pods or Jobs that
// the garbage collector deletes with them.
func ownsPods(k render.ObjectKey) bool {
	switch k.GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, schema.GroupKind{Group: "apps", Kind: "DaemonSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}, schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return true
	}
	return false
}

// message finishes a prune message for what Argo CD's options add.
func (r argoRemoval) message(msg, who string) string {
	if r.confirm != "" {
		msg = strings.TrimSuffix(msg, ".") + fmt.Sprintf(", once someone confirms it: with %s the sync waits (Syncing) until the deletion is confirmed in the UI or CLI, or by the Application's `argocd.argoproj.io/deletion-approved` annotation.", r.confirm)
	}
	if r.later != "" {
		msg = strings.TrimSuffix(msg, ".") + fmt.Sprintf(", but not at once: %s keeps the Application Synced, so no automated sync starts for this removal alone; the next sync that another change starts deletes it.", r.later)
	}
	if r.helmKeep {
		msg = strings.TrimSuffix(msg, ".") + ": `helm.sh/resource-policy: keep` stops Helm and the deletion of its Application, not an Argo CD prune."
	}
	if r.orphanPods != "" {
		msg = strings.TrimSuffix(msg, ".") + fmt.Sprintf(". With %s, %s deletes it with propagation orphan: what it owns (ReplicaSets, Pods, Jobs' Pods) keeps running.", r.orphanPods, who)
	}
	return msg
}
