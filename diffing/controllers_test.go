package diffing

import (
	"strings"
	"testing"
	"time"

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

func TestJudgeIgnores(t *testing.T) {
	rules := []IgnoreRule{
		{Kind: "Deployment", Reason: "HPA owns replicas", Expires: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Origin: ".driftpreview.yaml:3"},
		{Kind: "Service", Reason: "later", Expires: testNow.Add(24 * time.Hour)},
		{Kind: "Secret", Reason: "forever"},
	}
	active, expired := JudgeIgnores(rules, testNow)
	if len(active) != 2 || active[0].Kind != "Service" || active[1].Kind != "Secret" {
		t.Errorf("active = %+v, want the Service and Secret rules", active)
	}
	if len(expired) != 1 || expired[0].Rule != RuleIgnoreExpired || expired[0].Key.Kind != "Deployment" ||
		!strings.Contains(expired[0].Message, ".driftpreview.yaml:3") || !strings.Contains(expired[0].Message, "HPA owns replicas") || !strings.Contains(expired[0].Message, "2026-03-01") {
		t.Errorf("expired = %+v, want one ignore-expired finding for the Deployment rule", expired)
	}
}
