package live

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
)

// Scope answers from the cluster's discovery whether a kind is namespaced, the way
// the controllers' REST mappers do, for diffing.Identity. A kind the cluster does
// not serve (a CRD not installed yet) is unknown. The discovery snapshot is the
// Reader's cached one, shared with Read.
func (r *Reader) Scope(ctx context.Context) (diffing.ScopeFunc, error) {
	cat, err := r.getCatalog(ctx, false)
	if err != nil {
		return nil, err
	}
	return func(gk schema.GroupKind) (bool, bool) {
		rs := cat.byGK[gk]
		if len(rs) == 0 {
			return false, false
		}
		return rs[0].namespaced, true
	}, nil
}
