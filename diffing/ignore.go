package diffing

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// globMatch matches s against a path.Match pattern; an empty pattern matches
// anything, and a malformed pattern matches only itself.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	ok, err := path.Match(pattern, s)
	if err != nil {
		return pattern == s
	}
	return ok
}

// matchesObject reports whether the rule's group, kind, namespace and name cover k.
func (r IgnoreRule) matchesObject(k render.ObjectKey) bool {
	return globMatch(r.Group, k.Group) && globMatch(r.Kind, k.Kind) &&
		globMatch(r.Namespace, k.Namespace) && globMatch(r.Name, k.Name)
}

// hidesLines reports whether the rule removes diff lines: it names paths and is
// not narrowed to certain findings by rules or managers.
func (r IgnoreRule) hidesLines() bool {
	return (len(r.Paths) > 0 || len(r.JQ) > 0) && len(r.Rules) == 0 && len(r.Managers) == 0
}

// matchesFinding reports whether the rule hides f: every criterion it sets must hold.
func (r IgnoreRule) matchesFinding(f Finding) bool {
	if !r.matchesObject(f.Key) || len(r.JQ) > 0 {
		// jq paths depend on the object's content: they hide diff lines only.
		return false
	}
	if len(r.Rules) > 0 && !slices.Contains(r.Rules, f.Rule) {
		return false
	}
	if len(r.Managers) > 0 && !slices.ContainsFunc(r.Managers, func(m string) bool { return f.Manager != "" && globMatch(m, f.Manager) }) {
		return false
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(p string) bool { return f.Path != "" && pointerCovers(p, f.Path) }) {
		return false
	}
	return true
}

// ignores is the set of ignore rules in force for one Diff.
type ignores struct {
	active []IgnoreRule
	jq     map[string]*jqPath // compiled JQ of active, by expression
	note   func(string)       // reports a jq expression that fails
}

// newIgnores compiles the rules' jq expressions once; one that does not
// compile becomes a note naming it and where it came from, and is not applied.
func newIgnores(active []IgnoreRule, note func(string)) ignores {
	ig := ignores{active: active, note: note}
	for _, r := range active {
		for _, e := range r.JQ {
			if _, ok := ig.jq[e]; ok {
				continue
			}
			if ig.jq == nil {
				ig.jq = map[string]*jqPath{}
			}
			j, err := compileJQPath(e, r.Origin)
			if err != nil {
				note(err.Error())
			}
			ig.jq[e] = j // nil when it does not compile
		}
	}
	return ig
}

// lineIgnore is what is removed from one object's diffs: fields at pointers
// and fields jq expressions select.
type lineIgnore struct {
	ptrs []string
	jq   []*jqPath
	note func(string)
}

func (l lineIgnore) empty() bool { return len(l.ptrs) == 0 && len(l.jq) == 0 }

// JudgeIgnores separates the ignore rules in force at now from the expired ones,
// which become ignore-expired findings. The pipeline judges every rule of a report
// once, with one now, and gives Diff only the rules in force (Options.Ignore).
func JudgeIgnores(rules []IgnoreRule, now time.Time) (active []IgnoreRule, expired []Finding) {
	for _, r := range rules {
		if !r.Expires.IsZero() && r.Expires.Before(now) {
			expired = append(expired, Finding{
				Rule:     RuleIgnoreExpired,
				Severity: DefaultSeverity[RuleIgnoreExpired],
				Key:      render.ObjectKey{Group: r.Group, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name},
				Message:  expiredMessage(r),
			})
			continue
		}
		active = append(active, r)
	}
	return active, expired
}

func expiredMessage(r IgnoreRule) string {
	origin := r.Origin
	if origin == "" {
		origin = "the config"
	}
	what := ignoreScope(r)
	reason := ""
	if r.Reason != "" {
		reason = fmt.Sprintf(" (%q)", r.Reason)
	}
	return fmt.Sprintf("The ignore rule at %s for %s%s expired on %s, so what it hid is reported again: renew it with a new `expires` or remove it.",
		origin, what, reason, r.Expires.UTC().Format("2006-01-02"))
}

func ignoreScope(r IgnoreRule) string {
	var parts []string
	if len(r.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(r.Paths, ", "))
	}
	if len(r.JQ) > 0 {
		parts = append(parts, "jq paths "+strings.Join(r.JQ, ", "))
	}
	if len(r.Managers) > 0 {
		parts = append(parts, "managers "+strings.Join(r.Managers, ", "))
	}
	if len(r.Rules) > 0 {
		rs := make([]string, len(r.Rules))
		for i, x := range r.Rules {
			rs[i] = string(x)
		}
		parts = append(parts, "rules "+strings.Join(rs, ", "))
	}
	if len(parts) == 0 {
		return "all findings"
	}
	return strings.Join(parts, "; ")
}

// hideFinding reports whether an active rule hides f.
func (ig ignores) hideFinding(f Finding) bool {
	return slices.ContainsFunc(ig.active, func(r IgnoreRule) bool { return r.matchesFinding(f) })
}

// linePaths lists what is removed from k's diffs.
func (ig ignores) linePaths(k render.ObjectKey) lineIgnore {
	out := lineIgnore{note: ig.note}
	for _, r := range ig.active {
		if r.hidesLines() && r.matchesObject(k) {
			out.ptrs = append(out.ptrs, r.Paths...)
			for _, e := range r.JQ {
				if j := ig.jq[e]; j != nil {
					out.jq = append(out.jq, j)
				}
			}
		}
	}
	return out
}

// strip returns obj without the fields at paths (obj itself when there are none).
func strip(obj *unstructured.Unstructured, paths lineIgnore) *unstructured.Unstructured {
	if obj == nil || paths.empty() {
		return obj
	}
	out := obj.DeepCopy()
	for _, p := range paths.ptrs {
		removePath(out.Object, p)
	}
	for _, j := range paths.jq {
		obj, err := j.del(out.Object)
		if err != nil {
			if paths.note != nil {
				paths.note(err.Error())
			}
			continue
		}
		out.Object = obj
	}
	return out
}
