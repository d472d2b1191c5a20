package controller

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// liveKind is the row of the controller kinds (diffing.ControllerKinds) whose live
// object Read understands: an Application, a Kustomization or a HelmRelease.
func liveKind(kind string) (diffing.ControllerKind, bool) {
	k, ok := diffing.ControllerKindOf(kind)
	return k, ok && k.LiveState
}

// State is the live controller object as it matters to a preview.
type State struct {
	// Cluster names the cluster in messages; the caller sets it.
	Cluster string
	// Exists is false when the controller object is not on the cluster.
	Exists bool
	// Inventory is what the controller says it manages: Flux
	// status.inventory.entries, Argo CD status.resources. Sorted by key.
	Inventory []render.ObjectKey
	AutoSync  bool
	Prune     bool
	SelfHeal  bool
	// Suspended is Flux's spec.suspend.
	Suspended bool
	// DriftDetection is a HelmRelease's spec.driftDetection.mode (enabled,
	// warn, disabled; empty when unset).
	DriftDetection string
	// Argo holds the argocd-cm settings of the Argo CD that owns an Application.
	Argo ArgoSettings
	// ReleaseChart and ReleaseVersion are the chart name and version of a
	// HelmRelease's release in storage, as helm-controller records them in the
	// newest snapshot of status.history (helm-controller api/v2 Snapshot
	// chartName, chartVersion; the history is newest first). Empty when the
	// object has no history.
	ReleaseChart, ReleaseVersion string
	// Release names a HelmRelease's newest release in Helm's storage: its
	// name, the namespace helm-controller stores it in (status.storageNamespace,
	// else the snapshot's), and its version (status.history[0]). Empty Name
	// when the object has no history.
	Release Release
	// Finalizers are the live object's metadata.finalizers: what deleting it
	// does (an Application's resources finalizer).
	Finalizers []string
	// DeletionPolicy is a Kustomization's spec.deletionPolicy ("" for the
	// default, MirrorPrune).
	DeletionPolicy string
}

// Release is a Helm release in storage.
type Release struct {
	Name, StorageNamespace string
	Version                int64
}

// SecretName is the name of the Secret Helm's default storage driver keeps the
// release in: sh.helm.release.v1.NAME.vVERSION (helm pkg/storage/storage.go
// makeKey, pkg/storage/driver/secrets.go).
func (r Release) SecretName() string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)
}

// Read gets the live controller object c names (one GET) and reads its sync policy
// and inventory. A missing object gives State{Exists: false} and no error; a
// forbidden or failed read is an error, which the pipeline reports as
// live-unavailable.
func Read(ctx context.Context, cfg *rest.Config, c diffing.Controller) (*State, error) {
	kind, ok := liveKind(c.Kind)
	if !ok {
		return nil, fmt.Errorf("reading live controller %s %s: unsupported kind (want Application, Kustomization or HelmRelease)", c.Kind, c.Name)
	}
	ns := c.Namespace
	if ns == "" {
		ns = kind.DefaultNamespace
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading live %s %s/%s: creating client: %w", c.Kind, ns, c.Name, err)
	}
	var argo ArgoSettings
	if kind == diffing.ArgoCDApplication {
		argo = readArgoSettings(ctx, dyn, ns)
	}
	obj, err := dyn.Resource(kind.GVR).Namespace(ns).Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &State{Argo: argo}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading live %s %s/%s: %w", c.Kind, ns, c.Name, err)
	}
	st := &State{Exists: true, Argo: argo, Finalizers: obj.GetFinalizers()}
	switch kind {
	case diffing.ArgoCDApplication:
		readApplication(obj, st)
	case diffing.FluxKustomization:
		readKustomization(obj, st)
	case diffing.FluxHelmRelease:
		readHelmRelease(obj, st)
	}
	return st, nil
}

func readApplication(obj *unstructured.Unstructured, st *State) {
	if auto, found, _ := unstructured.NestedMap(obj.Object, "spec", "syncPolicy", "automated"); found && auto != nil {
		enabled, set, _ := unstructured.NestedBool(auto, "enabled")
		st.AutoSync = !set || enabled
		if st.AutoSync {
			st.Prune, _, _ = unstructured.NestedBool(auto, "prune")
			st.SelfHeal, _, _ = unstructured.NestedBool(auto, "selfHeal")
		}
	}
	opts, _, _ := unstructured.NestedStringSlice(obj.Object, "spec", "syncPolicy", "syncOptions")
	for _, o := range opts {
		if strings.EqualFold(strings.ReplaceAll(o, " ", ""), "Prune=false") {
			st.Prune = false
		}
	}
	res, _, _ := unstructured.NestedSlice(obj.Object, "status", "resources")
	for _, r := range res {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		k := render.ObjectKey{}
		k.Group, _ = m["group"].(string)
		k.Kind, _ = m["kind"].(string)
		k.Namespace, _ = m["namespace"].(string)
		k.Name, _ = m["name"].(string)
		if k.Kind != "" && k.Name != "" {
			st.Inventory = append(st.Inventory, k)
		}
	}
	sortKeys(st.Inventory)
}

