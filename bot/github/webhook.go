package github

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v60/github"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// RerunCommand is the first line of a comment that asks for a re-run.
const RerunCommand = "/driftpreview rerun"

// ParseWebhook verifies a delivery's X-Hub-Signature-256 (HMAC-SHA256 of the raw
// body, compared in constant time) and translates it into a bot.Event. A missing or
// wrong signature gives an error wrapping bot.ErrUnauthorized, before the body is
// even decoded. Events the bot does not act on are EventIgnore with a Reason; only
// undecodable payloads of handled events are errors.
func (c *Client) ParseWebhook(h http.Header, body []byte) (bot.Event, error) {
	if err := verify(c.opts.WebhookSecret, h.Get("X-Hub-Signature-256"), body); err != nil {
		return bot.Event{}, err
	}
	kind := h.Get("X-GitHub-Event")
	ev := bot.Event{DeliveryID: h.Get("X-GitHub-Delivery")}
	switch kind {
	case "pull_request":
		var p gh.PullRequestEvent
		if err := decode(kind, body, &p); err != nil {
			return ev, err
		}
		return pullRequestEvent(ev, &p)
	case "issue_comment":
		var p gh.IssueCommentEvent
		if err := decode(kind, body, &p); err != nil {
			return ev, err
		}
		return issueCommentEvent(ev, &p)
	case "push":
		var p gh.PushEvent
		if err := decode(kind, body, &p); err != nil {
			return ev, err
		}
		return pushEvent(ev, &p)
	case "":
		ev.Kind, ev.Reason = bot.EventIgnore, "no X-GitHub-Event header"
	default:
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("event %q is not handled", kind)
	}
	return ev, nil
}

// VerifyWebhook checks the X-Hub-Signature-256 header's form and returns the HMAC the
// body must be written to, and the check comparing it with the header (constant
// time) once the whole body was written. The server streams bodies through it, so
// an unauthenticated body is never held in memory.
func (c *Client) VerifyWebhook(h http.Header) (io.Writer, func() error, error) {
	got, err := signature(h.Get("X-Hub-Signature-256"))
	if err != nil {
		return nil, nil, err
	}
	mac := hmac.New(sha256.New, c.opts.WebhookSecret)
	return mac, func() error {
		if !hmac.Equal(got, mac.Sum(nil)) {
			return fmt.Errorf("verifying github webhook: signature does not match the body: %w", bot.ErrUnauthorized)
		}
		return nil
	}, nil
}

// verify checks a "sha256=<hex>" signature of body in constant time.
func verify(secret []byte, sig string, body []byte) error {
	got, err := signature(sig)
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("verifying github webhook: signature does not match the body: %w", bot.ErrUnauthorized)
	}
	return nil
}

// signature decodes a "sha256=<hex>" header value.
func signature(sig string) ([]byte, error) {
	if sig == "" {
		return nil, fmt.Errorf("verifying github webhook: no X-Hub-Signature-256 header: %w", bot.ErrUnauthorized)
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return nil, fmt.Errorf("verifying github webhook: X-Hub-Signature-256 is not sha256=<hex>: %w", bot.ErrUnauthorized)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return nil, fmt.Errorf("verifying github webhook: X-Hub-Signature-256 is not a hex SHA-256: %w", bot.ErrUnauthorized)
	}
	return got, nil
}

func decode(kind string, body []byte, into any) error {
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("decoding github %s payload: %w", kind, err)
	}
	return nil
}

func pullRequestEvent(ev bot.Event, p *gh.PullRequestEvent) (bot.Event, error) {
	action := p.GetAction()
	ev.Actor = p.GetSender().GetLogin()
	switch action {
	// Draft PRs run too: a preview is most useful while the change is still being
	// shaped, and the comment says nothing a draft reviewer should not see.
	case "opened", "synchronize", "reopened", "ready_for_review":
		ev.Kind = bot.EventRun
	case "edited":
		if p.GetChanges().GetBase() == nil {
			ev.Kind, ev.Reason = bot.EventIgnore, "pull_request edited without a base change"
			return ev, nil
		}
		ev.Kind = bot.EventRun
	case "closed":
		ev.Kind = bot.EventClose
	default:
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("pull_request action %q is not handled", action)
		return ev, nil
	}
	if p.PullRequest == nil {
		return ev, fmt.Errorf("decoding github pull_request %s payload: no pull_request object", action)
	}
	pr := prFrom(p.PullRequest)
	if pr.Repo == "" {
		pr.Repo = p.GetRepo().GetFullName()
	}
	if pr.Number == 0 {
		pr.Number = p.GetNumber()
	}
	if pr.Repo == "" || pr.Number <= 0 {
		return ev, fmt.Errorf("decoding github pull_request %s payload: repository.full_name or number is missing", action)
	}
	pr.InstallationID = p.GetInstallation().GetID()
	if pr.InstallationID == 0 {
		return ev, fmt.Errorf("github pull_request %s for %s#%d has no installation.id: deliver it from the GitHub App, not a repository webhook", action, pr.Repo, pr.Number)
	}
	ev.PR = pr
	return ev, nil
}

func issueCommentEvent(ev bot.Event, p *gh.IssueCommentEvent) (bot.Event, error) {
	ev.Actor = p.GetSender().GetLogin()
	switch {
	case p.GetAction() != "created":
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("issue_comment action %q is not handled", p.GetAction())
		return ev, nil
	case p.Issue == nil:
		// Issue.IsPullRequest has a value receiver: a nil issue would panic.
		return ev, errors.New("decoding github issue_comment created payload: no issue object (GitHub always sends one: is this a real delivery?)")
	case p.Comment == nil:
		return ev, errors.New("decoding github issue_comment created payload: no comment object (GitHub always sends one: is this a real delivery?)")
	case !p.Issue.IsPullRequest():
		ev.Kind, ev.Reason = bot.EventIgnore, "comment on an issue, not a pull request"
		return ev, nil
	case hosttext.FirstLine(p.GetComment().GetBody()) != RerunCommand:
		ev.Kind, ev.Reason = bot.EventIgnore, "comment is not a driftpreview command"
		return ev, nil
	}
	ev.Kind = bot.EventRerun
	// The payload has no SHAs: the server fills them with ResolvePR after checking
	// CanRerun.
	ev.PR = bot.PR{
		Host:           "github",
		Repo:           p.GetRepo().GetFullName(),
		Number:         p.GetIssue().GetNumber(),
		InstallationID: p.GetInstallation().GetID(),
		URL:            p.GetIssue().GetHTMLURL(),
	}
	if ev.PR.Repo == "" || ev.PR.Number <= 0 {
		return ev, errors.New("decoding github issue_comment created payload: repository.full_name or issue.number is missing")
	}
	if ev.PR.InstallationID == 0 {
		return ev, fmt.Errorf("github issue_comment for %s#%d has no installation.id: deliver it from the GitHub App", ev.PR.Repo, ev.PR.Number)
	}
	return ev, nil
}
