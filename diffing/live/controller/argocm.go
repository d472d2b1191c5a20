package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/diffing"
)

// ArgoSettings are the argocd-cm settings that decide how Argo CD marks what it
// applies (argo-cd util/settings/settings.go: application.instanceLabelKey,
// application.resourceTrackingMethod, installationID). Empty fields mean Argo CD's
// defaults: app.kubernetes.io/instance, and since Argo CD 3.0 the annotation
// method.
type ArgoSettings struct {
	// Read is true when argocd-cm was read; false when it is missing or not
	// readable (the defaults apply then).
	Read bool
	// Namespace is where argocd-cm was found: the namespace Argo CD runs in.
	Namespace        string
	InstanceLabelKey string
	TrackingMethod   string
	InstallationID   string
	// IgnoreDifferences are the system-wide ignoreDifferences of argocd-cm
	// (resource.customizations.ignoreDifferences.<group_kind> and .all, and the
	// ignoreDifferences of the older resource.customizations map), sorted by key.
	IgnoreDifferences []ArgoIgnore
	// Problems name the argocd-cm keys that could not be read, for a note.
	Problems []string
}

// ArgoIgnore is one argocd-cm ignoreDifferences entry (argo-cd
// pkg/apis/application/v1alpha1 OverrideIgnoreDiff) for a group and kind;
// "*" matches any.
type ArgoIgnore struct {
	// Key is the argocd-cm key it came from.
	Key                   string
	Group, Kind           string
	JSONPointers          []string `json:"jsonPointers"`
	JQPathExpressions     []string `json:"jqPathExpressions"`
	ManagedFieldsManagers []string `json:"managedFieldsManagers"`
}

// argoIgnores reads argocd-cm's ignoreDifferences as argo-cd
// util/settings/settings.go GetResourceOverrides does: the
// resource.customizations map (keys "group/kind", "kind" for the core group,
// "*/*"), then the split keys resource.customizations.ignoreDifferences.<g_k>
// (convertToOverrideKey: "group_Kind", "Kind" or "all"), which win for the
// same group and kind.
func argoIgnores(data map[string]string) ([]ArgoIgnore, []string) {
	byKey := map[string]ArgoIgnore{}
	var problems []string
	parse := func(cmKey, gk, text string) {
		var ig ArgoIgnore
		if err := yaml.Unmarshal([]byte(text), &ig); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", cmKey, err))
			return
		}
		ig.Key = cmKey
		ig.Group, ig.Kind = "", gk
		if g, k, ok := strings.Cut(gk, "/"); ok {
			ig.Group, ig.Kind = g, k
		}
		byKey[gk] = ig
	}
	if v := data[argoCustomizations]; v != "" {
		var legacy map[string]struct {
			IgnoreDifferences string `json:"ignoreDifferences"`
		}
		if err := yaml.Unmarshal([]byte(v), &legacy); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", argoCustomizations, err))
		}
		for gk, o := range legacy {
			if o.IgnoreDifferences != "" {
				parse(argoCustomizations+" "+gk, gk, o.IgnoreDifferences)
			}
		}
	}
	for k, v := range data {
		gk, ok := strings.CutPrefix(k, argoCustomizations+".ignoreDifferences.")
		if !ok || gk == "" {
			continue
		}
		switch parts := strings.Split(gk, "_"); {
		case gk == "all":
			gk = "*/*"
		case len(parts) == 2:
			gk = parts[0] + "/" + parts[1]
		case len(parts) > 2:
			problems = append(problems, fmt.Sprintf("%s: the group kind must be group_Kind, Kind or all", k))
			continue
		}
		parse(k, gk, v)
	}
	var out []ArgoIgnore
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out = append(out, byKey[k])
	}
	slices.Sort(problems)
	return out, problems
}

// argoCustomizations is resourceCustomizationsKey of argo-cd util/settings.
const argoCustomizations = "resource.customizations"

// argoCM is common.ArgoCDConfigMapName in argo-cd common/common.go.
const argoCM = "argocd-cm"

// readArgoSettings reads argocd-cm from the Application's namespace, else from
// argocd (an Application in another namespace, Argo CD's apps in any namespace).
// A missing or unreadable ConfigMap is no error: Argo CD's defaults apply, as when
// the keys are unset.
func readArgoSettings(ctx context.Context, dyn dynamic.Interface, appNamespace string) ArgoSettings {
	for _, ns := range []string{appNamespace, diffing.ArgoCDApplication.DefaultNamespace} {
		cm, err := dyn.Resource(configMaps).Namespace(ns).Get(ctx, argoCM, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			break // forbidden or unreachable: the defaults
		}
		data, _, _ := nestedStringMap(cm.Object, "data")
		ignores, problems := argoIgnores(data)
		return ArgoSettings{
			Read: true, Namespace: ns,
			InstanceLabelKey:  data["application.instanceLabelKey"],
			TrackingMethod:    data["application.resourceTrackingMethod"],
			InstallationID:    data["installationID"],
			IgnoreDifferences: ignores,
			Problems:          problems,
		}
	}
	return ArgoSettings{}
}
