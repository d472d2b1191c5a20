package controller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

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
}

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
		return ArgoSettings{
			Read: true, Namespace: ns,
			InstanceLabelKey: data["application.instanceLabelKey"],
			TrackingMethod:   data["application.resourceTrackingMethod"],
			InstallationID:   data["installationID"],
		}
	}
	return ArgoSettings{}
}