func readKustomization(obj *unstructured.Unstructured, st *State) {
	st.Suspended, _, _ = unstructured.NestedBool(obj.Object, "spec", "suspend")
	st.Prune, _, _ = unstructured.NestedBool(obj.Object, "spec", "prune")
	st.DeletionPolicy, _, _ = unstructured.NestedString(obj.Object, "spec", "deletionPolicy")
	st.AutoSync = !st.Suspended
	st.SelfHeal = !st.Suspended // kustomize-controller re-applies on every interval
	entries, _, _ := unstructured.NestedSlice(obj.Object, "status", "inventory", "entries")
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		id, _ := m["id"].(string)
		if k, ok := ParseInventoryID(id); ok {
			st.Inventory = append(st.Inventory, k)
		}
	}
	sortKeys(st.Inventory)
}

func readHelmRelease(obj *unstructured.Unstructured, st *State) {
	st.Suspended, _, _ = unstructured.NestedBool(obj.Object, "spec", "suspend")
	st.AutoSync = !st.Suspended
	st.Prune = true // a Helm upgrade deletes what the chart no longer renders
	mode, _, _ := unstructured.NestedString(obj.Object, "spec", "driftDetection", "mode")
	st.SelfHeal = mode == "enabled" && !st.Suspended
	st.DriftDetection = mode
	if hist, _, _ := unstructured.NestedSlice(obj.Object, "status", "history"); len(hist) > 0 {
		if m, ok := hist[0].(map[string]any); ok {
			st.ReleaseChart, _ = m["chartName"].(string)
			st.ReleaseVersion, _ = m["chartVersion"].(string)
			st.Release.Name, _ = m["name"].(string)
			st.Release.StorageNamespace, _ = m["namespace"].(string)
			st.Release.Version, _, _ = unstructured.NestedInt64(m, "version")
		}
	}
	if ns, _, _ := unstructured.NestedString(obj.Object, "status", "storageNamespace"); ns != "" {
		st.Release.StorageNamespace = ns
	}
}

// ParseInventoryID reads a Flux inventory entry id, "<namespace>_<name>_<group>_<kind>"
// (namespace and group empty for cluster-scoped and core objects).
func ParseInventoryID(id string) (render.ObjectKey, bool) {
	parts := strings.Split(id, "_")
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return render.ObjectKey{}, false
	}
	return render.ObjectKey{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3]}, true
}

// nestedStringMap reads a map of strings, skipping values of other types.
func nestedStringMap(obj map[string]any, fields ...string) (map[string]string, bool, error) {
	m, found, err := unstructured.NestedMap(obj, fields...)
	out := map[string]string{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, found, err
}

func sortKeys(keys []render.ObjectKey) {
	set := render.ObjectSet{Objects: make([]render.Object, len(keys))}
	for i, k := range keys {
		set.Objects[i].Key = k
	}
	set.Sort()
	for i := range keys {
		keys[i] = set.Objects[i].Key
	}
}

// Findings compares the controller object as git declares it with the live one and
// says what stops the merge from reaching the cluster as the PR author expects. A nil
// live state (live comparison off) gives no findings.
func Findings(gitCtrl diffing.Controller, live *State) []diffing.Finding {
	if live == nil {
		return nil
	}
	kind, _ := liveKind(gitCtrl.Kind)
	ns := gitCtrl.Namespace
	if ns == "" {
		ns = kind.DefaultNamespace
	}
	key := render.ObjectKey{Group: kind.GVR.Group, Kind: gitCtrl.Kind, Namespace: ns, Name: gitCtrl.Name}
	name := gitCtrl.Kind + " " + gitCtrl.Name
	on := "on the cluster"
	if live.Cluster != "" {
		on = "on cluster " + live.Cluster
	}
	finding := func(rule diffing.Rule, msg string) diffing.Finding {
		return diffing.Finding{Rule: rule, Severity: diffing.DefaultSeverity[rule], Key: key, Message: msg + "."}
	}
	if !live.Exists {
		return []diffing.Finding{finding(diffing.RuleControllerMissing,
			fmt.Sprintf("%s does not exist %s: nothing will deploy this target", name, on))}
	}
	var out []diffing.Finding
	switch {
	case live.Suspended && !gitCtrl.Suspended:
		out = append(out, finding(diffing.RuleSyncDisabled,
			fmt.Sprintf("%s is suspended %s: this merge will not be applied until it is resumed", name, on)))
	case gitCtrl.AutoSync && !live.AutoSync && !live.Suspended:
		out = append(out, finding(diffing.RuleSyncDisabled,
			fmt.Sprintf("%s: automated sync is disabled %s: this merge will not reach the cluster until someone syncs", name, on)))
	}
	if live.AutoSync && gitCtrl.AutoSync {
		switch {
		case gitCtrl.Prune && !live.Prune:
			out = append(out, finding(diffing.RuleSyncDisabled,
				fmt.Sprintf("%s has prune off %s but on in %s: objects this merge removes keep running until the live %s matches git", name, on, sourceOr(gitCtrl), gitCtrl.Kind)))
		case !gitCtrl.Prune && live.Prune:
			out = append(out, finding(diffing.RuleSyncDisabled,
				fmt.Sprintf("%s has prune on %s but off in %s: objects this merge removes are deleted", name, on, sourceOr(gitCtrl))))
		}
	}
	return out
}

func sourceOr(c diffing.Controller) string {
	if c.Source != "" {
		return c.Source
	}
	return "git"
}
