package gitlab_test

import (
	"errors"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// FuzzParseWebhook feeds authenticated deliveries to ParseWebhook: whatever the
// body, it returns an event or an error, never panics, and an event it acts on
// names a merge request. The seed corpus is every recorded payload in
// fixtures/webhooks/gitlab plus hand-made edge cases; `make test` runs it, `go test
// -fuzz FuzzParseWebhook ./bot/gitlab` explores further.
func FuzzParseWebhook(f *testing.F) {
	events := map[string]string{"merge_request": "Merge Request Hook", "note": "Note Hook", "push": "Push Hook"}
	hostfake.RecordedPayloads(f, "gitlab", func(name string) string { return events[name] })
	for _, seed := range []struct{ event, body string }{
		{"Note Hook", `{"object_attributes":{"noteable_type":"MergeRequest","note":"/driftpreview rerun"}}`},
		{"Note Hook", `{"object_attributes":{"noteable_type":"MergeRequest","note":"/driftpreview rerun"},"merge_request":{}}`},
		{"Merge Request Hook", `{"object_attributes":{"action":"open"}}`},
		{"Merge Request Hook", `{"object_attributes":{"action":"update","iid":1,"source_project_id":2,"target_project_id":3,"source":null},"project":{"path_with_namespace":"a/b"}}`},
		{"Merge Request Hook", `null`},
		{"Note Hook", `[]`},
		{"Merge Request Hook", ``},
	} {
		f.Add(seed.event, []byte(seed.body))
	}
	opts := gitlab.DefaultOptions()
	opts.URL = "https://gitlab.example.com"
	opts.Token = "glpat-fuzz"
	opts.WebhookSecret = secret
	c, err := gitlab.New(opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := c.ParseWebhook(gitlabtest.WebhookHeader(event, "uuid-fuzz", string(secret)), body)
		if err != nil {
			if errors.Is(err, bot.ErrUnauthorized) {
				t.Fatalf("an authenticated delivery was refused as unauthorized: %v", err)
			}
			return
		}
		switch ev.Kind {
		case bot.EventRun, bot.EventRerun, bot.EventClose:
			if ev.PR.Host != "gitlab" || ev.PR.Repo == "" || ev.PR.Number <= 0 {
				t.Fatalf("event %s without host, project or merge request: %+v", ev.Kind, ev.PR)
			}
		case bot.EventDrift:
			if ev.PR.Host != "gitlab" || ev.PR.Repo == "" || ev.PR.BaseRef == "" || ev.PR.Number != 0 {
				t.Fatalf("drift event without host, project or branch: %+v", ev.PR)
			}
		case bot.EventIgnore:
			if ev.Reason == "" {
				t.Fatalf("ignored event without a reason")
			}
		default:
			t.Fatalf("unknown event kind %q", ev.Kind)
		}
	})
}
