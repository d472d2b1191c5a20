package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
)

// SetStatus reports s on pr's head commit as the commit status named StatusName:
// in_progress → running, success → success, failure and error → failed,
// superseded → canceled. GitLab has
// no neutral state, so neutral is posted as success with a description starting
// "neutral: ", keeping required pipelines green as GitHub's neutral does. An error
// is described "error: <reason>". The description (the title) is cut to 255
// characters; DetailsURL becomes target_url.
func (c *Client) SetStatus(ctx context.Context, pr bot.PR, s bot.Status) error {
	if pr.HeadSHA == "" {
		return fmt.Errorf("setting commit status on %s!%d: head SHA is empty; resolve the merge request first", pr.Repo, pr.Number)
	}
	state, prefix, err := statusState(s.State)
	if err != nil {
		return fmt.Errorf("setting commit status on %s!%d: %w", pr.Repo, pr.Number, err)
	}
	desc := s.Title
	if desc == "" {
		desc = defaultDescription(s.State)
	}
	opts := &gl.SetCommitStatusOptions{
		State:       state,
		Name:        gl.Ptr(c.opts.StatusName),
		Description: gl.Ptr(hosttext.TruncateLine(mdtext.Line(prefix+desc), maxDescription)),
	}
	if s.DetailsURL != "" {
		opts.TargetURL = gl.Ptr(s.DetailsURL)
	}
	_, resp, err := c.api.Commits.SetCommitStatus(pid(pr), pr.HeadSHA, opts, gl.WithContext(ctx))
	if err != nil {
		// GitLab refuses a transition to the state a status is already in (e.g. a
		// retried "running"); the status is then already what we want.
		var er *gl.ErrorResponse
		if resp != nil && resp.StatusCode == http.StatusBadRequest && errors.As(err, &er) &&
			strings.Contains(er.Message, "Cannot transition status") {
			return nil
		}
		return fmt.Errorf("setting commit status %s on %s@%.7s: %w", c.opts.StatusName, pr.Repo, pr.HeadSHA, err)
	}
	return nil
}

func statusState(s bot.State) (gl.BuildStateValue, string, error) {
	switch s {
	case bot.StateInProgress:
		return gl.Running, "", nil
	case bot.StateSuccess:
		return gl.Success, "", nil
	case bot.StateNeutral:
		// GitLab's commit statuses have no neutral (pending, running, success,
		// failed, canceled, and skipped only since GitLab 17.5). failed would block
		// the merge for something the PR did not cause, and skipped is refused by
		// older instances and blocks "Pipelines must succeed" unless skipped
		// pipelines count as successful. So: success, with a description that
		// starts "neutral:" and says why (e.g. "neutral: Nothing compared: …").
		return gl.Success, "neutral: ", nil
	case bot.StateSuperseded:
		// A newer commit's pipeline reports on the merge request; this commit's
		// status says it was left for it, as GitLab shows a superseded pipeline.
		return gl.Canceled, "", nil
	case bot.StateFailure:
		return gl.Failed, "", nil
	case bot.StateError:
		return gl.Failed, "error: ", nil
	}
	return "", "", fmt.Errorf("unknown status state %q", s)
}

func defaultDescription(s bot.State) string {
	switch s {
	case bot.StateInProgress:
		return "rendering and diffing base and head"
	case bot.StateError:
		return "internal error"
	}
	return "driftpreview " + string(s)
}
