package gitlab_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

func TestParsePushHook(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	body := fixture(t, "push.main.json")
	ev, err := c.ParseWebhook(gitlabtest.WebhookHeader("Push Hook", "uuid-push", string(secret)), body)
	if err != nil {
		t.Fatal(err)
	}
	want := bot.PR{Host: "gitlab", Repo: path, ProjectID: project, BaseRef: "main",
		HeadSHA: "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432", URL: "https://gitlab.example.com/acme/platform/gitops"}
	if ev.Kind != bot.EventDrift || ev.PR != want || ev.DeliveryID != "uuid-push" || ev.Actor != "ada" {
		t.Fatalf("event %+v, want drift of %+v", ev, want)
	}
	for name, mod := range map[string]func(p map[string]any){
		"another branch": func(p map[string]any) { p["ref"] = "refs/heads/feature/x" },
		"a deletion":     func(p map[string]any) { p["after"] = "0000000000000000000000000000000000000000" },
		"a tag":          func(p map[string]any) { p["ref"] = "refs/tags/main" },
	} {
		var p map[string]any
		_ = json.Unmarshal(body, &p)
		mod(p)
		b, _ := json.Marshal(p)
		ev, err := c.ParseWebhook(gitlabtest.WebhookHeader("Push Hook", "uuid-x", string(secret)), b)
		if err != nil || ev.Kind != bot.EventIgnore || ev.Reason == "" {
			t.Errorf("%s: %+v %v, want ignored with a reason", name, ev, err)
		}
	}
}

func driftProject() bot.PR {
	return bot.PR{Host: "gitlab", Repo: path, ProjectID: project, BaseRef: "main"}
}

func TestUpsertDriftIssueLifecycle(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	srv.AddIssue(project, 7, "copied", hosttext.DriftMarker+"\nI copied the bot's issue")
	title := "driftpreview: live drift on main"
	const issuePath = "/api/v4/projects/42/issues"
	steps := []struct {
		name       string
		want       bot.DriftIssue
		wantWrites []string
		wantState  string
		wantBody   string
	}{
		{name: "in sync without an issue creates none", want: bot.DriftIssue{Title: title, Body: "no drift"}},
		{name: "drift creates the issue", want: bot.DriftIssue{Title: title, Body: "2 objects drift", Drift: true},
			wantWrites: []string{"POST " + issuePath}, wantState: "opened", wantBody: "2 objects drift"},
		{name: "same drift writes nothing", want: bot.DriftIssue{Title: title, Body: "2 objects drift", Drift: true},
			wantState: "opened", wantBody: "2 objects drift"},
		{name: "new drift edits in place", want: bot.DriftIssue{Title: title, Body: "3 objects drift", Drift: true},
			wantWrites: []string{"PUT " + issuePath + "/2"}, wantState: "opened", wantBody: "3 objects drift"},
		{name: "in sync closes it", want: bot.DriftIssue{Title: title, Body: "no drift since 10:42"},
			wantWrites: []string{"PUT " + issuePath + "/2"}, wantState: "closed", wantBody: "no drift since 10:42"},
		{name: "drift again reopens it", want: bot.DriftIssue{Title: title, Body: "1 object drifts", Drift: true},
			wantWrites: []string{"PUT " + issuePath + "/2"}, wantState: "opened", wantBody: "1 object drifts"},
	}
	for _, st := range steps {
		srv.ResetCalls()
		ref, err := c.UpsertDriftIssue(ctx, driftProject(), st.want)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := writes(srv.Calls()); strings.Join(got, "\n") != strings.Join(st.wantWrites, "\n") {
			t.Errorf("%s: writes %q, want %q", st.name, got, st.wantWrites)
		}
		var ours []gitlabtest.Issue
		for _, is := range srv.Issues(project) {
			if is.AuthorID == srv.BotID {
				ours = append(ours, is)
			}
		}
		if st.wantState == "" {
			if len(ours) != 0 || ref.Number != 0 {
				t.Fatalf("%s: issues %+v ref %+v, want none", st.name, ours, ref)
			}
			continue
		}
		if len(ours) != 1 || ours[0].State != st.wantState || ours[0].Title != title ||
			ours[0].Description != hosttext.DriftMarker+"\n"+st.wantBody {
			t.Fatalf("%s: issues %+v, want one %s with body %q", st.name, ours, st.wantState, st.wantBody)
		}
		if ref.Number != 2 || ref.Open != (st.wantState == "opened") {
			t.Errorf("%s: ref %+v", st.name, ref)
		}
	}
	// The state changes travel as state_event, the listing asks for the token
	// user's issues oldest first, with the token.
	srv.ResetCalls()
	if _, err := c.UpsertDriftIssue(ctx, driftProject(), bot.DriftIssue{Title: title, Body: "gone"}); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 2 || calls[0].Method != http.MethodGet || calls[1].Method != http.MethodPut {
		t.Fatalf("calls %+v, want a listing and one PUT", calls)
	}
	if q := calls[0].Query; !strings.Contains(q, "author_id=99") || !strings.Contains(q, "sort=asc") || !strings.Contains(q, "order_by=created_at") {
		t.Errorf("listing query %q", q)
	}
	var put map[string]any
	if err := json.Unmarshal([]byte(calls[1].Body), &put); err != nil || put["state_event"] != "close" {
		t.Errorf("PUT body %s, want state_event close", calls[1].Body)
	}
	if calls[1].Header.Get("PRIVATE-TOKEN") != srv.Token {
		t.Errorf("PUT without the token")
	}
}

func TestUpsertDriftIssueConcurrentCreate(t *testing.T) {
	srv := gitlabtest.New(t)
	a, _ := newClient(t, srv)
	b, _ := newClient(t, srv)
	ctx := context.Background()
	want := bot.DriftIssue{Title: "driftpreview: live drift on main", Body: "drift", Drift: true}
	var started atomic.Bool
	var bErr error
	srv.BeforeRequest(func(method, p string) {
		if method == http.MethodPost && p == "/api/v4/projects/42/issues" && started.CompareAndSwap(false, true) {
			_, bErr = b.UpsertDriftIssue(ctx, driftProject(), want)
		}
	})
	ref, err := a.UpsertDriftIssue(ctx, driftProject(), want)
	if err != nil || bErr != nil {
		t.Fatal(err, bErr)
	}
	is := srv.Issues(project)
	if len(is) != 2 || is[0].State != "opened" || is[1].State != "closed" {
		t.Fatalf("issues %+v, want #1 open and #2 closed", is)
	}
	if ref.Number != 1 || !ref.Open {
		t.Fatalf("a kept %+v, want #1 open", ref)
	}
	srv.BeforeRequest(nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := a.UpsertDriftIssue(ctx, driftProject(), want); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(srv.Issues(project)); n != 2 {
		t.Fatalf("%d issues after concurrent runs, want still 2", n)
	}
}

func TestUpsertDriftIssueRetries(t *testing.T) {
	srv := gitlabtest.New(t)
	c, sl := newClient(t, srv)
	srv.FailNext(http.MethodGet, "/api/v4/projects/42/issues", 1, http.StatusTooManyRequests, http.Header{"Retry-After": {"2"}})
	ref, err := c.UpsertDriftIssue(context.Background(), driftProject(), bot.DriftIssue{Title: "t", Body: "drift", Drift: true})
	if err != nil || !ref.Created || ref.Number != 1 {
		t.Fatalf("%+v %v", ref, err)
	}
	if len(sl.Got()) != 1 {
		t.Fatalf("sleeps %v, want one retry", sl.Got())
	}
}
