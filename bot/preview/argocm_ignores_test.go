package preview

import (
	"slices"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
)

// argocd-cm's jqPathExpressions become jq ignore rules under
// RespectIgnoreDifferences=true, no longer a "not evaluated" note.
func TestArgoCMIgnoresJQ(t *testing.T) {
	cm := controller.ArgoSettings{Read: true, Namespace: "argocd", IgnoreDifferences: []controller.ArgoIgnore{{
		Key:   "resource.customizations.ignoreDifferences.admissionregistration.k8s.io_MutatingWebhookConfiguration",
		Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration",
		JQPathExpressions: []string{".webhooks[]?.clientConfig.caBundle"},
	}}}
	rules, notes := argoCMIgnores(cm, &diffing.ArgoSync{Options: []string{"RespectIgnoreDifferences=true"}})
	if len(notes) != 0 || len(rules) != 1 || !slices.Equal(rules[0].JQ, []string{".webhooks[]?.clientConfig.caBundle"}) ||
		rules[0].Kind != "MutatingWebhookConfiguration" || len(rules[0].Paths) != 0 {
		t.Fatalf("rules %+v, notes %q; want one jq rule and no note", rules, notes)
	}
}
