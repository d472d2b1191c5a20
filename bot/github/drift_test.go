package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
)

func TestParsePush(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	for _, tc := range []struct {
		file string
		kind bot.EventKind
	}{
		{"push.main.json", bot.EventDrift},
		{"push.branch.json", bot.EventIgnore},
	} {
		body := fixture(t, tc.file)
		ev, err := c.ParseWebhook(githubtest.WebhookHeader("push", "d-push", secret, body), body)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if ev.Kind != tc.kind {
			t.Fatalf("%s: kind %q (%s), want %q", tc.file, ev.Kind, ev.Reason, tc.kind)
		}
		if tc.kind == bot.EventDrift {
			want := bot.PR{Host: "github", Repo: "acme/gitops", BaseRef: "main", HeadSHA: "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432",
				InstallationID: 4242, URL: "https://github.com/acme/gitops"}
			if ev.PR != want || ev.DeliveryID != "d-push" || ev.Actor != "octocat" {
				t.Fatalf("%s: event %+v, want PR %+v", tc.file, ev, want)
			}
		}
	}
	// A branch deletion is not a drift run.
	var p map[string]any
	_ = json.Unmarshal(fixture(t, "push.main.json"), &p)
	p["deleted"], p["after"] = true, "0000000000000000000000000000000000000000"
	body, _ := json.Marshal(p)
	if ev, err := c.ParseWebhook(githubtest.WebhookHeader("push", "d-del", secret, body), body); err != nil || ev.Kind != bot.EventIgnore {
		t.Fatalf("deletion: %+v %v", ev, err)
	}
}

func driftRepo() bot.PR {
	return bot.PR{Host: "github", Repo: repo, BaseRef: "main", InstallationID: 4242, URL: "https://github.com/" + repo}
}

func TestUpsertDriftIssueLifecycle(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	// A human quoting the marker, and a human's issue, are never touched.
	srv.AddIssue(repo, "octocat", "User", "copied", hosttext.DriftMarker+"\nI copied the bot's issue")
	srv.AddIssue(repo, "octocat", "User", "bug", "unrelated")
	title := "driftpreview: live drift on main"
	steps := []struct {
		name       string
		want       bot.DriftIssue
		wantWrites []string
		wantState  string
		wantBody   string
		wantRef    bot.IssueRef
	}{
		{name: "in sync without an issue creates none", want: bot.DriftIssue{Title: title, Body: "no drift"}},
		{name: "drift creates the issue", want: bot.DriftIssue{Title: title, Body: "2 objects drift", Drift: true},
			wantWrites: []string{"POST /repos/acme/gitops/issues"}, wantState: "open", wantBody: "2 objects drift",
			wantRef: bot.IssueRef{Number: 3, URL: "https://github.com/acme/gitops/issues/3", Open: true, Created: true}},
		{name: "same drift writes nothing", want: bot.DriftIssue{Title: title, Body: "2 objects drift", Drift: true},
			wantState: "open", wantBody: "2 objects drift", wantRef: bot.IssueRef{Number: 3, URL: "https://github.com/acme/gitops/issues/3", Open: true}},
		{name: "new drift edits in place", want: bot.DriftIssue{Title: title, Body: "3 objects drift", Drift: true},
			wantWrites: []string{"PATCH /repos/acme/gitops/issues/3"}, wantState: "open", wantBody: "3 objects drift",
			wantRef: bot.IssueRef{Number: 3, URL: "https://github.com/acme/gitops/issues/3", Open: true}},
		{name: "in sync closes it", want: bot.DriftIssue{Title: title, Body: "no drift since 10:42"},
			wantWrites: []string{"PATCH /repos/acme/gitops/issues/3"}, wantState: "closed", wantBody: "no drift since 10:42",
			wantRef: bot.IssueRef{Number: 3, URL: "https://github.com/acme/gitops/issues/3"}},
		{name: "drift again reopens it", want: bot.DriftIssue{Title: title, Body: "1 object drifts", Drift: true},
			wantWrites: []string{"PATCH /repos/acme/gitops/issues/3"}, wantState: "open", wantBody: "1 object drifts",
			wantRef: bot.IssueRef{Number: 3, URL: "https://github.com/acme/gitops/issues/3", Open: true}},
	}
	for _, st := range steps {
		srv.ResetCalls()
		ref, err := c.UpsertDriftIssue(ctx, driftRepo(), st.want)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if ref != st.wantRef {
			t.Errorf("%s: ref %+v, want %+v", st.name, ref, st.wantRef)
		}
		if got := writes(srv.Calls()); strings.Join(got, "\n") != strings.Join(st.wantWrites, "\n") {
			t.Errorf("%s: writes %q, want %q", st.name, got, st.wantWrites)
		}
		var ours []githubtest.Issue
		for _, is := range srv.Issues(repo) {
			if is.User == srv.BotLogin {
				ours = append(ours, is)
			}
		}
		if st.wantState == "" {
			if len(ours) != 0 {
				t.Fatalf("%s: issues %+v, want none", st.name, ours)
			}
			continue
		}
		if len(ours) != 1 || ours[0].State != st.wantState || ours[0].Title != title ||
			ours[0].Body != hosttext.DriftMarker+"\n"+st.wantBody {
			t.Fatalf("%s: issues %+v, want one %s with body %q", st.name, ours, st.wantState, st.wantBody)
		}
		if st.wantState == "closed" && ours[0].StateReason != "completed" {
			t.Errorf("%s: state_reason %q", st.name, ours[0].StateReason)
		}
	}
	// The listing asks for the App's own issues, open and closed, oldest first,
	// with the installation token; the App's login comes from GET /app once.
	srv.ResetCalls()
	if _, err := c.UpsertDriftIssue(ctx, driftRepo(), bot.DriftIssue{Title: title, Body: "1 object drifts", Drift: true}); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Method != http.MethodGet || calls[0].Path != "/repos/acme/gitops/issues" {
		t.Fatalf("calls %+v, want one listing (the login and token are cached)", calls)
	}
	if q := calls[0].Query; !strings.Contains(q, "creator=driftpreview%5Bbot%5D") || !strings.Contains(q, "state=all") ||
		!strings.Contains(q, "direction=asc") || !strings.Contains(q, "sort=created") {
		t.Errorf("listing query %q", q)
	}
	if !strings.HasPrefix(calls[0].Header.Get("Authorization"), "token ghs_") {
		t.Errorf("listing sent Authorization %q, want the installation token", calls[0].Header.Get("Authorization"))
	}
}

