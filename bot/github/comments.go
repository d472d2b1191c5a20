package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v60/github"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// UpsertComment makes the bot's comments on pr equal pages: pages[0] is the one
// sticky comment, found by its hidden marker `<!-- KEY -->` (key "" means the key
// of the check name, hosttext.CheckKey: "driftpreview:sticky v1" for the default
// name, so each check name keeps its own comment) and edited in place; pages[i] is
// follow-up i+1, marked `<!-- KEY page N -->`. Missing comments are created,
// unchanged ones left alone, follow-ups the run no longer needs deleted, and
// duplicates left by a race deleted. Pages longer than MaxCommentLength are truncated
// with a note.
func (c *Client) UpsertComment(ctx context.Context, pr bot.PR, key string, pages []string) error {
	t, key, unlock, err := c.openThread(pr, key, "upserting comment")
	if err != nil {
		return err
	}
	defer unlock()
	return hosttext.UpsertThread(ctx, t, fmt.Sprintf("upserting comment on %s#%d", pr.Repo, pr.Number), key, pr.HeadSHA, pages, MaxCommentLength)
}

// thread is pr's comment thread (hosttext.Thread) through one installation.
type thread struct {
	c           *Client
	in          *installation
	owner, name string
	pr          bot.PR
}

func (t thread) List(ctx context.Context) ([]hosttext.Comment, error) {
	return t.c.botComments(ctx, t.in, t.owner, t.name, t.pr)
}

func (t thread) Apply(ctx context.Context, ops []hosttext.Op) error {
	return t.c.apply(ctx, t.in, t.owner, t.name, t.pr, ops)
}

// openThread is what UpsertComment and ReconcileComments share: pr's repository
// and installation, the sticky key ("" means the check name's), and pr's lock,
// held until unlock. doing names the caller in errors.
func (c *Client) openThread(pr bot.PR, key, doing string) (t thread, _ string, unlock func(), _ error) {
	owner, name, err := split(pr.Repo)
	if err != nil {
		return t, "", nil, fmt.Errorf("%s: %w", doing, err)
	}
	in, err := c.install(pr.InstallationID)
	if err != nil {
		return t, "", nil, fmt.Errorf("%s on %s#%d: %w", doing, pr.Repo, pr.Number, err)
	}
	if key == "" {
		key = hosttext.CheckKey(c.opts.CheckName)
	}
	mu := c.prLock(pr)
	mu.Lock()
	return thread{c: c, in: in, owner: owner, name: name, pr: pr}, key, mu.Unlock, nil
}

// botComments lists the comments on pr this App may have written, oldest first.
func (c *Client) botComments(ctx context.Context, in *installation, owner, name string, pr bot.PR) ([]hosttext.Comment, error) {
	var existing []hosttext.Comment
	opts := &gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		page, resp, err := in.api.Issues.ListComments(ctx, owner, name, pr.Number, opts)
		if err != nil {
			return nil, fmt.Errorf("listing comments of %s#%d: %w", pr.Repo, pr.Number, err)
		}
		for _, cm := range page {
			if c.ours(cm.GetUser()) {
				existing = append(existing, hosttext.Comment{ID: cm.GetID(), Body: cm.GetBody()})
			}
		}
		if resp.NextPage == 0 {
			return existing, nil
		}
		opts.Page = resp.NextPage
	}
}

// apply makes the calls of a plan.
func (c *Client) apply(ctx context.Context, in *installation, owner, name string, pr bot.PR, ops []hosttext.Op) error {
	var err error
	for _, op := range ops {
		switch op.Kind {
		case hosttext.OpCreate:
			_, _, err = in.api.Issues.CreateComment(ctx, owner, name, pr.Number, &gh.IssueComment{Body: gh.String(op.Body)})
		case hosttext.OpUpdate:
			_, _, err = in.api.Issues.EditComment(ctx, owner, name, op.ID, &gh.IssueComment{Body: gh.String(op.Body)})
		case hosttext.OpDelete:
			_, err = in.api.Issues.DeleteComment(ctx, owner, name, op.ID)
		}
		if err != nil {
			return fmt.Errorf("%s comment (page %d) on %s#%d: %w", op.Kind, op.Page, pr.Repo, pr.Number, err)
		}
	}
	return nil
}

// ours says whether a comment author can be this App: a human pasting the marker
// must never make us edit (and fail on) their comment.
func (c *Client) ours(u *gh.User) bool {
	if c.opts.BotLogin != "" {
		return u.GetLogin() == c.opts.BotLogin
	}
	return u.GetType() == "Bot"
}

// ReconcileComments lists pr's comments and deletes the sticky comments of key
// (and their follow-ups) posted for another head than pr.HeadSHA, and duplicates,
// as UpsertComment does after posting; it never edits or creates one, and does
// nothing when pr's head has no sticky comment. The worker calls it a while after
// posting, for a POST of an older head that landed late.
func (c *Client) ReconcileComments(ctx context.Context, pr bot.PR, key string) error {
	t, key, unlock, err := c.openThread(pr, key, "reconciling comments")
	if err != nil {
		return err
	}
	defer unlock()
	return hosttext.ReconcileThread(ctx, t, key, pr.HeadSHA)
}
