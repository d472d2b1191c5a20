package github

import (
	"context"
	"fmt"
	"net/http"

	gh "github.com/google/go-github/v60/github"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// maxIssueBody is GitHub's limit on an issue body (65,536 characters, as for
// comments).
const maxIssueBody = MaxCommentLength

// pushEvent translates a push: a push to the repository's default branch (not
// a deletion) is bot.EventDrift, anything else is ignored. The PR names the
// repository only (Number 0, BaseRef the default branch, HeadSHA the pushed
// commit, URL the repository's web URL).
func pushEvent(ev bot.Event, p *gh.PushEvent) (bot.Event, error) {
	ev.Actor = p.GetSender().GetLogin()
	repo := p.GetRepo()
	branch := repo.GetDefaultBranch()
	switch {
	case repo == nil || repo.GetFullName() == "":
		return ev, fmt.Errorf("decoding github push payload: repository.full_name is missing")
	case p.GetDeleted():
		ev.Kind, ev.Reason = bot.EventIgnore, "push deletes a branch"
		return ev, nil
	case branch == "" || p.GetRef() != "refs/heads/"+branch:
		ev.Kind, ev.Reason = bot.EventIgnore, "push to "+p.GetRef()+", not to the default branch"
		return ev, nil
	}
	ev.Kind = bot.EventDrift
	ev.PR = bot.PR{
		Host: "github", Repo: repo.GetFullName(), BaseRef: branch, HeadSHA: p.GetAfter(),
		InstallationID: p.GetInstallation().GetID(), URL: repo.GetHTMLURL(),
	}
	if ev.PR.InstallationID == 0 {
		return ev, fmt.Errorf("github push to %s has no installation.id: deliver it from the GitHub App, not a repository webhook", ev.PR.Repo)
	}
	return ev, nil
}

// UpsertDriftIssue makes repo's one drift issue say want (hosttext.UpsertIssue):
// it is found by its hidden marker among the issues this App created, open or
// closed, edited in place, closed when want has no drift and reopened on new
// drift; a new one is created only for drift and only when none exists. Calls
// for one repository are serialised in this process; a duplicate left by
// another replica's concurrent create is closed by the pass after a create.
// The App needs the issues: write permission.
func (c *Client) UpsertDriftIssue(ctx context.Context, repo bot.PR, want bot.DriftIssue) (bot.IssueRef, error) {
	owner, name, err := split(repo.Repo)
	if err != nil {
		return bot.IssueRef{}, fmt.Errorf("drift issue: %w", err)
	}
	in, err := c.install(repo.InstallationID)
	if err != nil {
		return bot.IssueRef{}, fmt.Errorf("drift issue of %s: %w", repo.Repo, err)
	}
	login, err := c.botLogin(ctx)
	if err != nil {
		return bot.IssueRef{}, fmt.Errorf("drift issue of %s: %w", repo.Repo, err)
	}
	mu := c.prMu.For("drift issue " + repo.Repo)
	mu.Lock()
	defer mu.Unlock()
	t := issues{c: c, in: in, owner: owner, name: name, login: login}
	is, created, err := hosttext.UpsertIssue(ctx, t, "drift issue of "+repo.Repo, want, maxIssueBody)
	if err != nil {
		return bot.IssueRef{}, err
	}
	return bot.IssueRef{Number: is.Number, URL: is.URL, Open: is.Open, Created: created}, nil
}

// issues is a repository's issues as the App sees them (hosttext.IssueTracker).
type issues struct {
	c           *Client
	in          *installation
	owner, name string
	// login is the App's bot user ("slug[bot]"), the creator the listing
	// filters by; "" lists every creator and keeps Bot-type authors.
	login string
}

// maxIssuePages bounds the listing when the creator is unknown.
const maxIssuePages = 20

// List lists the drift issues this App created, open and closed, oldest first.
func (t issues) List(ctx context.Context) ([]hosttext.Issue, error) {
	opts := &gh.IssueListByRepoOptions{State: "all", Creator: t.login, Sort: "created", Direction: "asc",
		ListOptions: gh.ListOptions{PerPage: 100}}
	var out []hosttext.Issue
	for pages := 0; pages < maxIssuePages; pages++ {
		page, resp, err := t.in.api.Issues.ListByRepo(ctx, t.owner, t.name, opts)
		if err != nil {
			return nil, fmt.Errorf("listing issues of %s/%s: %w", t.owner, t.name, err)
		}
		for _, is := range page {
			if is.IsPullRequest() || !t.ours(is.GetUser()) || !hosttext.IsDriftIssue(is.GetBody()) {
				continue
			}
			out = append(out, hosttext.Issue{Number: int64(is.GetNumber()), Title: is.GetTitle(), Body: is.GetBody(),
				Open: is.GetState() == "open", URL: is.GetHTMLURL()})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

func (t issues) ours(u *gh.User) bool {
	if t.login != "" {
		return u.GetLogin() == t.login
	}
	return t.c.ours(u)
}

// Apply creates or edits one issue.
func (t issues) Apply(ctx context.Context, op hosttext.IssueOp) (hosttext.Issue, error) {
	req := &gh.IssueRequest{}
	if op.Title != "" {
		req.Title = gh.String(op.Title)
	}
	if op.Body != "" {
		req.Body = gh.String(op.Body)
	}
	var (
		is  *gh.Issue
		err error
	)
	if op.Create {
		is, _, err = t.in.api.Issues.Create(ctx, t.owner, t.name, req)
		if err != nil {
			return hosttext.Issue{}, fmt.Errorf("creating an issue in %s/%s: %w", t.owner, t.name, err)
		}
	} else {
		if op.State != "" {
			req.State = gh.String(op.State)
			if op.State == hosttext.IssueClosed {
				req.StateReason = gh.String("completed")
			}
		}
		is, _, err = t.in.api.Issues.Edit(ctx, t.owner, t.name, int(op.Number), req)
		if err != nil {
			return hosttext.Issue{}, fmt.Errorf("editing issue #%d of %s/%s: %w", op.Number, t.owner, t.name, err)
		}
	}
	return hosttext.Issue{Number: int64(is.GetNumber()), Title: is.GetTitle(), Body: is.GetBody(),
		Open: is.GetState() == "open", URL: is.GetHTMLURL()}, nil
}

// botLogin is the App's bot user, "<slug>[bot]": Options.BotLogin when set,
// else learned once from GET /app (authenticated as the App). A token client
// without BotLogin has none.
func (c *Client) botLogin(ctx context.Context) (string, error) {
	if c.opts.BotLogin != "" || c.apps == nil {
		return c.opts.BotLogin, nil
	}
	c.mu.Lock()
	login := c.login
	c.mu.Unlock()
	if login != "" {
		return login, nil
	}
	api := gh.NewClient(&http.Client{Transport: c.apps, Timeout: c.timeout})
	api.BaseURL = c.apiURL
	app, _, err := api.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("reading the App's slug: %w", err)
	}
	if app.GetSlug() == "" {
		return "", fmt.Errorf("reading the App's slug: GET /app returned none")
	}
	login = app.GetSlug() + "[bot]"
	c.mu.Lock()
	c.login = login
	c.mu.Unlock()
	return login, nil
}
