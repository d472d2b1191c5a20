package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestArgoIgnores reads argocd-cm's ignoreDifferences as argo-cd
// util/settings/settings.go GetResourceOverrides does: the older
// resource.customizations map, then the split keys, which win for the same
// group and kind; "all" is */*, a core kind has no group, and a key that cannot
// be read is a problem, not a silent skip.
func TestArgoIgnores(t *testing.T) {
	data := map[string]string{
		"resource.customizations": `
apps/Deployment:
  ignoreDifferences: |
    jsonPointers: [/spec/template]
admissionregistration.k8s.io/MutatingWebhookConfiguration:
  ignoreDifferences: |
    jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle']
`,
		"resource.customizations.ignoreDifferences.apps_Deployment":  "jsonPointers: [/spec/replicas]",
		"resource.customizations.ignoreDifferences.all":              "managedFieldsManagers: [kube-controller-manager]",
		"resource.customizations.ignoreDifferences.Service":          "jsonPointers: [/spec/clusterIP]",
		"resource.customizations.ignoreDifferences.a_b_c":            "jsonPointers: [/x]",
		"resource.customizations.ignoreDifferences.apps_StatefulSet": "jsonPointers: [",
		"resource.customizations.health.apps_Deployment":             "return {}",
	}
	got, problems := argoIgnores(data)
	want := []ArgoIgnore{
		{Key: "resource.customizations.ignoreDifferences.all", Group: "*", Kind: "*", ManagedFieldsManagers: []string{"kube-controller-manager"}},
		{Key: "resource.customizations.ignoreDifferences.Service", Kind: "Service", JSONPointers: []string{"/spec/clusterIP"}},
		{Key: "resource.customizations admissionregistration.k8s.io/MutatingWebhookConfiguration", Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration",
			JQPathExpressions: []string{".webhooks[]?.clientConfig.caBundle"}},
		{Key: "resource.customizations.ignoreDifferences.apps_Deployment", Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ignores (-want +got):\n%s", diff)
	}
	if len(problems) != 2 {
		t.Errorf("want problems for a_b_c and the broken StatefulSet entry; got %q", problems)
	}
}
