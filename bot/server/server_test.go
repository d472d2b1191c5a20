package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/server/servertest"
	"github.com/driftpreview/driftpreview/diffing"
)

// running is a server serving on a real port with its workers started.
type running struct {
	*server.Server
	url string
}

func startServer(t *testing.T, host *fakeHost, p *fakePreviewer, mod func(*server.Options)) *running {
	t.Helper()
	s := newTestServer(t, host, p, mod)
	return &running{Server: s, url: servertest.Serve(t, s)}
}

func (r *running) post(t *testing.T, ev bot.Event) int {
	t.Helper()
	code, err := r.deliver(ev)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// deliver posts ev as an authenticated GitHub webhook and returns the status code;
// unlike post it is safe to call from any goroutine.
func (r *running) deliver(ev bot.Event) (int, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, r.url+"/webhooks/github", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Fake-Token", "good")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("delivering %s to %s: %w", ev.DeliveryID, r.url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// eventually polls cond for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second) // generous: CI machines may be loaded
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitStarted(t *testing.T, p *fakePreviewer, head string) {
	t.Helper()
	select {
	case got := <-p.started:
		if got != head {
			t.Fatalf("preview started for %s, want %s", got, head)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("preview of %s never started", head)
	}
}

// TestSupersede pushes B while A's preview runs: A's result must never be posted,
// and A's check is completed as superseded, whether A notices the cancellation
// (its context) or not (the head check before posting).
func TestSupersede(t *testing.T) {
	for _, stubborn := range []bool{false, true} {
		name := "job honours cancellation"
		if stubborn {
			name = "job ignores cancellation"
		}
		t.Run(name, func(t *testing.T) {
			repo := newGitRepo(t)
			headA := repo.Head
			headB := repo.commit(t, "cm.yaml", "c")
			repo.push(t)
			host := newFakeHost("github", repo.URL)
			p := newFakePreviewer()
			p.stubborn = stubborn
			release := make(chan struct{})
			p.block[headA] = release
			srv := startServer(t, host, p, nil)
			prA := pr("acme/shop", 7, headA)
			prA.BaseSHA = repo.Base
			prB := prA
			prB.HeadSHA = headB

			if code := srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: prA}); code != 202 {
				t.Fatalf("delivery A: %d", code)
			}
			waitStarted(t, p, headA)
			if code := srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d2", PR: prB}); code != 202 {
				t.Fatalf("delivery B: %d", code)
			}
			eventually(t, "B's final status", func() bool { return len(host.states(headB)) == 2 })
			close(release)
			eventually(t, "A's final status", func() bool { return len(host.states(headA)) == 2 })

			if diff := cmp.Diff([]bot.State{bot.StateInProgress, bot.StateNeutral}, host.states(headA)); diff != "" {
				t.Errorf("A's statuses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]bot.State{bot.StateInProgress, bot.StateSuccess}, host.states(headB)); diff != "" {
				t.Errorf("B's statuses (-want +got):\n%s", diff)
			}
			var commented []string
			for _, c := range host.Comments() {
				commented = append(commented, c.SHA)
				if !strings.Contains(strings.Join(c.Pages, ""), headB[:7]) {
					t.Errorf("comment does not name head %s:\n%s", headB[:7], c.Pages[0])
				}
			}
			if diff := cmp.Diff([]string{headB}, commented); diff != "" {
				t.Errorf("comments posted for (-want +got):\n%s", diff)
			}
			for _, s := range host.Statuses() {
				if s.SHA == headA && s.Status.State == bot.StateNeutral && !strings.Contains(s.Status.Summary, headB[:7]) {
					t.Errorf("A's neutral status does not name the newer commit: %+v", s.Status)
				}
			}
		})
	}
}

// TestJobOutcomes runs whole jobs through the HTTP handler and the worker.
func TestJobOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		pr       func(r *gitRepo) bot.PR
		ev       func(p bot.PR) bot.Event
		setup    func(h *fakeHost, p *fakePreviewer, r *gitRepo)
		mod      func(o *server.Options)
		want     []bot.State
		comments int
		previews int
	}{
		{
			name:     "success",
			want:     []bot.State{bot.StateInProgress, bot.StateSuccess},
			comments: 1, previews: 1,
		},
		{
			name:     "failing report fails the check",
			setup:    func(_ *fakeHost, p *fakePreviewer, _ *gitRepo) { p.failing = true },
			want:     []bot.State{bot.StateInProgress, bot.StateFailure},
			comments: 1, previews: 1,
		},
		{
			name: "fork PR is not rendered",
			pr: func(r *gitRepo) bot.PR {
				p := pr("acme/shop", 3, r.Head)
				p.BaseSHA, p.Fork, p.HeadRepo = r.Base, true, "mallory/shop"
				return p
			},
			want: []bot.State{bot.StateNeutral},
		},
		{
			name: "fork PR rendered when allowed",
			pr: func(r *gitRepo) bot.PR {
				p := pr("acme/shop", 3, r.Head)
				p.BaseSHA, p.Fork, p.HeadRepo = r.Base, true, "mallory/shop"
				return p
			},
			mod:      func(o *server.Options) { o.Jobs.AllowForkPRs = true },
			want:     []bot.State{bot.StateInProgress, bot.StateSuccess},
			comments: 1, previews: 1,
		},
		{
			name: "rerun by a writer resolves the PR and runs",
			ev: func(p bot.PR) bot.Event {
				return bot.Event{Kind: bot.EventRerun, DeliveryID: "r1", Actor: "alice", PR: bot.PR{Host: "github", Repo: p.Repo, Number: p.Number}}
			},
			setup: func(h *fakeHost, _ *fakePreviewer, r *gitRepo) {
				h.writers["alice"] = true
				h.resolved = bot.PR{BaseRef: "main", BaseSHA: r.Base, HeadSHA: r.Head}
			},
			want:     []bot.State{bot.StateInProgress, bot.StateSuccess},
			comments: 1, previews: 1,
		},
		{
			name: "a run without a base SHA resolves it from the host",
			pr: func(r *gitRepo) bot.PR {
				p := pr("acme/shop", 3, r.Head)
				p.BaseSHA = ""
				return p
			},
			setup: func(h *fakeHost, _ *fakePreviewer, r *gitRepo) {
				h.resolved = bot.PR{BaseRef: "main", BaseSHA: r.Base, HeadSHA: r.Head}
			},
			want:     []bot.State{bot.StateInProgress, bot.StateSuccess},
			comments: 1, previews: 1,
		},
		{
			name: "rerun by a reader does nothing",
			ev: func(p bot.PR) bot.Event {
				return bot.Event{Kind: bot.EventRerun, DeliveryID: "r1", Actor: "mallory", PR: bot.PR{Host: "github", Repo: p.Repo, Number: p.Number}}
			},
		},
		{
			name: "a missing commit ends in an error status after the last attempt",
			pr: func(r *gitRepo) bot.PR {
				p := pr("acme/shop", 3, strings.Repeat("e", 40))
				p.BaseSHA = r.Base
				return p
			},
			mod:  func(o *server.Options) { o.Queue.MaxAttempts = 1 },
			want: []bot.State{bot.StateInProgress, bot.StateError},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := newGitRepo(t)
			host := newFakeHost("github", repo.URL)
			p := newFakePreviewer()
			if tt.setup != nil {
				tt.setup(host, p, repo)
			}
			srv := startServer(t, host, p, tt.mod)
			thePR := pr("acme/shop", 3, repo.Head)
			thePR.BaseSHA = repo.Base
			if tt.pr != nil {
				thePR = tt.pr(repo)
			}
			ev := bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: thePR}
			if tt.ev != nil {
				ev = tt.ev(thePR)
			}
			if code := srv.post(t, ev); code != 202 {
				t.Fatalf("delivery: %d", code)
			}
			eventually(t, "the job to finish", func() bool {
				js := jobStates(t, srv.Queue)
				return len(js) == 1 && (js[0].State == rivertype.JobStateCompleted || js[0].State == rivertype.JobStateDiscarded)
			})
			var got []bot.State
			for _, s := range host.Statuses() {
				got = append(got, s.Status.State)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if n := len(host.Comments()); n != tt.comments {
				t.Errorf("%d comments, want %d", n, tt.comments)
			}
			if n := len(p.calls); n != tt.previews {
				t.Errorf("%d previews, want %d", n, tt.previews)
			}
			if tt.name == "a missing commit ends in an error status after the last attempt" {
				last := host.Statuses()[len(host.Statuses())-1].Status
				if !strings.Contains(last.Summary, "gave up after 1 attempts") || !strings.Contains(last.Summary, "eeeeeee") {
					t.Errorf("error status does not explain: %+v", last)
				}
			}
		})
	}
}

