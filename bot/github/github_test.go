package github_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

var secret = []byte("It's a Secret to Everybody")

const (
	repo    = "acme/gitops"
	baseSHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
	headSHA = "f0e1d2c3b4a5968778695a4b3c2d1e0f98765432"
	head2   = "0123456789abcdef0123456789abcdef01234567"
)

var now = time.Date(2026, 11, 2, 3, 14, 0, 0, time.UTC)

func newClient(t *testing.T, srv *githubtest.Server) (*github.Client, *hostfake.Sleeps) {
	t.Helper()
	return newClientWith(t, srv, nil)
}

func newClientWith(t *testing.T, srv *githubtest.Server, mod func(*github.Options)) (*github.Client, *hostfake.Sleeps) {
	t.Helper()
	sl := &hostfake.Sleeps{}
	opts := github.DefaultOptions()
	opts.AppID = srv.AppID
	opts.PrivateKey = srv.KeyPEM
	opts.WebhookSecret = secret
	opts.APIURL = srv.URL()
	opts.WebURL = "https://github.example.com"
	opts.Now = func() time.Time { return now }
	opts.Retry.Sleep = sl.Sleep
	opts.Retry.Now = func() time.Time { return now }
	if mod != nil {
		mod(&opts)
	}
	c, err := github.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, sl
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "webhooks", "github", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseWebhookAuthentication(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	body := fixture(t, "pull_request.opened.json")
	tests := []struct {
		name string
		sig  string
		ok   bool
	}{
		{"good signature", githubtest.Sign(secret, body), true},
		{"missing signature", "", false},
		{"signature with another secret", githubtest.Sign([]byte("guess"), body), false},
		{"signature of another body", githubtest.Sign(secret, append(body, ' ')), false},
		{"sha1 prefix", strings.Replace(githubtest.Sign(secret, body), "sha256=", "sha1=", 1), false},
		{"not hex", "sha256=zz", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := githubtest.WebhookHeader("pull_request", "d-1", secret, body)
			h.Set("X-Hub-Signature-256", tt.sig)
			if tt.sig == "" {
				h.Del("X-Hub-Signature-256")
			}
			_, err := c.ParseWebhook(h, body)
			if tt.ok && err != nil {
				t.Fatalf("ParseWebhook: %v", err)
			}
			if !tt.ok && !errors.Is(err, bot.ErrUnauthorized) {
				t.Fatalf("ParseWebhook error = %v, want one wrapping bot.ErrUnauthorized", err)
			}
			if err != nil && strings.Contains(err.Error(), string(secret)) {
				t.Errorf("error leaks the webhook secret: %v", err)
			}
		})
	}
}

