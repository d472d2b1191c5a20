package gitlab

import (
	"context"
	"fmt"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// UpsertComment makes the bot's notes on the merge request equal pages: pages[0] is
// the one sticky note, found by its hidden marker `<!-- KEY -->` (key "" means the
// key of the status name, hosttext.CheckKey, so each status name keeps its own
// note; the default name keeps hosttext.DefaultKey) and edited in place; pages[i] is follow-up i+1, marked
// `<!-- KEY page N -->`. Missing notes are created, unchanged ones left alone, stale
// follow-ups and duplicates deleted. Only notes written by the token's own user are
// considered, so a human quoting the marker is never touched. Pages longer than
// MaxCommentLength are truncated with a note.
func (c *Client) UpsertComment(ctx context.Context, pr bot.PR, key string, pages []string) error {
	t, key, unlock, err := c.openThread(ctx, pr, key, "upserting note")
	if err != nil {
		return err
	}
	defer unlock()
	return hosttext.UpsertThread(ctx, t, fmt.Sprintf("upserting note on %s!%d", pr.Repo, pr.Number), key, pr.HeadSHA, pages, MaxCommentLength)
}

// thread is the merge request's note thread (hosttext.Thread), as the token's
// user (self) sees it.
type thread struct {
	c    *Client
	pr   bot.PR
	self int64
}

func (t thread) List(ctx context.Context) ([]hosttext.Comment, error) {
	return t.c.botNotes(ctx, t.pr, t.self)
}

func (t thread) Apply(ctx context.Context, ops []hosttext.Op) error {
	return t.c.apply(ctx, t.pr, ops)
}

// openThread is what UpsertComment and ReconcileComments share: the token's
// user, the sticky key ("" means the status name's), and the merge request's
// lock, held until unlock. doing names the caller in errors.
func (c *Client) openThread(ctx context.Context, pr bot.PR, key, doing string) (t thread, _ string, unlock func(), _ error) {
	self, err := c.selfID(ctx)
	if err != nil {
		return t, "", nil, fmt.Errorf("%s on %s!%d: %w", doing, pr.Repo, pr.Number, err)
	}
	if key == "" {
		key = hosttext.CheckKey(c.opts.StatusName)
	}
	mu := c.prLock(pr)
	mu.Lock()
	return thread{c: c, pr: pr, self: self}, key, mu.Unlock, nil
}

// botNotes lists the notes on the merge request written by the token's user,
// oldest first.
func (c *Client) botNotes(ctx context.Context, pr bot.PR, self int64) ([]hosttext.Comment, error) {
	var existing []hosttext.Comment
	opts := &gl.ListMergeRequestNotesOptions{
		ListOptions: gl.ListOptions{PerPage: 100, Page: 1},
		OrderBy:     gl.Ptr("created_at"),
		Sort:        gl.Ptr("asc"),
	}
	for {
		notes, resp, err := c.api.Notes.ListMergeRequestNotes(pid(pr), int64(pr.Number), opts, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("listing notes of %s!%d: %w", pr.Repo, pr.Number, err)
		}
		for _, n := range notes {
			if !n.System && n.Author.ID == self {
				existing = append(existing, hosttext.Comment{ID: n.ID, Body: n.Body})
			}
		}
		if resp.NextPage == 0 {
			return existing, nil
		}
		opts.Page = resp.NextPage
	}
}

// apply makes the calls of a plan.
func (c *Client) apply(ctx context.Context, pr bot.PR, ops []hosttext.Op) error {
	iid := int64(pr.Number)
	var err error
	for _, op := range ops {
		switch op.Kind {
		case hosttext.OpCreate:
			_, _, err = c.api.Notes.CreateMergeRequestNote(pid(pr), iid, &gl.CreateMergeRequestNoteOptions{Body: gl.Ptr(op.Body)}, gl.WithContext(ctx))
		case hosttext.OpUpdate:
			_, _, err = c.api.Notes.UpdateMergeRequestNote(pid(pr), iid, op.ID, &gl.UpdateMergeRequestNoteOptions{Body: gl.Ptr(op.Body)}, gl.WithContext(ctx))
		case hosttext.OpDelete:
			_, err = c.api.Notes.DeleteMergeRequestNote(pid(pr), iid, op.ID, gl.WithContext(ctx))
		}
		if err != nil {
			return fmt.Errorf("%s note (page %d) on %s!%d: %w", op.Kind, op.Page, pr.Repo, pr.Number, err)
		}
	}
	return nil
}

// ReconcileComments lists the merge request's notes and deletes the sticky notes
// of key (and their follow-ups) posted for another head than pr.HeadSHA, and
// duplicates, as UpsertComment does after posting; it never edits or creates
// one, and does nothing when pr's head has no sticky note. The worker calls it a
// while after posting, for a POST of an older head that landed late.
func (c *Client) ReconcileComments(ctx context.Context, pr bot.PR, key string) error {
	t, key, unlock, err := c.openThread(ctx, pr, key, "reconciling notes")
	if err != nil {
		return err
	}
	defer unlock()
	return hosttext.ReconcileThread(ctx, t, key, pr.HeadSHA)
}
