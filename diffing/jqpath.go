package diffing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/itchyny/gojq"
)

// jqTimeout bounds one jq expression on one object, as Argo CD's default
// (ARGOCD_IGNORE_NORMALIZER_JQ_TIMEOUT, 1s) does: a hostile expression in a PR
// cannot spin.
const jqTimeout = time.Second

// jqPath is one compiled Argo CD ignoreDifferences jqPathExpression.
type jqPath struct {
	expr, origin string
	code         *gojq.Code
}

// compileJQPath compiles expr as Argo CD does: the query del(expr), which
// removes the paths expr selects (argo-cd util/argo/normalizers/diff_normalizer.go,
// newJQNormalizerPatch and jqNormalizerPatch.Apply).
func compileJQPath(expr, origin string) (*jqPath, error) {
	q, err := gojq.Parse(fmt.Sprintf("del(%s)", expr))
	if err == nil {
		var code *gojq.Code
		if code, err = gojq.Compile(q); err == nil {
			return &jqPath{expr: expr, origin: origin, code: code}, nil
		}
	}
	return nil, fmt.Errorf("jqPathExpressions '%s' in %s is not valid jq (%v): it is not applied, so the differences it would hide are shown; fix the expression", expr, originOr(origin), err)
}

func originOr(origin string) string {
	if origin == "" {
		return "the ignore rule"
	}
	return origin
}

// del returns obj without the fields the expression selects. Like Argo CD, an
// expression that fails, times out or returns other than one object is not
// applied; the error says so.
func (j *jqPath) del(obj map[string]any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), jqTimeout)
	defer cancel()
	iter := j.code.RunWithContext(ctx, toJQ(obj))
	first, ok := iter.Next()
	fail := func(why string) error {
		return fmt.Errorf("jqPathExpressions '%s' in %s failed on an object (%s): it is not applied there, as in Argo CD, so the differences it would hide are shown", j.expr, originOr(j.origin), why)
	}
	if !ok {
		return nil, fail("no result")
	}
	if err, isErr := first.(error); isErr {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fail("timed out after " + jqTimeout.String())
		}
		return nil, fail(err.Error())
	}
	if _, more := iter.Next(); more {
		return nil, fail("more than one result")
	}
	out, isMap := fromJQ(first).(map[string]any)
	if !isMap {
		return nil, fail("the result is not an object")
	}
	return out, nil
}

// toJQ copies v into the types gojq takes (int64, which unstructured uses, to int).
func toJQ(v any) any {
	return mapLeaves(v, func(x any) any {
		switch n := x.(type) {
		case int64:
			return int(n)
		case int32:
			return int(n)
		}
		return x
	})
}

// fromJQ copies gojq's result back into unstructured's types (int to int64).
func fromJQ(v any) any {
	return mapLeaves(v, func(x any) any {
		if n, ok := x.(int); ok {
			return int64(n)
		}
		return x
	})
}

// mapLeaves copies v's maps and lists and passes every other value through leaf.
func mapLeaves(v any, leaf func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = mapLeaves(e, leaf)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = mapLeaves(e, leaf)
		}
		return s
	default:
		return leaf(v)
	}
}
