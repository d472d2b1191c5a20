package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	fluxenvsubst "github.com/fluxcd/pkg/envsubst"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// substituteKey is the label or annotation value with which Flux skips
// post-build substitution for one object.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// substitute applies Flux postBuild variables (Options.Substitute) to a rendered
// target in the render process, exactly as kustomize-controller does after
// kustomize build: fluxcd/kustomize-controller
// internal/controller/kustomization_controller.go (build) calls fluxcd/pkg
// kustomize/kustomize_varsub.go SubstituteVariables on every resource, which
// skips objects labelled or annotated kustomize.toolkit.fluxcd.io/substitute:
// disabled, refuses variable names that are not shell names, and runs Flux's
// own bash-like expansion (github.com/fluxcd/pkg/envsubst: ${VAR},
// ${VAR:-default}, ${VAR:=default} with nested ${...} in the default, $${VAR}
// for a literal ${VAR}, and the string operators) on the object's YAML. With
// strict on (the controller's StrictPostBuildSubstitutions feature gate, on by
// default since kustomize-controller v1.9), a variable that is not set and has no
// default is an error; with it off, it becomes empty. Newlines are removed from
// values, as LoadVariables and SubstituteVariables do.
//
// A variable used many times makes the text many times the size of the render:
// maxOutput bounds the substituted YAML of all the objects (what the expansion
// reads of the variables is counted as it goes, so a blow-up stops early; the
// render process's memory limit stands behind it). Errors name the object and
// the variable, never a value. set is not modified.
func substitute(set ObjectSet, vars map[string]string, strict bool, maxOutput int64) (ObjectSet, error) {
	for name := range vars {
		if !varName.MatchString(name) {
			return ObjectSet{}, fmt.Errorf("substituting variables: '%s' var name is invalid, must match '%s' (as kustomize-controller requires)", name, varName.String())
		}
	}
	clean := make(map[string]string, len(vars))
	for k, v := range vars {
		clean[k] = strings.ReplaceAll(v, "\n", "")
	}
	out := ObjectSet{Notes: append([]string(nil), set.Notes...)}
	var errs []error
	room := maxOutput
	for _, o := range set.Objects {
		if o.Obj == nil || disabled(o.Obj) {
			out.Objects = append(out.Objects, copyObject(o))
			continue
		}
		b, err := yaml.Marshal(o.Obj.Object)
		if err != nil {
			errs = append(errs, fmt.Errorf("substituting variables in %s: encoding: %w", o.Key, err))
			continue
		}
		text, err := envsubst(string(b), clean, strict, room)
		if errors.Is(err, errSubstituteOver) {
			return ObjectSet{}, &Error{File: o.Source, Err: fmt.Errorf("substituting variables in %s: the objects of the target come to more than %d bytes after substitution (the limit of rendered manifests per target); look for large variables used many times", o.Key, maxOutput)}
		}
		room -= int64(len(text))
		if err != nil {
			errs = append(errs, &Error{File: o.Source, Err: fmt.Errorf("substituting variables in %s: %w", o.Key, err)})
			continue
		}
		// Through render's decoder (its limits hold for what the variables
		// bring in) and JSON into Unstructured, so integers stay int64 as the
		// rest of the pipeline expects.
		u := &unstructured.Unstructured{}
		var j []byte
		docs, err := DecodeYAML([]byte(text), o.Source)
		if err == nil && len(docs) != 1 {
			err = errors.New("not one object")
		}
		if err == nil {
			j, err = json.Marshal(docs[0].Value)
		}
		if err == nil {
			err = u.UnmarshalJSON(j)
		}
		if err != nil {
			// The error may quote a substituted value: do not wrap it.
			errs = append(errs, &Error{File: o.Source, Err: fmt.Errorf("substituting variables in %s: the result is not a valid object; check the variables it uses for characters such as ':' or newlines", o.Key)})
			continue
		}
		out.Objects = append(out.Objects, Object{Key: KeyOf(u), Obj: u, Source: o.Source, HashSuffix: o.HashSuffix})
	}
	if len(errs) > 0 {
		return ObjectSet{}, errors.Join(errs...)
	}
	out.Sort()
	return out, nil
}

// varName is what kustomize-controller accepts as a variable name
// (kustomize_varsub.go varsubRegex).
var varName = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

func disabled(u *unstructured.Unstructured) bool {
	return u.GetLabels()[substituteKey] == "disabled" || u.GetAnnotations()[substituteKey] == "disabled"
}

func copyObject(o Object) Object {
	if o.Obj != nil {
		o.Obj = o.Obj.DeepCopy()
	}
	return o
}

// errSubstituteOver is envsubst's output past its room.
var errSubstituteOver = errors.New("substituted text over the limit")

// envsubst expands s with Flux's envsubst (the mapping kustomize_varsub.go
// varSubstitution gives it: in strict mode a variable that is not in vars does
// not exist, else it is empty), into at most room bytes. The bytes the mapping
// hands out are counted, so a variable used many times stops the expansion once
// they pass room instead of building the whole text first.
func envsubst(s string, vars map[string]string, strict bool, room int64) (string, error) {
	if int64(len(s)) > room {
		return "", errSubstituteOver
	}
	used := int64(len(s))
	over := false
	text, err := fluxenvsubst.Eval(s, func(name string) (string, bool) {
		v, ok := vars[name]
		if !strict {
			ok = true
		}
		if used += int64(len(v)); used > room {
			over = true
			return "", ok
		}
		return v, ok
	})
	if over || int64(len(text)) > room {
		return "", errSubstituteOver
	}
	if err != nil {
		return "", substituteError(err)
	}
	return text, nil
}

// substituteError words an envsubst error: a variable that strict mode wants
// set, or a malformed ${...}. Neither quotes a value.
func substituteError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "variable not set (strict mode): "); ok {
		return fmt.Errorf("variable %s is not set and has no default: kustomize-controller fails the reconciliation (post-build substitution is strict by default since v1.9, feature gate StrictPostBuildSubstitutions); set it in postBuild.substitute or substituteFrom, or give it a default (${VAR:=default})", strings.Trim(name, `"`))
	}
	return fmt.Errorf("variable substitution failed: %s; kustomize-controller fails the reconciliation (escape a literal ${ as $${)", msg)
}
