package live

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// The answers below are built the way the apiserver builds them (NewForbidden from
// the authorizer, admission and RBAC registry; NewInvalid from validation).
func TestClassify(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	hugeTemplate := strings.Repeat("core.Container{Name:\"app\"}, ", 40)
	vap := apierrors.NewForbidden(cms, "settings", fmt.Errorf("ValidatingAdmissionPolicy 'no-debug' with binding 'no-debug-b' denied request: debug is not allowed"))
	vap.ErrStatus.Reason, vap.ErrStatus.Code = metav1.StatusReasonInvalid, 422
	tests := []struct {
		name   string
		err    error
		secret bool
		want   *diffing.Refusal
	}{
		{"rbac", apierrors.NewForbidden(cms, "settings", fmt.Errorf(`User "bot" cannot patch resource "configmaps" in API group "" in the namespace "shop"`)), false,
			&diffing.Refusal{Kind: diffing.RefusalForbidden, Detail: `User "bot" cannot patch resource "configmaps" in API group "" in the namespace "shop"`}},
		{"escalation", apierrors.NewForbidden(schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "r", fmt.Errorf("user \"bot\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"delete\"]}")), false,
			&diffing.Refusal{Kind: diffing.RefusalEscalation, Detail: "RBAC escalation prevention: the asking identity does not hold every permission the object grants"}},
		{"admission plugin", apierrors.NewForbidden(schema.GroupResource{Resource: "persistentvolumeclaims"}, "data", fmt.Errorf("only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize")), false,
			&diffing.Refusal{Kind: diffing.RefusalAdmission, By: "admission plugin `PersistentVolumeClaimResize`", Detail: "only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize"}},
		{"webhook", apierrors.NewBadRequest(`admission webhook "validate.kyverno.svc" denied the request: label team is required`), false,
			&diffing.Refusal{Kind: diffing.RefusalAdmission, By: "admission webhook `validate.kyverno.svc`", Detail: "label team is required"}},
		{"policy", vap, false,
			&diffing.Refusal{Kind: diffing.RefusalAdmission, By: "ValidatingAdmissionPolicy `no-debug` (binding `no-debug-b`)", Detail: "debug is not allowed"}},
		{"immutable job template, however long the value", apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "Job"}, "migrate", field.ErrorList{
			field.Invalid(field.NewPath("spec", "template"), hugeTemplate, "field is immutable"),
		}), false, &diffing.Refusal{Kind: diffing.RefusalImmutable, Paths: []string{"/spec/template"}, Detail: "`spec.template`: field is immutable"}},
		{"immutable wins over other causes", apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "web", field.ErrorList{
			field.Invalid(field.NewPath("spec", "template", "metadata", "labels"), map[string]string{"app": "x"}, "`selector` does not match template `labels`"),
			field.Invalid(field.NewPath("spec", "selector"), "x", "field is immutable"),
		}), false, &diffing.Refusal{Kind: diffing.RefusalImmutable, Paths: []string{"/spec/selector"}, Detail: "`spec.selector`: field is immutable"}},
		{"secret values stay hidden", apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "registry", field.ErrorList{
			field.Invalid(field.NewPath("data").Key(".dockerconfigjson"), "hunter2", "invalid character 'h'"),
		}), true, &diffing.Refusal{Kind: diffing.RefusalInvalid, Paths: []string{"/data/.dockerconfigjson"}, Detail: "`data[.dockerconfigjson]`: details hidden for Secrets"}},
		{"not an API answer", fmt.Errorf("connection reset"), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, classify(tt.err, tt.secret)); diff != "" {
				t.Errorf("classify (-want +got):\n%s", diff)
			}
		})
	}
}

// A Secret's error loses its message but stays recognisable as forbidden, so an
// RBAC refusal on a Secret is never taken for a fault of the manifest.
func TestSecretErrorsKeepTheirStatus(t *testing.T) {
	st := &read{cluster: "prod"}
	k := render.ObjectKey{Kind: "Secret", Namespace: "shop", Name: "creds"}
	err := st.applyError("dry-run apply of", k, apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", fmt.Errorf(`User "bot" cannot patch resource "secrets"`)))
	if !apierrors.IsForbidden(err) {
		t.Errorf("IsForbidden(%v) = false", err)
	}
	if strings.Contains(err.Error(), "cannot patch") {
		t.Errorf("error %q keeps the API message", err)
	}
}
