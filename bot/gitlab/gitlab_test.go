package gitlab_test

import (
	"context"
	"encoding/base64"
	"errors"
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
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

var secret = []byte("hook-secret-token")

const (
	project = int64(42)
	path    = "acme/platform/gitops"
	head1   = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00"
	head2   = "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef"
	base    = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
)

var now = time.Date(2026, 11, 2, 3, 14, 0, 0, time.UTC)

func newClient(t *testing.T, srv *gitlabtest.Server) (*gitlab.Client, *hostfake.Sleeps) {
	t.Helper()
	sl := &hostfake.Sleeps{}
	opts := gitlab.DefaultOptions()
	opts.URL = srv.URL()
	opts.Token = srv.Token
	opts.WebhookSecret = secret
	opts.Retry.Sleep = sl.Sleep
	opts.Retry.Now = func() time.Time { return now }
	c, err := gitlab.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv.AddProject(project, path)
	return c, sl
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "webhooks", "gitlab", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mrPR() bot.PR {
	return bot.PR{Host: "gitlab", Repo: path, Number: 5, ProjectID: project, BaseSHA: base, HeadSHA: head1}
}

func TestParseWebhookAuthentication(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	body := fixture(t, "merge_request.open.json")
	for _, tt := range []struct {
		name, token string
		ok          bool
	}{
		{"right token", string(secret), true},
		{"missing token", "", false},
		{"wrong token", "hook-secret-tokeN", false},
		{"prefix of the token", "hook", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := gitlabtest.WebhookHeader("Merge Request Hook", "u-1", tt.token)
			if tt.token == "" {
				h.Del("X-Gitlab-Token")
			}
			_, err := c.ParseWebhook(h, body)
			if tt.ok && err != nil {
				t.Fatalf("ParseWebhook: %v", err)
			}
			if !tt.ok && !errors.Is(err, bot.ErrUnauthorized) {
				t.Fatalf("ParseWebhook error = %v, want one wrapping bot.ErrUnauthorized", err)
			}
		})
	}
}

func TestParseWebhook(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	pr := bot.PR{Host: "gitlab", Repo: path, Number: 5, ProjectID: project, BaseRef: "main",
		HeadRef: "feature/shop-cache", HeadSHA: head1, URL: "https://gitlab.example.com/acme/platform/gitops/-/merge_requests/5"}
	with := func(f func(*bot.PR)) bot.PR { p := pr; f(&p); return p }
	tests := []struct {
		file, event string
		edit        func(string) string
		want        bot.Event
	}{
		{file: "merge_request.open.json", event: "Merge Request Hook",
			want: bot.Event{Kind: bot.EventRun, PR: pr, Actor: "ada"}},
		{file: "merge_request.update.json", event: "Merge Request Hook",
			want: bot.Event{Kind: bot.EventRun, PR: with(func(p *bot.PR) { p.HeadSHA = head2 }), Actor: "ada"}},
		{file: "merge_request.update.json", event: "Merge Request Hook",
			edit: func(s string) string { return strings.Replace(s, `"oldrev"`, `"oldrev_gone"`, 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "ada", Reason: "merge request update without new commits or a new target branch"}},
		{file: "merge_request.close.json", event: "Merge Request Hook",
			want: bot.Event{Kind: bot.EventClose, PR: with(func(p *bot.PR) { p.HeadSHA = head2 }), Actor: "ada"}},
		{file: "merge_request.open.json", event: "Merge Request Hook",
			edit: func(s string) string {
				return strings.Replace(s, `"source_project_id": 42`, `"source_project_id": 77`, 1)
			},
			want: bot.Event{Kind: bot.EventRun, Actor: "ada", PR: with(func(p *bot.PR) {
				p.Fork, p.HeadRepo = true, path // the fixture's source object is the same project
			})}},
		{file: "merge_request.open.json", event: "Merge Request Hook",
			edit: func(s string) string { return strings.Replace(s, `"action": "open"`, `"action": "approved"`, 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "ada", Reason: `merge request action "approved" is not handled`}},
		{file: "note.rerun.json", event: "Note Hook",
			want: bot.Event{Kind: bot.EventRerun, Actor: "grace", PR: with(func(p *bot.PR) { p.HeadSHA = head2 })}},
		{file: "note.rerun.json", event: "Note Hook",
			edit: func(s string) string { return strings.Replace(s, "/driftpreview rerun", "looks good", 1) },
			want: bot.Event{Kind: bot.EventIgnore, Actor: "grace", Reason: "note is not a driftpreview command"}},
		{file: "note.rerun.json", event: "Note Hook",
			edit: func(s string) string {
				return strings.Replace(s, `"noteable_type": "MergeRequest"`, `"noteable_type": "Issue"`, 1)
			},
			want: bot.Event{Kind: bot.EventIgnore, Actor: "grace", Reason: "note on a Issue, not a merge request"}},
		{file: "merge_request.open.json", event: "Pipeline Hook",
			want: bot.Event{Kind: bot.EventIgnore, Reason: `event "Pipeline Hook" is not handled`}},
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
			tt.want.DeliveryID = "uuid-" + strconv.Itoa(i)
			got, err := c.ParseWebhook(gitlabtest.WebhookHeader(tt.event, tt.want.DeliveryID, string(secret)), body)
			if err != nil {
				t.Fatalf("ParseWebhook: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseWebhook (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeliveryIDPrecedence(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	body := fixture(t, "merge_request.open.json")
	h := gitlabtest.WebhookHeader("Merge Request Hook", "event-uuid", string(secret))
	h.Set("Idempotency-Key", "idem-key")
	for _, want := range []string{"idem-key", "event-uuid", "2ac9c1b5-6dd5-4c79-9a8e-0b2d3b6c1f00"} {
		ev, err := c.ParseWebhook(h, body)
		if err != nil {
			t.Fatal(err)
		}
		if ev.DeliveryID != want {
			t.Errorf("DeliveryID = %q, want %q", ev.DeliveryID, want)
		}
		if h.Get("Idempotency-Key") != "" {
			h.Del("Idempotency-Key")
		} else {
			h.Del("X-Gitlab-Event-UUID")
		}
	}
}

func noteBodies(srv *gitlabtest.Server) []string {
	var out []string
	for _, n := range srv.Notes(project, 5) {
		out = append(out, n.Body)
	}
	return out
}

func writes(calls []gitlabtest.Call) []string {
	var out []string
	for _, c := range calls {
		if c.Method != http.MethodGet {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

func TestUpsertComment(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	const m = "<!-- driftpreview:sticky v1 -->"
	p := func(n int) string { return "<!-- driftpreview:sticky v1 page " + strconv.Itoa(n) + " -->" }
	srv.AddNote(project, 5, 7, m+"\na human quoting the bot")
	const notes = "/api/v4/projects/42/merge_requests/5/notes"
	steps := []struct {
		name       string
		pages      []string
		wantBodies []string
		wantWrites []string
	}{
		{"first run creates", []string{"run 1"}, []string{m + "\nrun 1"}, []string{"POST " + notes}},
		{"same text writes nothing", []string{"run 1"}, []string{m + "\nrun 1"}, nil},
		{"new text updates in place", []string{"run 2"}, []string{m + "\nrun 2"}, []string{"PUT " + notes + "/5002"}},
		{"split into follow-ups", []string{"run 3", "b", "c"}, []string{m + "\nrun 3", p(2) + "\nb", p(3) + "\nc"},
			[]string{"PUT " + notes + "/5002", "POST " + notes, "POST " + notes}},
		{"fewer pages delete stale follow-ups", []string{"run 4", "b"}, []string{m + "\nrun 4", p(2) + "\nb"},
			[]string{"PUT " + notes + "/5002", "DELETE " + notes + "/5004"}},
	}
	for _, st := range steps {
		srv.ResetCalls()
		if err := c.UpsertComment(ctx, mrPR(), "", st.pages); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		want := []string{m + "\na human quoting the bot"}
		for _, b := range st.wantBodies {
			want = append(want, withHead(b, mrPR().HeadSHA))
		}
		if diff := cmp.Diff(want, noteBodies(srv)); diff != "" {
			t.Errorf("%s: notes (-want +got):\n%s", st.name, diff)
		}
		if diff := cmp.Diff(st.wantWrites, writes(srv.Calls())); diff != "" {
			t.Errorf("%s: writes (-want +got):\n%s", st.name, diff)
		}
	}
	// The project may also be addressed by path when the ID is unknown.
	pr := mrPR()
	pr.ProjectID = 0
	if err := c.UpsertComment(ctx, pr, "", []string{"run 5"}); err != nil {
		t.Fatal(err)
	}
	if got := noteBodies(srv); len(got) != 2 || got[1] != withHead(m+"\nrun 5", pr.HeadSHA) {
		t.Errorf("notes after a by-path upsert = %q", got)
	}
}

func TestSetStatus(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	steps := []bot.Status{
		{State: bot.StateInProgress, DetailsURL: "https://dp.example.com/runs/1"},
		{State: bot.StateInProgress}, // a retried start must not fail
		{State: bot.StateNeutral, Title: "2 warnings"},
		{State: bot.StateFailure, Title: strings.Repeat("é", 300)},
		{State: bot.StateError, Title: "cloning failed"},
		{State: bot.StateSuccess, Title: "no findings"},
	}
	for _, s := range steps {
		if err := c.SetStatus(ctx, mrPR(), s); err != nil {
			t.Fatalf("SetStatus(%s): %v", s.State, err)
		}
	}
	want := []gitlabtest.Status{
		{ProjectID: project, SHA: head1, Name: "driftpreview", State: "running", Description: "rendering and diffing base and head", TargetURL: "https://dp.example.com/runs/1"},
		{ProjectID: project, SHA: head1, Name: "driftpreview", State: "success", Description: "neutral: 2 warnings"},
		{ProjectID: project, SHA: head1, Name: "driftpreview", State: "failed", Description: strings.Repeat("é", 126) + "…"},
		// GitLab refuses failed → failed: the error is reported by the previous status.
		{ProjectID: project, SHA: head1, Name: "driftpreview", State: "success", Description: "no findings"},
	}
	if diff := cmp.Diff(want, srv.Statuses(project, head1)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
}

func TestRateLimits(t *testing.T) {
	srv := gitlabtest.New(t)
	c, sl := newClient(t, srv)
	reset := strconv.FormatInt(now.Add(9*time.Second).Unix(), 10)
	srv.FailNext(http.MethodPost, "/api/v4/projects/42/merge_requests/5/notes", 1, http.StatusTooManyRequests,
		http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {reset}})
	srv.FailNext(http.MethodPost, "/api/v4/projects/42/statuses/"+head1, 1, http.StatusTooManyRequests,
		http.Header{"Retry-After": {"1"}})
	if err := c.UpsertComment(context.Background(), mrPR(), "", []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetStatus(context.Background(), mrPR(), bot.Status{State: bot.StateSuccess}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{9 * time.Second, time.Second}, sl.Got()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	if n := len(srv.Notes(project, 5)); n != 1 {
		t.Errorf("notes = %d, want 1", n)
	}
}

func TestCanRerunResolvePRCloneAuth(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	srv.AddUser(project, "maint", 10, 40)
	srv.AddUser(project, "dev", 11, 30)
	srv.AddUser(project, "reporter", 12, 20)
	srv.AddUser(project, "outsider", 13, 0)
	for user, want := range map[string]bool{"maint": true, "dev": true, "reporter": false, "outsider": false, "nobody": false} {
		got, err := c.CanRerun(ctx, mrPR(), user)
		if err != nil {
			t.Fatalf("CanRerun(%s): %v", user, err)
		}
		if got != want {
			t.Errorf("CanRerun(%s) = %v, want %v", user, got, want)
		}
	}

	srv.AddMergeRequest(gitlabtest.MergeRequest{ProjectID: project, IID: 5, SourceProjectID: 77, SourceBranch: "feature",
		TargetBranch: "main", SHA: head2, BaseSHA: "1111111111111111111111111111111111111111", StartSHA: base,
		WebURL: "https://gitlab.example.com/acme/platform/gitops/-/merge_requests/5"})
	got, err := c.ResolvePR(ctx, bot.PR{Host: "gitlab", Repo: path, Number: 5, ProjectID: project, HeadRepo: "mallory/gitops"})
	if err != nil {
		t.Fatal(err)
	}
	want := bot.PR{Host: "gitlab", Repo: path, Number: 5, ProjectID: project, BaseRef: "main", BaseSHA: base,
		HeadRef: "feature", HeadSHA: head2, Fork: true, HeadRepo: "mallory/gitops",
		URL: "https://gitlab.example.com/acme/platform/gitops/-/merge_requests/5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResolvePR (-want +got):\n%s", diff)
	}

	url, h, err := c.CloneAuth(ctx, mrPR())
	if err != nil {
		t.Fatal(err)
	}
	if url != srv.URL()+"/acme/platform/gitops.git" {
		t.Errorf("clone URL = %q", url)
	}
	if h.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte("oauth2:"+srv.Token)) {
		t.Error("Authorization header is not Basic oauth2:<token>")
	}
}

func TestErrorsNeverContainSecrets(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	ctx := context.Background()
	srv.FailNext("", "/api/v4/projects/42/merge_requests/5/notes", 100, http.StatusInternalServerError, nil)
	srv.FailNext("", "/api/v4/projects/42/statuses/"+head1, 100, http.StatusForbidden, nil)
	errs := []error{
		c.UpsertComment(ctx, mrPR(), "", []string{"x"}),
		c.SetStatus(ctx, mrPR(), bot.Status{State: bot.StateSuccess}),
	}
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: want an error", i)
			continue
		}
		if strings.Contains(err.Error(), srv.Token) || strings.Contains(err.Error(), string(secret)) {
			t.Errorf("call %d: error leaks a secret: %v", i, err)
		}
	}
	if _, err := gitlab.New(gitlab.Options{Token: "x"}); err == nil {
		t.Error("New without a webhook secret: want an error")
	}
	o := gitlab.Options{Token: srv.Token, WebhookSecret: secret}
	if s := o.String() + o.GoString(); strings.Contains(s, srv.Token) || strings.Contains(s, string(secret)) {
		t.Errorf("Options printing leaks secrets: %s", s)
	}
}

// withHead inserts the head marker the adapters stamp on every page after the
// body's first line (its sticky marker).
func withHead(body, head string) string {
	first, rest, _ := strings.Cut(body, "\n")
	return first + "\n<!-- driftpreview:head " + head + " -->\n" + rest
}

// A job cancelled by a push while its note POST was in flight: the old head's
// sticky note lands after the new head's job listed the notes, so both created
// one. After posting, UpsertComment lists again and keeps only the new head's.
func TestUpsertCommentReconcilesLateStickyOfOlderHead(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	const m = "<!-- driftpreview:sticky v1 -->"
	srv.AddNote(project, 5, 7, m+"\na human quoting the bot")
	var landed sync.Once
	srv.BeforeRequest(func(method, p string) {
		if method == http.MethodPost && strings.HasSuffix(p, "/merge_requests/5/notes") {
			landed.Do(func() { srv.AddNote(project, 5, srv.BotID, withHead(m+"\nold head", head2)) })
		}
	})
	if err := c.UpsertComment(context.Background(), mrPR(), "", []string{"new head"}); err != nil {
		t.Fatal(err)
	}
	want := []string{m + "\na human quoting the bot", withHead(m+"\nnew head", head1)}
	if diff := cmp.Diff(want, noteBodies(srv)); diff != "" {
		t.Errorf("notes after the race (-want +got):\n%s", diff)
	}
}

// TestFetchSpec: GitLab's merge request head ref, the base branch and the
// project's web URL cut from the merge request's come from the adapter.
func TestFetchSpec(t *testing.T) {
	srv := gitlabtest.New(t)
	c, _ := newClient(t, srv)
	pr := mrPR()
	pr.BaseRef, pr.URL = "main", "https://gitlab.example.com/acme/platform/gitops/-/merge_requests/5"
	spec, err := c.FetchSpec(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Header.Get("Authorization") == "" {
		t.Error("FetchSpec has no Authorization header")
	}
	spec.Header = nil
	want := bot.FetchSpec{URL: srv.URL() + "/acme/platform/gitops.git", Refs: []string{"refs/merge-requests/5/head", "refs/heads/main"},
		WebURL: "https://gitlab.example.com/acme/platform/gitops"}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("FetchSpec (-want +got):\n%s", diff)
	}
	if n := c.MaxCommentChars(); n != gitlab.MaxCommentLength {
		t.Errorf("MaxCommentChars = %d, want %d", n, gitlab.MaxCommentLength)
	}
	for in, want := range map[string]string{"https://gitlab.example.com/g/sub/shop/-/merge_requests/3": "https://gitlab.example.com/g/sub/shop",
		"": "", "https://github.com/acme/shop/pull/7": ""} {
		if got := gitlab.RepoWebURL(in); got != want {
			t.Errorf("RepoWebURL(%q) = %q, want %q", in, got, want)
		}
	}
}
