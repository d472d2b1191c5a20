package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v60/github"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
)

// SetStatus reports s on pr's head commit as the check run named CheckName.
// StateInProgress reuses a not-yet-completed run of ours for the SHA (found by
// listing check runs with check_name) or creates one; final states complete that run
// with conclusion success, neutral (also for StateSuperseded) or failure (StateError is a failure whose title is
// the reason), or create a completed run when none is pending. Title, summary and
// text are each truncated to GitHub's 65,535 characters with a note.
func (c *Client) SetStatus(ctx context.Context, pr bot.PR, s bot.Status) error {
	owner, name, err := split(pr.Repo)
	if err != nil {
		return fmt.Errorf("setting check run: %w", err)
	}
	if pr.HeadSHA == "" {
		return fmt.Errorf("setting check run on %s#%d: head SHA is empty; resolve the pull request first", pr.Repo, pr.Number)
	}
	in, err := c.install(pr.InstallationID)
	if err != nil {
		return fmt.Errorf("setting check run on %s#%d: %w", pr.Repo, pr.Number, err)
	}
	status, conclusion, err := checkState(s.State)
	if err != nil {
		return fmt.Errorf("setting check run on %s#%d: %w", pr.Repo, pr.Number, err)
	}
	out := checkOutput(s)
	var detailsURL *string
	if s.DetailsURL != "" {
		detailsURL = gh.String(s.DetailsURL)
	}
	var started *gh.Timestamp
	if !s.StartedAt.IsZero() {
		started = &gh.Timestamp{Time: s.StartedAt}
	}
	pending, err := c.pendingRun(ctx, in, owner, name, pr.HeadSHA)
	if err != nil {
		return fmt.Errorf("finding check run %s on %s@%s: %w", c.opts.CheckName, pr.Repo, short(pr.HeadSHA), err)
	}
	var completed *gh.Timestamp
	if status == "completed" {
		completed = &gh.Timestamp{Time: c.opts.Now()}
	}
	if pending == 0 {
		_, _, err = in.api.Checks.CreateCheckRun(ctx, owner, name, gh.CreateCheckRunOptions{
			Name:        c.opts.CheckName,
			HeadSHA:     pr.HeadSHA,
			DetailsURL:  detailsURL,
			Status:      gh.String(status),
			Conclusion:  conclusion,
			StartedAt:   started,
			CompletedAt: completed,
			Output:      out,
		})
		if err != nil {
			return fmt.Errorf("creating check run %s on %s@%s: %w", c.opts.CheckName, pr.Repo, short(pr.HeadSHA), err)
		}
		return nil
	}
	_, _, err = in.api.Checks.UpdateCheckRun(ctx, owner, name, pending, gh.UpdateCheckRunOptions{
		Name:        c.opts.CheckName,
		DetailsURL:  detailsURL,
		Status:      gh.String(status),
		Conclusion:  conclusion,
		CompletedAt: completed,
		Output:      out,
	})
	if err != nil {
		return fmt.Errorf("updating check run %d on %s@%s: %w", pending, pr.Repo, short(pr.HeadSHA), err)
	}
	return nil
}

// pendingRun returns the ID of our newest check run for sha that is not completed,
// or 0. A completed run is never reopened: a re-run gets a fresh one.
func (c *Client) pendingRun(ctx context.Context, in *installation, owner, name, sha string) (int64, error) {
	opts := &gh.ListCheckRunsOptions{
		CheckName:   gh.String(c.opts.CheckName),
		Filter:      gh.String("latest"),
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	if c.opts.AppID > 0 {
		// A Token client does not know its App (GitHub Actions'); the name decides.
		opts.AppID = gh.Int64(c.opts.AppID)
	}
	res, _, err := in.api.Checks.ListCheckRunsForRef(ctx, owner, name, sha, opts)
	if err != nil {
		return 0, err
	}
	var best *gh.CheckRun
	for _, r := range res.CheckRuns {
		if r.GetStatus() == "completed" || r.GetName() != c.opts.CheckName {
			continue
		}
		if best == nil || r.GetID() > best.GetID() {
			best = r
		}
	}
	return best.GetID(), nil
}

// checkState maps a bot state to a check run status and conclusion.
func checkState(s bot.State) (string, *string, error) {
	switch s {
	case bot.StateInProgress:
		return "in_progress", nil, nil
	case bot.StateSuccess:
		return "completed", gh.String("success"), nil
	case bot.StateNeutral, bot.StateSuperseded:
		return "completed", gh.String("neutral"), nil
	case bot.StateFailure, bot.StateError:
		return "completed", gh.String("failure"), nil
	}
	return "", nil, fmt.Errorf("unknown status state %q", s)
}

// checkOutput builds the output GitHub shows; title and summary are required by the
// API, so they fall back to a description of the state.
func checkOutput(s bot.Status) *gh.CheckRunOutput {
	title := s.Title
	if title == "" {
		switch s.State {
		case bot.StateInProgress:
			title = "Rendering and diffing base and head"
		case bot.StateError:
			title = "driftpreview failed with an internal error"
		default:
			title = "driftpreview: " + string(s.State)
		}
	}
	summary := s.Summary
	if summary == "" {
		summary = title
	}
	out := &gh.CheckRunOutput{
		// The title is plain text; what a PR wrote into it (an error naming
		// its file) must not mention or reference anyone.
		Title:   gh.String(hosttext.TruncateLine(mdtext.Line(title), maxCheckOutput)),
		Summary: gh.String(hosttext.Truncate(summary, maxCheckOutput)),
	}
	if s.Text != "" {
		out.Text = gh.String(hosttext.Truncate(s.Text, maxCheckOutput))
	}
	return out
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