// Two replicas that run at once both find no issue and both create one: the
// pass after the create closes the newer, so exactly one stays open.
func TestUpsertDriftIssueConcurrentCreate(t *testing.T) {
	srv := githubtest.New(t)
	a, _ := newClient(t, srv)
	b, _ := newClient(t, srv) // another replica: no shared lock
	ctx := context.Background()
	want := bot.DriftIssue{Title: "driftpreview: live drift on main", Body: "drift", Drift: true}
	var started atomic.Bool
	var bErr error
	// When a is about to create, b runs entirely: both listed no issue.
	srv.BeforeRequest(func(method, path string) {
		if method == http.MethodPost && path == "/repos/acme/gitops/issues" {
			if started.CompareAndSwap(false, true) {
				_, bErr = b.UpsertDriftIssue(ctx, driftRepo(), want)
			}
		}
	})
	ref, err := a.UpsertDriftIssue(ctx, driftRepo(), want)
	if err != nil || bErr != nil {
		t.Fatal(err, bErr)
	}
	is := srv.Issues(repo)
	if len(is) != 2 || is[0].State != "open" || is[1].State != "closed" {
		t.Fatalf("issues %+v, want #1 open and #2 closed", is)
	}
	if ref.Number != 1 || !ref.Open || ref.Created {
		t.Fatalf("a kept %+v, want #1 (b's) open", ref)
	}
	// And a same-process concurrent run never creates a second: calls are
	// serialised per repository.
	srv.BeforeRequest(nil)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := a.UpsertDriftIssue(ctx, driftRepo(), want); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(srv.Issues(repo)); n != 2 {
		t.Fatalf("%d issues after concurrent runs, want still 2", n)
	}
}

func TestUpsertDriftIssueRetries(t *testing.T) {
	srv := githubtest.New(t)
	c, sl := newClient(t, srv)
	srv.FailNext(http.MethodPost, "/repos/acme/gitops/issues", 1, http.StatusBadGateway, nil)
	ref, err := c.UpsertDriftIssue(context.Background(), driftRepo(), bot.DriftIssue{Title: "t", Body: "drift", Drift: true})
	if err != nil || !ref.Created {
		t.Fatalf("%+v %v", ref, err)
	}
	if len(sl.Got()) != 1 || len(srv.Issues(repo)) != 1 {
		t.Fatalf("sleeps %v, issues %+v: want one retry and one issue", sl.Got(), srv.Issues(repo))
	}
}
