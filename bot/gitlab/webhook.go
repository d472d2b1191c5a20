package gitlab

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

// RerunCommand is the first line of a note that asks for a re-run.
const RerunCommand = "/driftpreview rerun"

// ParseWebhook checks X-Gitlab-Token against the webhook secret in constant time
// (both are hashed first, so not even the length leaks) and translates the delivery
// into a bot.Event. A missing or wrong token gives an error wrapping
// bot.ErrUnauthorized. The delivery ID is Idempotency-Key, else X-Gitlab-Event-UUID,
// else X-Gitlab-Webhook-UUID. Hooks give the head SHA but no base SHA: the server
// fills it with ResolvePR.
func (c *Client) ParseWebhook(h http.Header, body []byte) (bot.Event, error) {
	if err := c.verify(h); err != nil {
		return bot.Event{}, err
	}
	ev := bot.Event{DeliveryID: firstOf(h, "Idempotency-Key", "X-Gitlab-Event-UUID", "X-Gitlab-Webhook-UUID")}
	switch kind := h.Get("X-Gitlab-Event"); kind {
	case "Merge Request Hook":
		var p mergeRequestHook
		if err := json.Unmarshal(body, &p); err != nil {
			return ev, fmt.Errorf("decoding gitlab %s payload: %w", kind, err)
		}
		return p.event(ev)
	case "Note Hook":
		var p noteHook
		if err := json.Unmarshal(body, &p); err != nil {
			return ev, fmt.Errorf("decoding gitlab %s payload: %w", kind, err)
		}
		return p.event(ev)
	case "Push Hook":
		return decodePush(kind, body, ev)
	case "":
		ev.Kind, ev.Reason = bot.EventIgnore, "no X-Gitlab-Event header"
	default:
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("event %q is not handled", kind)
	}
	return ev, nil
}

// VerifyWebhook checks X-Gitlab-Token before the body is read: GitLab's token is a
// header, so an unauthenticated body is never read at all. The returned writer and
// check are no-ops.
func (c *Client) VerifyWebhook(h http.Header) (io.Writer, func() error, error) {
	if err := c.verify(h); err != nil {
		return nil, nil, err
	}
	return io.Discard, func() error { return nil }, nil
}

func (c *Client) verify(h http.Header) error {
	tok := h.Get("X-Gitlab-Token")
	if tok == "" {
		return fmt.Errorf("verifying gitlab webhook: no X-Gitlab-Token header: %w", bot.ErrUnauthorized)
	}
	got, want := sha256.Sum256([]byte(tok)), sha256.Sum256(c.opts.WebhookSecret)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return fmt.Errorf("verifying gitlab webhook: X-Gitlab-Token does not match the secret: %w", bot.ErrUnauthorized)
	}
	return nil
}

func firstOf(h http.Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// The hook payloads, trimmed to the fields the bot reads. Own structs rather than
// the client library's keep parsing robust against fields GitLab adds or retypes.
type hookUser struct {
	Username string `json:"username"`
}

type hookProject struct {
	ID                int64  `json:"id"`
	PathWithNamespace string `json:"path_with_namespace"`
}

type hookMR struct {
	IID             int                 `json:"iid"`
	TargetBranch    string              `json:"target_branch"`
	SourceBranch    string              `json:"source_branch"`
	SourceProjectID int64               `json:"source_project_id"`
	TargetProjectID int64               `json:"target_project_id"`
	Source          *hookProject        `json:"source"`
	Target          *hookProject        `json:"target"`
	LastCommit      struct{ ID string } `json:"last_commit"`
	URL             string              `json:"url"`
	Action          string              `json:"action"`
	OldRev          string              `json:"oldrev"`
}

type mergeRequestHook struct {
	User             hookUser                   `json:"user"`
	Project          hookProject                `json:"project"`
	ObjectAttributes hookMR                     `json:"object_attributes"`
	Changes          map[string]json.RawMessage `json:"changes"`
}

type noteHook struct {
	User             hookUser    `json:"user"`
	Project          hookProject `json:"project"`
	ObjectAttributes struct {
		Note         string `json:"note"`
		NoteableType string `json:"noteable_type"`
		Action       string `json:"action"`
		System       bool   `json:"system"`
	} `json:"object_attributes"`
	MergeRequest *hookMR `json:"merge_request"`
}

// pr translates the merge request of a hook whose project is project.
func (m *hookMR) pr(project hookProject) bot.PR {
	pr := bot.PR{
		Host:      "gitlab",
		Repo:      project.PathWithNamespace,
		Number:    m.IID,
		ProjectID: m.TargetProjectID,
		BaseRef:   m.TargetBranch,
		HeadRef:   m.SourceBranch,
		HeadSHA:   m.LastCommit.ID,
		URL:       m.URL,
	}
	if pr.ProjectID == 0 {
		pr.ProjectID = project.ID
	}
	if m.Target != nil && m.Target.PathWithNamespace != "" {
		pr.Repo = m.Target.PathWithNamespace
	}
	if m.SourceProjectID != 0 && m.SourceProjectID != m.TargetProjectID {
		pr.Fork = true
		if m.Source != nil {
			pr.HeadRepo = m.Source.PathWithNamespace
		}
	}
	return pr
}

func (p *mergeRequestHook) event(ev bot.Event) (bot.Event, error) {
	ev.Actor = p.User.Username
	a := p.ObjectAttributes
	switch a.Action {
	// Draft MRs run too, as on GitHub: a preview helps most while a change is shaped.
	case "open", "reopen":
		ev.Kind = bot.EventRun
	case "update":
		_, retargeted := p.Changes["target_branch"]
		if a.OldRev == "" && !retargeted {
			ev.Kind, ev.Reason = bot.EventIgnore, "merge request update without new commits or a new target branch"
			return ev, nil
		}
		ev.Kind = bot.EventRun
	case "close", "merge":
		ev.Kind = bot.EventClose
	default:
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("merge request action %q is not handled", a.Action)
		return ev, nil
	}
	ev.PR = a.pr(p.Project)
	if ev.PR.Number <= 0 || ev.PR.Repo == "" {
		return ev, fmt.Errorf("decoding gitlab merge request hook: object_attributes.iid or project.path_with_namespace is missing")
	}
	return ev, nil
}

func (p *noteHook) event(ev bot.Event) (bot.Event, error) {
	ev.Actor = p.User.Username
	a := p.ObjectAttributes
	switch {
	case a.NoteableType != "MergeRequest":
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("note on a %s, not a merge request", a.NoteableType)
		return ev, nil
	case a.Action != "" && a.Action != "create":
		ev.Kind, ev.Reason = bot.EventIgnore, fmt.Sprintf("note action %q is not handled", a.Action)
		return ev, nil
	case a.System || hosttext.FirstLine(a.Note) != RerunCommand:
		ev.Kind, ev.Reason = bot.EventIgnore, "note is not a driftpreview command"
		return ev, nil
	case p.MergeRequest == nil:
		return ev, fmt.Errorf("decoding gitlab note hook: merge_request is missing")
	}
	ev.Kind = bot.EventRerun
	ev.PR = p.MergeRequest.pr(p.Project)
	if ev.PR.Number <= 0 || ev.PR.Repo == "" {
		return ev, fmt.Errorf("decoding gitlab note hook: merge_request.iid or project.path_with_namespace is missing")
	}
	return ev, nil
}
