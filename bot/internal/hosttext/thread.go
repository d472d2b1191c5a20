package hosttext

import (
	"context"
	"fmt"
)

// Thread is one pull request's comment thread as a host adapter sees it: the
// comments its own bot user wrote, oldest first, and the calls that carry out a
// plan. UpsertThread and ReconcileThread are the one algorithm both adapters run
// on it; the caller holds the pull request's lock around either.
type Thread interface {
	List(ctx context.Context) ([]Comment, error)
	Apply(ctx context.Context, ops []Op) error
}

// UpsertThread makes the thread's comments of key equal pages for head (see
// PlanHead), then lists again and deletes what Reconcile finds: a job of an older
// head cancelled while its POST was in flight may have created a second sticky
// comment after the first listing. where prefixes a planning error, e.g.
// "upserting comment on acme/shop#7".
func UpsertThread(ctx context.Context, t Thread, where, key, head string, pages []string, limit int) error {
	existing, err := t.List(ctx)
	if err != nil {
		return err
	}
	ops, err := PlanHead(key, head, existing, pages, limit)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := t.Apply(ctx, ops); err != nil {
		return err
	}
	if len(ops) == 0 {
		return nil
	}
	return ReconcileThread(ctx, t, key, head)
}

// ReconcileThread lists the thread and deletes the sticky comments of key (and
// their follow-ups) posted for another head than head, and duplicates. It never
// edits or creates one.
func ReconcileThread(ctx context.Context, t Thread, key, head string) error {
	existing, err := t.List(ctx)
	if err != nil {
		return err
	}
	return t.Apply(ctx, Reconcile(key, head, existing))
}
