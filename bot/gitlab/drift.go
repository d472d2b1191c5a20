package gitlab

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// maxIssueDescription is GitLab's limit on an issue description (1,048,576
// characters); the same margin as notes is kept.
const maxIssueDescription = MaxCommentLength

// maxIssuePages bounds the listing of the bot's own issues.
const maxIssuePages = 20

// pushHook is a Push Hook payload, trimmed to the fields the bot reads.
type pushHook struct {
	Ref          string      `json:"ref"`
	After        string      `json:"after"`
	UserUsername string      `json:"user_username"`
	ProjectID    int64       `json:"project_id"`
	Project      pushProject `json:"project"`
}

type pushProject struct {
	hookProject
	DefaultBranch string `json:"default_branch"`
	WebURL        string `json:"web_url"`
}

// deletedSHA is the after of a push that deletes a branch.
const deletedSHA = "0000000000000000000000000000000000000000"

// event translates a push: one to the project's default branch (not a deletion)
// is bot.EventDrift, anything else is ignored. The PR names the project only
// (Number 0, BaseRef the default branch, HeadSHA the pushed commit, URL the
// project's web URL).
func (p *pushHook) event(ev bot.Event) (bot.Event, error) {
	ev.Actor = p.UserUsername
	branch := p.Project.DefaultBranch
	switch {
	case p.Project.PathWithNamespace == "":
		return ev, fmt.Errorf("decoding gitlab push hook: project.path_with_namespace is missing")
	case p.After == deletedSHA || strings.Trim(p.After, "0") == "":
		ev.Kind, ev.Reason = bot.EventIgnore, "push deletes a branch"
		return ev, nil
	case branch == "" || p.Ref != "refs/heads/"+branch:
		ev.Kind, ev.Reason = bot.EventIgnore, "push to "+p.Ref+", not to the default branch"
		return ev, nil
	}
	ev.Kind = bot.EventDrift
	ev.PR = bot.PR{Host: "gitlab", Repo: p.Project.PathWithNamespace, ProjectID: p.Project.ID,
		BaseRef: branch, HeadSHA: p.After, URL: p.Project.WebURL}
	if ev.PR.ProjectID == 0 {
		ev.PR.ProjectID = p.ProjectID
	}
	return ev, nil
}

func decodePush(kind string, body []byte, ev bot.Event) (bot.Event, error) {
	var p pushHook
	if err := json.Unmarshal(body, &p); err != nil {
		return ev, fmt.Errorf("decoding gitlab %s payload: %w", kind, err)
	}
	return p.event(ev)
}

// UpsertDriftIssue makes the project's one drift issue say want
// (hosttext.UpsertIssue): it is found by its hidden marker among the issues the
// token's user created, open or closed, edited in place, closed when want has no
// drift and reopened on new drift; a new one is created only for drift and only
// when none exists. Calls for one project are serialised in this process; a
// duplicate left by another replica's concurrent create is closed by the pass
// after a create. The token needs the api scope and Reporter access or more.
func (c *Client) UpsertDriftIssue(ctx context.Context, repo bot.PR, want bot.DriftIssue) (bot.IssueRef, error) {
	if repo.Repo == "" && repo.ProjectID == 0 {
		return bot.IssueRef{}, fmt.Errorf("drift issue: no project")
	}
	self, err := c.selfID(ctx)
	if err != nil {
		return bot.IssueRef{}, fmt.Errorf("drift issue of %s: %w", repo.Repo, err)
	}
	mu := c.prMu.For("drift issue " + repo.Repo)
	mu.Lock()
	defer mu.Unlock()
	t := issues{c: c, pid: pid(repo), repo: repo.Repo, self: self}
	is, created, err := hosttext.UpsertIssue(ctx, t, "drift issue of "+repo.Repo, want, maxIssueDescription)
	if err != nil {
		return bot.IssueRef{}, err
	}
	return bot.IssueRef{Number: is.Number, URL: is.URL, Open: is.Open, Created: created}, nil
}

// issues is a project's issues as the token's user sees them
// (hosttext.IssueTracker).
type issues struct {
	c    *Client
	pid  any
	repo string
	self int64
}

// List lists the drift issues the token's user created, open and closed, oldest
// first.
func (t issues) List(ctx context.Context) ([]hosttext.Issue, error) {
	opts := &gl.ListProjectIssuesOptions{AuthorID: gl.Ptr(t.self), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("asc"),
		ListOptions: gl.ListOptions{PerPage: 100, Page: 1}}
	var out []hosttext.Issue
	for pages := 0; pages < maxIssuePages; pages++ {
		page, resp, err := t.c.api.Issues.ListProjectIssues(t.pid, opts, gl.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("listing issues of %s: %w", t.repo, err)
		}
		for _, is := range page {
			if is.Author == nil || is.Author.ID != t.self || !hosttext.IsDriftIssue(is.Description) {
				continue
			}
			out = append(out, issueFrom(is))
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

func issueFrom(is *gl.Issue) hosttext.Issue {
	return hosttext.Issue{Number: is.IID, Title: is.Title, Body: is.Description, Open: is.State == "opened", URL: is.WebURL}
}

// Apply creates or edits one issue.
func (t issues) Apply(ctx context.Context, op hosttext.IssueOp) (hosttext.Issue, error) {
	if op.Create {
		is, _, err := t.c.api.Issues.CreateIssue(t.pid, &gl.CreateIssueOptions{Title: gl.Ptr(op.Title), Description: gl.Ptr(op.Body)}, gl.WithContext(ctx))
		if err != nil {
			return hosttext.Issue{}, fmt.Errorf("creating an issue in %s: %w", t.repo, err)
		}
		return issueFrom(is), nil
	}
	opts := &gl.UpdateIssueOptions{}
	if op.Title != "" {
		opts.Title = gl.Ptr(op.Title)
	}
	if op.Body != "" {
		opts.Description = gl.Ptr(op.Body)
	}
	switch op.State {
	case hosttext.IssueOpen:
		opts.StateEvent = gl.Ptr("reopen")
	case hosttext.IssueClosed:
		opts.StateEvent = gl.Ptr("close")
	}
	is, _, err := t.c.api.Issues.UpdateIssue(t.pid, op.Number, opts, gl.WithContext(ctx))
	if err != nil {
		return hosttext.Issue{}, fmt.Errorf("editing issue #%d of %s: %w", op.Number, t.repo, err)
	}
	return issueFrom(is), nil
}