// flakyPreviewer fails its first n calls.
type flakyPreviewer struct {
	*fakePreviewer
	mu sync.Mutex
	n  int
}

func (f *flakyPreviewer) Preview(ctx context.Context, req preview.Request) (*diffing.Report, error) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		return nil, errors.New("transient: API server timeout")
	}
	return f.fakePreviewer.Preview(ctx, req)
}

// TestRetry: a failed attempt is retried by the queue (backoff) and then succeeds;
// the check stays in progress in between and is completed once.
func TestRetry(t *testing.T) {
	repo := newGitRepo(t)
	host := newFakeHost("github", repo.URL)
	fp := &flakyPreviewer{fakePreviewer: newFakePreviewer(), n: 1}
	srv := startServer(t, host, nil, func(o *server.Options) { o.Previewer = fp })
	thePR := pr("acme/shop", 3, repo.Head)
	thePR.BaseSHA = repo.Base
	srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: thePR})
	eventually(t, "the retried job to complete", func() bool {
		js := jobStates(t, srv.Queue)
		return len(js) == 1 && js[0].State == rivertype.JobStateCompleted
	})
	want := []bot.State{bot.StateInProgress, bot.StateInProgress, bot.StateSuccess}
	if diff := cmp.Diff(want, host.states(repo.Head)); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if n := len(host.Comments()); n != 1 {
		t.Errorf("%d comments, want 1", n)
	}
}
