package diffing

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/render"
)

func TestControllerKinds(t *testing.T) {
	for _, k := range ControllerKinds {
		got, ok := ControllerKindOf(k.Kind)
		if !ok || got != k {
			t.Errorf("ControllerKindOf(%q) = %+v, %v", k.Kind, got, ok)
		}
		if k.GVR.Group == "" || k.GVR.Version == "" || k.GVR.Resource == "" || k.DefaultNamespace == "" || k.DisplayName == "" {
			t.Errorf("row %s is incomplete: %+v", k.Kind, k)
		}
		if k.LiveState && k.Manager == "" {
			t.Errorf("row %s deploys but names no field manager", k.Kind)
		}
		if ControllerNamespace(k.GVR.Group) != k.DefaultNamespace {
			t.Errorf("ControllerNamespace(%s) = %q, want %q", k.GVR.Group, ControllerNamespace(k.GVR.Group), k.DefaultNamespace)
		}
	}
	if _, ok := ControllerKindOf("config"); ok {
		t.Error(`the "config" kind is back in the table`)
	}
	for gk, want := range map[schema.GroupKind]bool{
		{Group: GroupArgoCD, Kind: "Application"}:                 true,
		{Group: GroupArgoCD, Kind: "ApplicationSet"}:              false,
		{Group: GroupFluxKustomize, Kind: "Kustomization"}:        true,
		{Group: GroupFluxHelm, Kind: "HelmRelease"}:               true,
		{Group: "kustomize.config.k8s.io", Kind: "Kustomization"}: false,
	} {
		if got := IsLiveController(gk); got != want {
			t.Errorf("IsLiveController(%v) = %v, want %v", gk, got, want)
		}
	}
	if key, ok := (&Controller{Kind: "HelmRelease", Namespace: "apps", Name: "web"}).LiveKey(); !ok ||
		key != (render.ObjectKey{Group: GroupFluxHelm, Kind: "HelmRelease", Namespace: "apps", Name: "web"}) {
		t.Errorf("LiveKey(HelmRelease) = %v, %v", key, ok)
	}
	if _, ok := (&Controller{Kind: "ApplicationSet", Name: "set"}).LiveKey(); ok {
		t.Error("LiveKey(ApplicationSet) is ok; its live state is never read")
	}
	for group, want := range map[string]string{GroupFluxSource: NamespaceFlux, GroupFluxSourceExt: NamespaceFlux, "apps": ""} {
		if got := ControllerNamespace(group); got != want {
			t.Errorf("ControllerNamespace(%s) = %q, want %q", group, got, want)
		}
	}
}
