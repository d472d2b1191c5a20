package live

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftpreview/driftpreview/diffing"
)

// The texts below are the apiserver's own (k8s.io/apiserver v0.37.2 and
// k8s.io/kubernetes v1.37.2), quoted where each is produced:
var (
	// responsewriters.forbiddenMessage: `User "u" cannot patch resource "secrets" …`.
	rbacDenied = regexp.MustCompile(`User ".*" cannot [a-z]+ (resource|path) "`)
	// webhook/errors.ToStatusErr: `admission webhook "name" denied the request`;
	// util/webhook.ErrCallingWebhook: `failed calling webhook "name"`.
	webhookDenied = regexp.MustCompile(`(?:admission webhook|failed calling webhook) "([^"]+)"`)
	// policy/validating/dispatcher.go: `ValidatingAdmissionPolicy 'p' with binding
	// 'b' denied request`.
	policyDenied = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)'(?: with binding '([^']+)')? denied request`)
)

// escalationText is registry/rbac/validation.ConfirmNoEscalation's refusal.
const escalationText = "is attempting to grant RBAC permissions not currently held"

// admissionPlugins maps a fragment of a built-in admission plugin's refusal to the
// plugin's name, since admission.NewForbidden does not name the plugin.
var admissionPlugins = []struct{ text, plugin string }{
	{"only dynamically provisioned pvc can be resized", "PersistentVolumeClaimResize"},
	{"Only bound persistent volume claims can be expanded", "PersistentVolumeClaimResize"},
	{"because it is being terminated", "NamespaceLifecycle"},
	{"exceeded quota", "ResourceQuota"},
	{"violates PodSecurity", "PodSecurity"},
}

// classify reads the apiserver's answer to one dry-run apply. Every answer with an
// API status gets a kind; errors without one (a dropped connection) get nil and
// stay plain errors.
//
// For Secrets (secret true) the details keep only field names and fixed texts:
// admission messages and validation values may quote the Secret's data.
func classify(err error, secret bool) *diffing.Refusal {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return nil
	}
	s := se.Status()
	msg := s.Message
	if m := policyDenied.FindStringSubmatch(msg); m != nil {
		by := "ValidatingAdmissionPolicy `" + m[1] + "`"
		if m[2] != "" {
			by += " (binding `" + m[2] + "`)"
		}
		return &diffing.Refusal{Kind: diffing.RefusalAdmission, By: by, Detail: afterMarker(msg, "denied request: ")}
	}
	if m := webhookDenied.FindStringSubmatch(msg); m != nil {
		detail := afterMarker(msg, "denied the request: ")
		if strings.Contains(msg, "failed calling webhook") {
			detail = "the webhook could not be called"
		}
		return &diffing.Refusal{Kind: diffing.RefusalAdmission, By: "admission webhook `" + m[1] + "`", Detail: detail}
	}
	if strings.Contains(msg, escalationText) {
		return &diffing.Refusal{Kind: diffing.RefusalEscalation, Detail: "RBAC escalation prevention: the asking identity does not hold every permission the object grants"}
	}
	switch {
	case s.Reason == metav1.StatusReasonForbidden && rbacDenied.MatchString(msg):
		return &diffing.Refusal{Kind: diffing.RefusalForbidden, Detail: afterMarker(msg, "is forbidden: ")}
	case s.Reason == metav1.StatusReasonForbidden:
		// Authorization passed, so an admission plugin refused (admission.NewForbidden).
		r := &diffing.Refusal{Kind: diffing.RefusalAdmission, By: "an admission plugin", Detail: afterMarker(msg, "is forbidden: ")}
		for _, p := range admissionPlugins {
			if strings.Contains(msg, p.text) {
				r.By = "admission plugin `" + p.plugin + "`"
				break
			}
		}
		return r
	}
	r := &diffing.Refusal{Kind: diffing.RefusalInvalid, Detail: msg}
	if secret {
		r.Detail = fmt.Sprintf("%s (HTTP %d); details hidden for Secrets", s.Reason, s.Code)
	}
	var immutable, immutableDetails, details []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			d := causeDetail(c)
			if secret && !immutableCause(c) {
				// Immutable causes end in fixed texts; others may quote values.
				d = "details hidden for Secrets"
			}
			d = "`" + c.Field + "`: " + d
			if immutableCause(c) {
				if p := fieldPointer(c.Field); !slices.Contains(immutable, p) {
					immutable = append(immutable, p)
				}
				immutableDetails = append(immutableDetails, d)
				continue
			}
			r.Paths = append(r.Paths, fieldPointer(c.Field))
			details = append(details, d)
		}
	}
	if len(immutable) > 0 {
		r.Kind, r.Paths, details = diffing.RefusalImmutable, immutable, immutableDetails
	}
	if len(details) > 0 {
		r.Detail = strings.Join(details, "; ")
	}
	return r
}

// immutableCause reports whether a validation cause refuses to change a field:
// "field is immutable" (ValidateImmutableField and the many messages built on
// it), "may not change once set", "updates to … are forbidden", "spec is
// immutable after creation".
func immutableCause(c metav1.StatusCause) bool {
	m := strings.ToLower(c.Message)
	return strings.Contains(m, "immutable") ||
		strings.Contains(m, "may not change once set") ||
		strings.Contains(m, "may not change fields") ||
		strings.Contains(m, "may not be changed") ||
		(strings.Contains(m, "updates to") && strings.Contains(m, "are forbidden")) ||
		strings.Contains(m, "field can not be less than")
}

// causeDetail is a cause's message without the value the server quotes: field.Error
// bodies read "Invalid value: <value>: <detail>" or "Forbidden: <detail>", and a
// value can be a Secret's or thousands of characters of a pod template.
func causeDetail(c metav1.StatusCause) string {
	m := c.Message
	if rest, ok := strings.CutPrefix(m, "Invalid value: "); ok {
		if q, err := strconv.QuotedPrefix(rest); err == nil {
			rest = rest[len(q):]
		}
		if i := strings.LastIndex(rest, ": "); i >= 0 {
			return firstLine(rest[i+2:])
		}
		return "invalid value"
	}
	if strings.HasPrefix(m, "Unsupported value: ") || strings.HasPrefix(m, "Duplicate value: ") {
		kind, _, _ := strings.Cut(m, ":")
		return strings.ToLower(kind)
	}
	_, detail, found := strings.Cut(m, ": ")
	if found {
		m = detail
	}
	return firstLine(m)
}

// firstLine drops what follows a newline, such as the spec diff the PVC validation
// appends, which quotes values.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// fieldPointer turns a validation field path ("spec.containers[0].image",
// "data[password]") into a JSON pointer.
func fieldPointer(field string) string {
	if field == "" {
		return ""
	}
	var segs []string
	var cur strings.Builder
	inKey := false
	flush := func() {
		if cur.Len() > 0 {
			segs = append(segs, cur.String())
			cur.Reset()
		}
	}
	for _, r := range field {
		switch {
		case !inKey && r == '.':
			flush()
		case !inKey && r == '[':
			flush()
			inKey = true
		case inKey && r == ']':
			segs = append(segs, cur.String())
			cur.Reset()
			inKey = false
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	for i, s := range segs {
		segs[i] = strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
	}
	return "/" + strings.Join(segs, "/")
}

// afterMarker is the text after the first marker, or "" without it.
func afterMarker(s, marker string) string {
	_, after, ok := strings.Cut(s, marker)
	if !ok {
		return ""
	}
	return firstLine(after)
}
