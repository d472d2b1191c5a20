package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// substituteKey is the label or annotation value with which Flux skips
// post-build substitution for one object.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// substitute applies Flux postBuild variables (Options.Substitute) to a rendered
// target in the render process, as kustomize-controller does after kustomize
// build (fluxcd/pkg kustomize/kustomize_varsub.go SubstituteVariables). A
// variable used many times makes the text many times the size of the render:
// maxOutput bounds the substituted YAML of all the objects. On each object's
// YAML text, ${VAR} becomes its value (empty when unset), ${VAR:=default} and ${VAR:-default}
// fall back to the default when VAR is unset or empty, ${VAR=default} and
// ${VAR-default} when it is unset, and $${VAR} stays a literal ${VAR}. Objects
// labelled or annotated kustomize.toolkit.fluxcd.io/substitute: disabled are left
// alone. Errors name the object and the variable, never a value. set is not
// modified.
func substitute(set ObjectSet, vars map[string]string, maxOutput int64) (ObjectSet, error) {
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
		text, err := envsubst(string(b), vars, room)
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

// envsubst expands ${...} references in s, into at most room bytes.
func envsubst(s string, vars map[string]string, room int64) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if int64(b.Len()) > room {
			return "", errSubstituteOver
		}
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		if s[i+1] == '$' && i+2 < len(s) && s[i+2] == '{' {
			b.WriteByte('$') // $${VAR} is an escaped literal ${VAR}
			i += 2
			continue
		}
		if s[i+1] != '{' {
			b.WriteByte(s[i])
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("unclosed ${ at offset %d", i)
		}
		expr := s[i+2 : i+2+end]
		n := 0
		for n < len(expr) && isVarChar(expr[n], n == 0) {
			n++
		}
		if n == 0 {
			// Not a variable reference (e.g. ${} or ${1}): keep as written.
			b.WriteString(s[i : i+3+end])
			i += 3 + end
			continue
		}
		name, op := expr[:n], expr[n:]
		val, set := vars[name]
		switch {
		case op == "":
		case strings.HasPrefix(op, ":=") || strings.HasPrefix(op, ":-"):
			if val == "" {
				val = op[2:]
			}
		case strings.HasPrefix(op, "=") || strings.HasPrefix(op, "-"):
			if !set {
				val = op[1:]
			}
		default:
			return "", fmt.Errorf("variable %s: unsupported operator in ${%s…}", name, name)
		}
		if int64(b.Len()+len(val)) > room {
			return "", errSubstituteOver
		}
		b.WriteString(val)
		i += 3 + end
	}
	if int64(b.Len()) > room {
		return "", errSubstituteOver
	}
	return b.String(), nil
}

func isVarChar(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}
