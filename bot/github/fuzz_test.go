package github_test

import (
	"errors"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// FuzzParseWebhook feeds validly signed deliveries to ParseWebhook: whatever the
// body, it returns an event or an error, never panics, and an event it acts on
// names a pull request. The seed corpus is every recorded payload in
// fixtures/webhooks/github plus the payloads that once panicked; `make test` runs
// it, `go test -fuzz FuzzParseWebhook ./bot/github` explores further.
func FuzzParseWebhook(f *testing.F) {
	hostfake.RecordedPayloads(f, "github", func(name string) string { return name })
	for _, seed := range []struct{ event, body string }{
		{"issue_comment", `{"action":"created"}`}, // nil issue: panicked
		{"issue_comment", `{"action":"created","issue":{"pull_request":{}}}`},
		{"issue_comment", `{"action":"created","issue":{"pull_request":{}},"comment":{"body":"/driftpreview rerun"}}`},
		{"pull_request", `{"action":"opened"}`},
		{"pull_request", `{"action":"edited","changes":{"base":{}}}`},
		{"pull_request", `{"action":"opened","pull_request":{"head":{"repo":null},"base":null}}`},
		{"pull_request", `null`},
		{"issue_comment", `[]`},
		{"pull_request", ``},
	} {
		f.Add(seed.event, []byte(seed.body))
	}
	c, err := github.New(github.Options{AppID: 1, PrivateKey: fuzzKey(f), WebhookSecret: secret})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := c.ParseWebhook(githubtest.WebhookHeader(event, "d-fuzz", secret, body), body)
		if err != nil {
			if errors.Is(err, bot.ErrUnauthorized) {
				t.Fatalf("a validly signed delivery was refused as unauthorized: %v", err)
			}
			return
		}
		switch ev.Kind {
		case bot.EventRun, bot.EventRerun, bot.EventClose:
			if ev.PR.Host != "github" || ev.PR.InstallationID == 0 {
				t.Fatalf("event %s without host or installation: %+v", ev.Kind, ev.PR)
			}
		case bot.EventDrift:
			if ev.PR.Host != "github" || ev.PR.InstallationID == 0 || ev.PR.BaseRef == "" || ev.PR.Number != 0 {
				t.Fatalf("drift event without host, installation or branch: %+v", ev.PR)
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

func fuzzKey(f *testing.F) []byte {
	f.Helper()
	_, pemBytes, err := githubtest.GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	return pemBytes
}
