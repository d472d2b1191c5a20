package live

import (
	"context"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// admissionKinds are the objects that make the apiserver run code of the
// cluster's own on an update, which a dry-run of a no-op apply would run too: a
// mutating webhook may change the object, a validating one or a policy may refuse
// it. Each is read with the JSONPath of its rules: webhooks[].rules[] of a
// webhook configuration, spec.matchConstraints.resourceRules[] of a policy
// (k8s.io/api/admissionregistration/v1 RuleWithOperations and
// NamedRuleWithOperations).
var admissionKinds = []struct {
	gk       schema.GroupKind
	webhooks bool
}{
	{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}, true},
	{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}, true},
	{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}, false},
	{schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingAdmissionPolicy"}, false},
}

// admission is what the cluster's webhooks and admission policies may act on
// when an object is updated, read once per discovery snapshot (getAdmission). It
// over-approximates: rules are matched by operation, API group and resource only,
// ignoring versions (a webhook's matchPolicy Equivalent matches any version),
// scope, selectors, match conditions, exclusions and whether a policy is bound, so
// "may act" is true for every update the apiserver would send to one of them.
// all is true when the configurations could not be read (no RBAC to list them,
// any error): then every update may be acted on.
type admission struct {
	all   bool
	rules []admissionRule
}

type admissionRule struct {
	operations, groups, resources []string
}

// mayAct reports whether some webhook or policy may act on an update of res.
func (a *admission) mayAct(res resource) bool {
	if a == nil || a.all {
		return true
	}
	return slices.ContainsFunc(a.rules, func(r admissionRule) bool {
		return matchesAny(r.operations, "UPDATE") && matchesAny(r.groups, res.gvr.Group) &&
			(matchesAny(r.resources, res.gvr.Resource) || slices.Contains(r.resources, "*/*") ||
				slices.Contains(r.resources, res.gvr.Resource+"/*"))
	})
}

// matchesAny reports whether list holds v or the wildcard "*".
func matchesAny(list []string, v string) bool {
	return slices.Contains(list, v) || slices.Contains(list, "*")
}

// admissionMemo keeps one admission read per catalog.
type admissionMemo struct {
	mu  sync.Mutex
	cat *catalog
	a   *admission
}

// getAdmission returns what the webhooks and admission policies of the cluster
// may act on, read once per discovery snapshot cat. When they cannot be read
// (most often: no RBAC to list them) the answer is "everything" (admission.all),
// kept like any other until discovery is read again.
func (r *Reader) getAdmission(ctx context.Context, cat *catalog) *admission {
	m := &r.admission
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cat == cat && m.a != nil {
		return m.a
	}
	a := &admission{}
kinds:
	for _, k := range admissionKinds {
		res, ok := cat.lookup(k.gk, "")
		if !ok {
			continue // not served: none of this kind can exist
		}
		l, err := r.dyn.Resource(res.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			a = &admission{all: true}
			break kinds
		}
		for _, item := range l.Items {
			if k.webhooks {
				hooks, _, _ := unstructured.NestedSlice(item.Object, "webhooks")
				for _, h := range hooks {
					hm, _ := h.(map[string]any)
					rules, _, _ := unstructured.NestedSlice(hm, "rules")
					a.add(rules)
				}
				continue
			}
			rules, _, _ := unstructured.NestedSlice(item.Object, "spec", "matchConstraints", "resourceRules")
			if len(rules) == 0 {
				// A policy without resource rules matches nothing on its own,
				// but a binding may add matchResources: assume it acts.
				a.all = true
			}
			a.add(rules)
		}
	}
	m.cat, m.a = cat, a
	return a
}

// add keeps the rules of one webhook or policy; a rule that is not a map of
// string lists counts as matching everything.
func (a *admission) add(rules []any) {
	for _, r := range rules {
		rm, ok := r.(map[string]any)
		if !ok {
			a.all = true
			continue
		}
		var ar admissionRule
		for field, dst := range map[string]*[]string{"operations": &ar.operations, "apiGroups": &ar.groups, "resources": &ar.resources} {
			v, found, err := unstructured.NestedStringSlice(rm, field)
			if err != nil || !found {
				a.all = true
			}
			*dst = v
		}
		a.rules = append(a.rules, ar)
	}
}
