package gitops

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render"
)

// substituteKey is the label or annotation value with which Flux skips
// post-build substitution for one object.
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// Substitute applies Flux postBuild variables to a rendered target, as
// kustomize-controller does after kustomize build: on each object's YAML text,
// ${VAR} becomes its value (empty when unset), ${VAR:=default} and ${VAR:-default}
// fall back to the default when VAR is unset or empty, ${VAR=default} and
// ${VAR-default} when it is unset, and $${VAR} stays a literal ${VAR}. Objects
// labelled or annotated kustomize.toolkit.fluxcd.io/substitute: disabled are left
// alone. Errors name the object and the variable, never a value. set is not
// modified.
func Substitute(set render.ObjectSet, vars map[string]string) (render.ObjectSet, error) {
	out := render.ObjectSet{Notes: append([]string(nil), set.Notes...)}
	var errs []error
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
		text, err := envsubst(string(b), vars)
		if err != nil {
			errs = append(errs, &render.Error{File: o.Source, Err: fmt.Errorf("substituting variables in %s: %w", o.Key, err)})
			continue
		}
		// Through render's decoder (its limits hold for what the variables
		// bring in) and JSON into Unstructured, so integers stay int64 as the
		// rest of the pipeline expects.
		u := &unstructured.Unstructured{}
		var j []byte
		docs, err := render.DecodeYAML([]byte(text), o.Source)
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
			errs = append(errs, &render.Error{File: o.Source, Err: fmt.Errorf("substituting variables in %s: the result is not a valid object; check the variables it uses for characters such as ':' or newlines", o.Key)})
			continue
		}
		out.Objects = append(out.Objects, render.Object{Key: render.KeyOf(u), Obj: u, Source: o.Source, HashSuffix: o.HashSuffix})
	}
	if len(errs) > 0 {
		return render.ObjectSet{}, errors.Join(errs...)
	}
	out.Sort()
	return out, nil
}

func disabled(u *unstructured.Unstructured) bool {
	return u.GetLabels()[substituteKey] == "disabled" || u.GetAnnotations()[substituteKey] == "disabled"
}

func copyObject(o render.Object) render.Object {
	if o.Obj != nil {
		o.Obj = o.Obj.DeepCopy()
	}
	return o
}

// envsubst expands ${...} references in s.
func envsubst(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
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
		b.WriteString(val)
		i += 3 + end
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