func TestParseWebhook(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	pr := bot.PR{
		Host: "github", Repo: repo, Number: 17, InstallationID: 4242,
		BaseRef: "main", BaseSHA: baseSHA, HeadRef: "feature/shop-cache", HeadSHA: headSHA,
		URL: "https://github.com/acme/gitops/pull/17",
	}
	with := func(f func(*bot.PR)) bot.PR { p := pr; f(&p); return p }
	tests := []struct {
		file  string
		event string
		edit  func(string) string // optional payload tweak
		want  bot.Event
	}{
		{file: "pull_request.opened.json", event: "pull_request",
			want: bot.Event{Kind: bot.EventRun, PR: pr, Actor: "octocat"}},
		{file: "pull_request.synchronize.json", event: "pull_request",
			want: bot.Event{Kind: bot.EventRun, PR: with(func(p *bot.PR) { p.HeadSHA = head2 }), Actor: "octocat"}},
		{file: "pull_request.closed.json", event: "pull_request",
			want: bot.Event{Kind: bot.EventClose, PR: with(func(p *bot.PR) { p.HeadSHA = head2 }), Actor: "octocat"}},
		{file: "pull_request.edited_base.json", event: "pull_request",
			want: bot.Event{Kind: bot.EventRun, PR: with(func(p *bot.PR) {
				p.HeadSHA, p.BaseRef, p.BaseSHA = head2, "release-1.2", "9999999999aaaaaaaaaabbbbbbbbbbcccccccccc"
			}), Actor: "octocat"}},
		{file: "pull_request.edited_base.json", event: "pull_request",
			edit: func(s string) string {
				return strings.Replace(s, "\"changes\": {\n    \"base\"", "\"changes\": {\n    \"title\"", 1)
			},
			want: bot.Event{Kind: bot.EventIgnore, Actor: "octocat", Reason: "pull_request edited without a base change"}},
		{file: "pull_request.opened.json", event: "pull_request",
			edit: func(s string) string { return strings.Replace(s, `"action": "opened"`, `"action": "labeled"`, 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "octocat", Reason: `pull_request action "labeled" is not handled`}},
		{file: "pull_request.fork.json", event: "pull_request",
			want: bot.Event{Kind: bot.EventRun, Actor: "mallory", PR: with(func(p *bot.PR) {
				p.Number, p.HeadRef, p.Fork, p.HeadRepo = 18, "patch-1", true, "mallory/gitops"
				p.URL = "https://github.com/acme/gitops/pull/18"
			})}},
		{file: "issue_comment.rerun.json", event: "issue_comment",
			want: bot.Event{Kind: bot.EventRerun, Actor: "hubot", PR: bot.PR{
				Host: "github", Repo: repo, Number: 17, InstallationID: 4242, URL: "https://github.com/acme/gitops/pull/17",
			}}},
		{file: "issue_comment.rerun.json", event: "issue_comment",
			edit: func(s string) string { return strings.Replace(s, "/driftpreview rerun", "/driftpreview please", 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "hubot", Reason: "comment is not a driftpreview command"}},
		{file: "issue_comment.rerun.json", event: "issue_comment",
			edit: func(s string) string { return strings.Replace(s, `"action": "created"`, `"action": "edited"`, 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "hubot", Reason: `issue_comment action "edited" is not handled`}},
		{file: "ping.json", event: "ping",
			want: bot.Event{Kind: bot.EventIgnore, Reason: `event "ping" is not handled`}},
	}
	for i, tt := range tests {
		t.Run(tt.file+"/"+strconv.Itoa(i), func(t *testing.T) {
			body := fixture(t, tt.file)
			if tt.edit != nil {
				edited := tt.edit(string(body))
				if edited == string(body) {
					t.Fatal("edit changed nothing")
				}
				body = []byte(edited)
			}
			tt.want.DeliveryID = "delivery-" + strconv.Itoa(i)
			got, err := c.ParseWebhook(githubtest.WebhookHeader(tt.event, tt.want.DeliveryID, secret, body), body)
			if err != nil {
				t.Fatalf("ParseWebhook: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseWebhook (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWebhookBadPayload(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	body := []byte(`{"action": "opened", "pull_request": [`)
	_, err := c.ParseWebhook(githubtest.WebhookHeader("pull_request", "d", secret, body), body)
	if err == nil || errors.Is(err, bot.ErrUnauthorized) || !strings.Contains(err.Error(), "decoding github pull_request payload") {
		t.Fatalf("err = %v, want a decoding error", err)
	}
}

func ghPR() bot.PR {
	return bot.PR{Host: "github", Repo: repo, Number: 17, InstallationID: 4242, BaseSHA: baseSHA, HeadSHA: headSHA}
}

// bodies returns the comment bodies on the PR, oldest first.
func bodies(srv *githubtest.Server) []string {
	var out []string
	for _, c := range srv.Comments(repo, 17) {
		out = append(out, c.Body)
	}
	return out
}

// writes counts non-GET API calls (token requests excluded).
func writes(calls []githubtest.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Method != http.MethodGet && !strings.HasSuffix(c.Path, "/access_tokens") {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

func TestUpsertComment(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	const m = "<!-- driftpreview:sticky v1 -->"
	p := func(n int) string { return "<!-- driftpreview:sticky v1 page " + strconv.Itoa(n) + " -->" }
	// A human quoting the marker and another bot's comment must be left alone.
	srv.AddComment(repo, 17, "octocat", "User", m+"\nI copied the bot's comment")
	srv.AddComment(repo, 17, "renovate[bot]", "Bot", "<!-- renovate -->\nhello")

	steps := []struct {
		name       string
		pages      []string
		wantBodies []string
		wantWrites []string
	}{
		{
			name:       "first run creates the sticky comment",
			pages:      []string{m + "\nrun 1"},
			wantBodies: []string{m + "\nrun 1"},
			wantWrites: []string{"POST /repos/acme/gitops/issues/17/comments"},
		},
		{
			name:       "same text again writes nothing",
			pages:      []string{m + "\nrun 1"},
			wantBodies: []string{m + "\nrun 1"},
		},
		{
			name:       "new text updates in place",
			pages:      []string{m + "\nrun 2"},
			wantBodies: []string{m + "\nrun 2"},
			wantWrites: []string{"PATCH /repos/acme/gitops/issues/comments/1003"},
		},
		{
			name:       "a long report splits into follow-ups",
			pages:      []string{m + "\nrun 3", "part 2", p(3) + "\npart 3"},
			wantBodies: []string{m + "\nrun 3", p(2) + "\npart 2", p(3) + "\npart 3"},
			wantWrites: []string{
				"PATCH /repos/acme/gitops/issues/comments/1003",
				"POST /repos/acme/gitops/issues/17/comments",
				"POST /repos/acme/gitops/issues/17/comments",
			},
		},
		{
			name:       "a shorter report deletes stale follow-ups",
			pages:      []string{m + "\nrun 4"},
			wantBodies: []string{m + "\nrun 4"},
			wantWrites: []string{
				"PATCH /repos/acme/gitops/issues/comments/1003",
				"DELETE /repos/acme/gitops/issues/comments/1005",
				"DELETE /repos/acme/gitops/issues/comments/1004",
			},
		},
	}
	for _, st := range steps {
		srv.ResetCalls()
		if err := c.UpsertComment(ctx, ghPR(), "", st.pages); err != nil {
			t.Fatalf("%s: UpsertComment: %v", st.name, err)
		}
		want := []string{m + "\nI copied the bot's comment", "<!-- renovate -->\nhello"}
		for _, b := range st.wantBodies {
			want = append(want, withHead(b, headSHA))
		}
		if diff := cmp.Diff(want, bodies(srv)); diff != "" {
			t.Errorf("%s: comments (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.wantWrites, writes(srv.Calls())); diff != "" {
			t.Errorf("%s: writes (-want +got):\n%s", st.name, diff)
		}
	}
}

func TestUpsertCommentRemovesDuplicatesAndPaginates(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	const m = "<!-- driftpreview:sticky v1 -->"
	for i := range 120 {
		srv.AddComment(repo, 17, "octocat", "User", "chatter "+strconv.Itoa(i))
	}
	first := srv.AddComment(repo, 17, "driftpreview[bot]", "Bot", m+"\nold")
	srv.AddComment(repo, 17, "driftpreview[bot]", "Bot", m+"\nduplicate from a crashed run")
	if err := c.UpsertComment(context.Background(), ghPR(), "", []string{"new"}); err != nil {
		t.Fatal(err)
	}
	var sticky []githubtest.Comment
	for _, cm := range srv.Comments(repo, 17) {
		if strings.HasPrefix(cm.Body, m) {
			sticky = append(sticky, cm)
		}
	}
	want := []githubtest.Comment{{ID: first, Repo: repo, Number: 17, Body: withHead(m+"\nnew", headSHA), User: "driftpreview[bot]", UserType: "Bot"}}
	if diff := cmp.Diff(want, sticky); diff != "" {
		t.Errorf("sticky comments (-want +got):\n%s", diff)
	}
}

func TestSetStatus(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	pr := ghPR()
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateInProgress, StartedAt: now, DetailsURL: "https://dp.example.com/runs/1"}); err != nil {
		t.Fatal(err)
	}
	// Retrying the same call must not create a second run.
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateInProgress, StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("🔴 data-loss ", 10000) // > 65535 bytes
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateFailure, Title: "3 errors", Summary: long, Text: long, DetailsURL: "https://dp.example.com/runs/1"}); err != nil {
		t.Fatal(err)
	}
	runs := srv.CheckRuns(repo, headSHA)
	if len(runs) != 1 {
		t.Fatalf("got %d check runs, want 1: %+v", len(runs), runs)
	}
	got := runs[0]
	if len(got.Summary) > 65535 || len(got.Text) > 65535 || !strings.HasSuffix(got.Summary, "… truncated") {
		t.Errorf("summary %d bytes, text %d bytes, want ≤ 65535 and a truncation note", len(got.Summary), len(got.Text))
	}
	got.Summary, got.Text = "", ""
	want := githubtest.CheckRun{
		ID: got.ID, Repo: repo, HeadSHA: headSHA, Name: "driftpreview", Status: "completed", Conclusion: "failure",
		Title: "3 errors", DetailsURL: "https://dp.example.com/runs/1", AppID: srv.AppID,
		StartedAt: "2026-11-02T03:14:00Z", CompletedAt: "2026-11-02T03:14:00Z",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("check run (-want +got):\n%s", diff)
	}

	// A re-run gets a new run; an internal error is a failure titled with the reason.
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateInProgress}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(ctx, pr, bot.Status{State: bot.StateError, Title: "cloning: repository not found"}); err != nil {
		t.Fatal(err)
	}
	runs = srv.CheckRuns(repo, headSHA)
	var states []string
	for _, r := range runs {
		states = append(states, r.Status+"/"+r.Conclusion+"/"+r.Title)
	}
	wantStates := []string{"completed/failure/3 errors", "completed/failure/cloning: repository not found"}
	if diff := cmp.Diff(wantStates, states); diff != "" {
		t.Errorf("check runs (-want +got):\n%s", diff)
	}
}

func TestRateLimits(t *testing.T) {
	resetAt := now.Add(42 * time.Second)
	tests := []struct {
		name   string
		header http.Header
		status int
		want   []time.Duration
	}{
		{"secondary limit with Retry-After", http.Header{"Retry-After": {"1"}}, 403, []time.Duration{time.Second}},
		{"primary limit with x-ratelimit-reset", http.Header{
			"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {strconv.FormatInt(resetAt.Unix(), 10)},
		}, 403, []time.Duration{42 * time.Second}},
		{"429 with Retry-After", http.Header{"Retry-After": {"2"}}, 429, []time.Duration{2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := githubtest.New(t)
			c, sl := newClient(t, srv)
			srv.FailNext(http.MethodPost, "/repos/acme/gitops/issues/17/comments", 1, tt.status, tt.header)
			if err := c.UpsertComment(context.Background(), ghPR(), "", []string{"hello"}); err != nil {
				t.Fatalf("UpsertComment: %v", err)
			}
			if diff := cmp.Diff(tt.want, sl.Got()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			if n := len(srv.Comments(repo, 17)); n != 1 {
				t.Errorf("got %d comments, want 1", n)
			}
		})
	}
}

func TestCanRerunAndResolvePR(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	srv.SetPermission(repo, "admin-alice", "admin")
	srv.SetPermission(repo, "writer-bob", "write")
	srv.SetPermission(repo, "reader-carol", "read")
	for user, want := range map[string]bool{"admin-alice": true, "writer-bob": true, "reader-carol": false, "stranger": false} {
		got, err := c.CanRerun(ctx, ghPR(), user)
		if err != nil {
			t.Fatalf("CanRerun(%s): %v", user, err)
		}
		if got != want {
			t.Errorf("CanRerun(%s) = %v, want %v", user, got, want)
		}
	}
	srv.AddPull(githubtest.PullRequest{Repo: repo, Number: 18, BaseRef: "main", BaseSHA: baseSHA, HeadRef: "patch-1",
		HeadSHA: headSHA, HeadRepo: "mallory/gitops", HTMLURL: "https://github.com/acme/gitops/pull/18"})
	got, err := c.ResolvePR(ctx, bot.PR{Host: "github", Repo: repo, Number: 18, InstallationID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	want := bot.PR{Host: "github", Repo: repo, Number: 18, InstallationID: 4242, BaseRef: "main", BaseSHA: baseSHA,
		HeadRef: "patch-1", HeadSHA: headSHA, Fork: true, HeadRepo: "mallory/gitops", URL: "https://github.com/acme/gitops/pull/18"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResolvePR (-want +got):\n%s", diff)
	}
}

func TestCloneAuth(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	url, h, err := c.CloneAuth(context.Background(), ghPR())
	if err != nil {
		t.Fatal(err)
	}
	if url != "https://github.example.com/acme/gitops.git" {
		t.Errorf("clone URL = %q", url)
	}
	toks := srv.Tokens()
	if len(toks) != 1 {
		t.Fatalf("issued tokens = %d, want 1", len(toks))
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+toks[0]))
	if got := h.Get("Authorization"); got != want {
		t.Errorf("Authorization header is not Basic x-access-token:<installation token>")
	}

	opts := github.DefaultOptions()
	opts.AppID, opts.PrivateKey, opts.WebhookSecret, opts.APIURL = srv.AppID, srv.KeyPEM, secret, srv.URL()
	opts.WebURL = "file:///tmp/repos"
	fc, err := github.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	url, h, err = fc.CloneAuth(context.Background(), ghPR())
	if err != nil || url != "file:///tmp/repos/acme/gitops.git" || h != nil {
		t.Errorf("file:// CloneAuth = %q, %v, %v; want the file URL and no header", url, h, err)
	}
}

func TestErrorsNeverContainSecrets(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	// Get a token issued, then make every API call fail.
	if _, _, err := c.CloneAuth(ctx, ghPR()); err != nil {
		t.Fatal(err)
	}
	srv.FailNext("", "/repos/acme/gitops/issues/17/comments", 100, http.StatusNotFound, nil)
	srv.FailNext("", "/repos/acme/gitops/commits/"+headSHA+"/check-runs", 100, http.StatusInternalServerError, nil)
	var errs []error
	errs = append(errs, c.UpsertComment(ctx, ghPR(), "", []string{"x"}))
	errs = append(errs, c.SetStatus(ctx, ghPR(), bot.Status{State: bot.StateSuccess}))
	secrets := append(srv.Tokens(), string(srv.KeyPEM), string(secret))
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: want an error", i)
			continue
		}
		for _, s := range secrets {
			if strings.Contains(err.Error(), s) {
				t.Errorf("call %d: error leaks a secret: %v", i, err)
			}
		}
	}
	if _, err := github.New(github.Options{AppID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nnot a key"), WebhookSecret: secret}); err == nil ||
		strings.Contains(err.Error(), "not a key") {
		t.Errorf("New with a bad key: err = %v, want an error that does not quote the key", err)
	}
	if _, err := github.New(github.Options{AppID: 1, PrivateKey: srv.KeyPEM}); err == nil {
		t.Error("New without a webhook secret: want an error")
	}
	opts := github.Options{PrivateKey: srv.KeyPEM, WebhookSecret: secret}
	for _, s := range []string{opts.String(), opts.GoString()} {
		if strings.Contains(s, string(secret)) || strings.Contains(s, "PRIVATE KEY") {
			t.Errorf("Options printing leaks secrets: %s", s)
		}
	}
}

// BenchmarkParseWebhook measures verify + decode of a pull_request delivery, the
// work the server does inside its 10 s answer budget.
func BenchmarkParseWebhook(b *testing.B) {
	srv := githubtest.New(b)
	opts := github.DefaultOptions()
	opts.AppID, opts.PrivateKey, opts.WebhookSecret, opts.APIURL = srv.AppID, srv.KeyPEM, secret, srv.URL()
	c, err := github.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "webhooks", "github", "pull_request.synchronize.json"))
	if err != nil {
		b.Fatal(err)
	}
	h := githubtest.WebhookHeader("pull_request", "d", secret, body)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.ParseWebhook(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

// A secondary rate limit without Retry-After once got no retry, and go-github then
// refused every call of the installation until x-ratelimit-reset (up to an hour):
// the job failed and no check was posted. GitHub's guidance: wait at least a
// minute, then exponentially longer. Each wait is logged with its reason, and a
// limit that asks for more than MaxWait fails only that call.
func TestSecondaryRateLimits(t *testing.T) {
	const path = "/repos/acme/gitops/check-runs"
	t.Run("no Retry-After: 60 s, then 120 s", func(t *testing.T) {
		srv := githubtest.New(t)
		var logs bytes.Buffer
		c, sl := newClientWith(t, srv, func(o *github.Options) {
			o.Retry.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		})
		srv.FailNextSecondary(http.MethodPost, path, 2, nil)
		if err := c.SetStatus(context.Background(), ghPR(), bot.Status{State: bot.StateInProgress, Title: "Previewing"}); err != nil {
			t.Fatalf("SetStatus: %v", err)
		}
		if diff := cmp.Diff([]time.Duration{time.Minute, 2 * time.Minute}, sl.Got()); diff != "" {
			t.Errorf("waits (-want +got):\n%s", diff)
		}
		if n := len(srv.CheckRuns(repo, headSHA)); n != 1 {
			t.Errorf("got %d check runs, want 1", n)
		}
		for _, want := range []string{"wait=1m0s", "wait=2m0s", "secondary rate limit without Retry-After", "path=" + path, "status=403"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("retry log lacks %q:\n%s", want, logs.String())
			}
		}
	})
	t.Run("reset beyond MaxWait does not lock the client", func(t *testing.T) {
		srv := githubtest.New(t)
		c, sl := newClient(t, srv)
		// Remaining 0 with a reset an hour from the real clock, which go-github's lock
		// uses.
		reset := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
		srv.FailNextSecondary(http.MethodPost, path, 1, http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {reset}})
		if err := c.SetStatus(context.Background(), ghPR(), bot.Status{State: bot.StateInProgress, Title: "Previewing"}); err == nil {
			t.Fatal("SetStatus succeeded through a rate limit longer than MaxWait")
		}
		if got := sl.Got(); len(got) != 0 {
			t.Errorf("slept %v for a wait beyond MaxWait", got)
		}
		// The next call reaches GitHub (its limit is over) instead of failing in
		// go-github without a request.
		srv.ResetCalls()
		if err := c.SetStatus(context.Background(), ghPR(), bot.Status{State: bot.StateError, Title: "could not finish"}); err != nil {
			t.Fatalf("SetStatus after the limit: %v", err)
		}
		if n := len(srv.Calls()); n == 0 {
			t.Error("go-github locked the installation's client: no request reached GitHub")
		}
	})
	t.Run("plain 403 is not retried", func(t *testing.T) {
		srv := githubtest.New(t)
		c, sl := newClient(t, srv)
		srv.FailNext(http.MethodPost, path, 1, http.StatusForbidden, nil)
		if err := c.SetStatus(context.Background(), ghPR(), bot.Status{State: bot.StateInProgress, Title: "Previewing"}); err == nil {
			t.Fatal("SetStatus succeeded through a 403")
		}
		if got := sl.Got(); len(got) != 0 {
			t.Errorf("a permission 403 was retried after %v", got)
		}
	})
}

// withHead inserts the head marker the adapters stamp on every page after the
// body's first line (its sticky marker).
func withHead(body, head string) string {
	first, rest, _ := strings.Cut(body, "\n")
	return first + "\n<!-- driftpreview:head " + head + " -->\n" + rest
}

// A job cancelled by a push while its comment POST was in flight: the old head's
// sticky comment lands after the new head's job listed the comments, so both
// created one. After posting, UpsertComment lists again and keeps only the new
// head's sticky comment (and its follow-ups).
func TestUpsertCommentReconcilesLateStickyOfOlderHead(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	const m = "<!-- driftpreview:sticky v1 -->"
	human := srv.AddComment(repo, 17, "octocat", "User", m+"\nquoting the bot")
	var landed sync.Once
	srv.BeforeRequest(func(method, path string) {
		if method == http.MethodPost && path == "/repos/acme/gitops/issues/17/comments" {
			landed.Do(func() {
				// The older head's in-flight POST (page 1 and a follow-up) lands now.
				srv.AddComment(repo, 17, "driftpreview[bot]", "Bot", withHead(m+"\nold head", baseSHA))
				srv.AddComment(repo, 17, "driftpreview[bot]", "Bot", withHead("<!-- driftpreview:sticky v1 page 2 -->\nold page 2", baseSHA))
			})
		}
	})
	if err := c.UpsertComment(context.Background(), ghPR(), "", []string{"new head"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cm := range srv.Comments(repo, 17) {
		if cm.ID != human {
			got = append(got, cm.Body)
		}
	}
	if diff := cmp.Diff([]string{withHead(m+"\nnew head", headSHA)}, got); diff != "" {
		t.Errorf("bot comments after the race (-want +got):\n%s", diff)
	}
}

// TestFetchSpec: GitHub's PR head ref, the base branch and the repository's web URL
// cut from the PR's come from the adapter, not from the job.
func TestFetchSpec(t *testing.T) {
	srv := githubtest.New(t)
	c, _ := newClient(t, srv)
	pr := ghPR()
	pr.BaseRef, pr.URL = "main", "https://github.example.com/acme/gitops/pull/17"
	spec, err := c.FetchSpec(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Header.Get("Authorization") == "" {
		t.Error("FetchSpec has no Authorization header")
	}
	spec.Header = nil
	want := bot.FetchSpec{URL: "https://github.example.com/acme/gitops.git", Refs: []string{"refs/pull/17/head", "refs/heads/main"},
		WebURL: "https://github.example.com/acme/gitops"}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("FetchSpec (-want +got):\n%s", diff)
	}
	if n := c.MaxCommentChars(); n != github.MaxCommentLength {
		t.Errorf("MaxCommentChars = %d, want %d", n, github.MaxCommentLength)
	}
	for in, want := range map[string]string{"https://github.com/acme/shop/pull/7": "https://github.com/acme/shop", "": "",
		"https://gitlab.example.com/g/shop/-/merge_requests/3": ""} {
		if got := github.RepoWebURL(in); got != want {
			t.Errorf("RepoWebURL(%q) = %q, want %q", in, got, want)
		}
	}
}
