package github_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
)

// TestTokenClient covers the client `driftpreview comment` uses in GitHub Actions:
// a fixed GITHUB_TOKEN sent as a Bearer token on every call, no App, no
// installation token requests, check runs found by name alone (the token's App is
// GitHub Actions, which the client does not know), no webhooks accepted.
func TestTokenClient(t *testing.T) {
	srv := githubtest.New(t)
	srv.BotLogin = "github-actions[bot]"
	const token = "ghs_actionsTokenForTheTest0123456789"
	srv.AddToken(token, false)
	opts := github.DefaultOptions()
	opts.Token = token
	opts.APIURL = srv.URL()
	opts.BotLogin = "github-actions[bot]"
	c, err := github.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if s := opts.String(); strings.Contains(s, token) {
		t.Errorf("Options.String leaks the token: %s", s)
	}
	ctx := context.Background()
	pr := bot.PR{Host: "github", Repo: repo, Number: 17, BaseSHA: baseSHA, HeadSHA: headSHA}
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateInProgress}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpsertComment(ctx, pr, "", []string{"page one", "page two"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateSuccess, Title: "ok"}); err != nil {
		t.Fatal(err)
	}
	for _, call := range srv.Calls() {
		if got := call.Header.Get("Authorization"); got != "Bearer "+token {
			t.Errorf("%s %s sent Authorization %q, want the Bearer token", call.Method, call.Path, got)
		}
		if strings.Contains(call.Path, "access_tokens") || strings.Contains(call.Query, "app_id") {
			t.Errorf("token client made an App call: %s %s?%s", call.Method, call.Path, call.Query)
		}
	}
	runs := srv.CheckRuns(repo, headSHA)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v, want one completed success (the in-progress run reused)", runs)
	}
	if got := len(srv.Comments(repo, 17)); got != 2 {
		t.Errorf("%d comments, want 2", got)
	}
	// Shrinking to one page deletes the follow-up, as for the App.
	srv.ResetCalls()
	if err := c.UpsertComment(ctx, pr, "", []string{"only page"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"PATCH /repos/acme/gitops/issues/comments/1002", "DELETE /repos/acme/gitops/issues/comments/1003"}, writes(srv.Calls())); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	// A webhook signed with an empty secret (or any guess) never verifies.
	body := fixture(t, "pull_request.opened.json")
	if _, err := c.ParseWebhook(githubtest.WebhookHeader("pull_request", "d1", nil, body), body); !errors.Is(err, bot.ErrUnauthorized) {
		t.Errorf("token client verified a webhook: %v", err)
	}
	if _, err := github.New(github.Options{Token: token, AppID: 1}); err == nil {
		t.Error("New accepted a token and an App ID together")
	}
}

// TestTokenClientReadOnly: a fork PR's GITHUB_TOKEN reads but every write is 403;
// the error says so without the token.
func TestTokenClientReadOnly(t *testing.T) {
	srv := githubtest.New(t)
	const token = "ghs_readOnlyForkToken0123456789"
	srv.AddToken(token, true)
	opts := github.DefaultOptions()
	opts.Token = token
	opts.APIURL = srv.URL()
	c, err := github.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	pr := bot.PR{Host: "github", Repo: repo, Number: 17, BaseSHA: baseSHA, HeadSHA: headSHA}
	err = c.UpsertComment(context.Background(), pr, "", []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "Resource not accessible by integration") {
		t.Fatalf("UpsertComment with a read-only token: %v", err)
	}
	if !github.IsForbidden(err) {
		t.Errorf("IsForbidden(%v) = false", err)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("error leaks the token: %v", err)
	}
	if got := srv.Calls(); got[len(got)-1].Method != http.MethodPost {
		t.Errorf("last call %s, want the refused POST", got[len(got)-1].Method)
	}
}
