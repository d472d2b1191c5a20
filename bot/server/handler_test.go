package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

const (
	shaBase = "1111111111111111111111111111111111111111"
	shaA    = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	shaB    = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// newTestServer opens a server over a SQLite queue in a temp dir; its workers are not
// started, so queued jobs stay visible.
func newTestServer(t *testing.T, host *fakeHost, p *fakePreviewer, mod func(*server.Options)) *server.Server {
	t.Helper()
	dir := t.TempDir()
	opts := server.Options{
		Hosts:     map[string]server.Host{host.name: host},
		Previewer: p,
		WorkDir:   filepath.Join(dir, "mirrors"),
		Queue:     queue.Options{Driver: queue.DriverSQLite, DSN: filepath.Join(dir, "queue.db"), FetchPollInterval: 50 * time.Millisecond},
		Jobs:      jobs.DefaultOptions(),
		Handler:   server.HandlerOptions{Repos: []string{"acme/*"}},
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(s.Queue.Close)
	return s
}

func pr(repo string, number int, head string) bot.PR {
	return bot.PR{Host: "github", Repo: repo, Number: number, BaseRef: "main", BaseSHA: shaBase, HeadSHA: head}
}

type delivery struct {
	token string // X-Fake-Token; "good" authenticates
	body  []byte // raw body; nil means the JSON of ev
	ev    bot.Event
}

type answer struct {
	Code   int
	Status string
}

func send(t *testing.T, h http.Handler, path string, d delivery) answer {
	t.Helper()
	body := d.body
	if body == nil {
		var err error
		if body, err = json.Marshal(d.ev); err != nil {
			t.Fatal(err)
		}
	}
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	if d.token != "" {
		req.Header.Set("X-Fake-Token", d.token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct{ Status string }
	_ = json.Unmarshal(rec.Body.Bytes(), &resp)
	return answer{Code: rec.Code, Status: resp.Status}
}

type jobState struct {
	Head  string
	Rerun bool
	State rivertype.JobState
}

func jobStates(t *testing.T, q *queue.Queue) []jobState {
	t.Helper()
	rows, err := q.Jobs(context.Background(), jobs.Kind)
	if err != nil {
		t.Fatal(err)
	}
	var out []jobState
	for _, r := range rows {
		var a jobs.Args
		if err := json.Unmarshal(r.EncodedArgs, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, jobState{Head: a.PR.HeadSHA, Rerun: a.Rerun, State: r.State})
	}
	return out
}

func TestWebhookHandler(t *testing.T) {
	run := func(id string, p bot.PR) bot.Event { return bot.Event{Kind: bot.EventRun, DeliveryID: id, PR: p} }
	tests := []struct {
		name       string
		deliveries []delivery
		want       []answer
		wantJobs   []jobState
		wantHead   string // recorded head of acme/shop#1, "" to skip
		wantState  string
	}{
		{
			name:       "bad signature queues nothing",
			deliveries: []delivery{{token: "bad", ev: run("d1", pr("acme/shop", 1, shaA))}},
			want:       []answer{{401, "unauthorized"}},
		},
		{
			name:       "missing signature queues nothing",
			deliveries: []delivery{{ev: run("d1", pr("acme/shop", 1, shaA))}},
			want:       []answer{{401, "unauthorized"}},
		},
		{
			name:       "garbage body is a bad request",
			deliveries: []delivery{{token: "good", body: []byte("{not json")}},
			want:       []answer{{400, "bad_request"}},
		},
		{
			name: "same delivery twice gives one job",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
			},
			want:     []answer{{202, "queued"}, {200, "duplicate"}},
			wantJobs: []jobState{{Head: shaA, State: rivertype.JobStateAvailable}},
			wantHead: shaA, wantState: queue.PROpen,
		},
		{
			name: "another delivery for the same head is deduped by unique args",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: run("d2", pr("acme/shop", 1, shaA))},
			},
			want:     []answer{{202, "queued"}, {200, "duplicate"}},
			wantJobs: []jobState{{Head: shaA, State: rivertype.JobStateAvailable}},
		},
		{
			name:       "unknown event is a 2xx no-op",
			deliveries: []delivery{{token: "good", ev: bot.Event{Kind: bot.EventIgnore, DeliveryID: "d1", Reason: `event "star" is not handled`}}},
			want:       []answer{{200, "ignored"}},
		},
		{
			name:       "repository outside the allowlist is ignored",
			deliveries: []delivery{{token: "good", ev: run("d1", pr("evil/shop", 1, shaA))}},
			want:       []answer{{200, "not_allowed"}},
		},
		{
			name: "a push supersedes the queued job",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: run("d2", pr("acme/shop", 1, shaB))},
			},
			want:     []answer{{202, "queued"}, {202, "queued"}},
			wantJobs: []jobState{{Head: shaA, State: rivertype.JobStateCancelled}, {Head: shaB, State: rivertype.JobStateAvailable}},
			wantHead: shaB, wantState: queue.PROpen,
		},
		{
			name: "other pull requests are not superseded",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: run("d2", pr("acme/shop", 2, shaB))},
			},
			want:     []answer{{202, "queued"}, {202, "queued"}},
			wantJobs: []jobState{{Head: shaA, State: rivertype.JobStateAvailable}, {Head: shaB, State: rivertype.JobStateAvailable}},
		},
		{
			name: "close cancels pending jobs",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: bot.Event{Kind: bot.EventClose, DeliveryID: "d2", PR: pr("acme/shop", 1, shaA)}},
			},
			want:     []answer{{202, "queued"}, {200, "cancelled"}},
			wantJobs: []jobState{{Head: shaA, State: rivertype.JobStateCancelled}},
			wantHead: shaA, wantState: queue.PRClosed,
		},
		{
			name: "each rerun delivery runs again",
			deliveries: []delivery{
				{token: "good", ev: run("d1", pr("acme/shop", 1, shaA))},
				{token: "good", ev: bot.Event{Kind: bot.EventRerun, DeliveryID: "d2", PR: bot.PR{Host: "github", Repo: "acme/shop", Number: 1}, Actor: "alice"}},
				{token: "good", ev: bot.Event{Kind: bot.EventRerun, DeliveryID: "d3", PR: bot.PR{Host: "github", Repo: "acme/shop", Number: 1}, Actor: "alice"}},
				{token: "good", ev: bot.Event{Kind: bot.EventRerun, DeliveryID: "d3", PR: bot.PR{Host: "github", Repo: "acme/shop", Number: 1}, Actor: "alice"}},
			},
			want: []answer{{202, "queued"}, {202, "queued"}, {202, "queued"}, {200, "duplicate"}},
			wantJobs: []jobState{
				{Head: shaA, State: rivertype.JobStateAvailable},
				{Rerun: true, State: rivertype.JobStateAvailable},
				{Rerun: true, State: rivertype.JobStateAvailable},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := newFakeHost("github", "file:///nonexistent")
			s := newTestServer(t, host, newFakePreviewer(), nil)
			var got []answer
			for _, d := range tt.deliveries {
				got = append(got, send(t, s.Handler(), "/webhooks/github", d))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantJobs, jobStates(t, s.Queue)); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if tt.wantHead != "" {
				sha, state, _, err := s.Queue.Head(context.Background(), "github/acme/shop#1")
				if err != nil {
					t.Fatal(err)
				}
				if sha != tt.wantHead || state != tt.wantState {
					t.Errorf("head record = %s %s, want %s %s", sha, state, tt.wantHead, tt.wantState)
				}
			}
		})
	}
}

func TestWebhookBodyCap(t *testing.T) {
	host := newFakeHost("github", "file:///nonexistent")
	s := newTestServer(t, host, newFakePreviewer(), nil)
	ev, _ := json.Marshal(bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: pr("acme/shop", 1, shaA)})
	tests := []struct {
		name string
		size int
		want answer
	}{
		{"exactly the cap is read (and then not understood)", server.MaxBodyBytes, answer{400, "bad_request"}},
		{"one byte over the cap", server.MaxBodyBytes + 1, answer{413, "too_large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := append(append([]byte{}, ev...), bytes.Repeat([]byte(" "), tt.size-len(ev))...)
			body[len(body)-1] = 'x' // valid JSON padded, then made invalid at the end
			got := send(t, s.Handler(), "/webhooks/github", delivery{token: "good", body: body})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if j := jobStates(t, s.Queue); len(j) != 0 {
		t.Errorf("jobs queued: %v", j)
	}
}

func TestUnknownHostPath(t *testing.T) {
	s := newTestServer(t, newFakeHost("github", ""), newFakePreviewer(), nil)
	got := send(t, s.Handler(), "/webhooks/gitlab", delivery{token: "good", ev: bot.Event{Kind: bot.EventRun}})
	if got.Code != http.StatusNotFound {
		t.Errorf("code = %d, want 404", got.Code)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

func TestHealthReadyMetrics(t *testing.T) {
	host := newFakeHost("github", "file:///nonexistent")
	s := newTestServer(t, host, newFakePreviewer(), nil)
	h := s.Handler()
	send(t, h, "/webhooks/github", delivery{token: "good", ev: bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: pr("acme/shop", 1, shaA)}})
	send(t, h, "/webhooks/github", delivery{token: "bad", ev: bot.Event{Kind: bot.EventRun, DeliveryID: "d2", PR: pr("acme/shop", 1, shaA)}})
	send(t, h, "/webhooks/github", delivery{token: "good", ev: bot.Event{Kind: bot.EventIgnore, DeliveryID: "d3"}})
	s.Metrics.JobFinished(jobs.OutcomeFailure, 3*time.Second)
	drift := diffing.Finding{Rule: diffing.RuleLiveDrift, Key: render.ObjectKey{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}, Path: "/data/A"}
	drift2 := drift
	drift2.Path = "/data/B"
	s.Metrics.ReportPosted(pr("acme/shop", 1, shaA), &diffing.Report{
		Findings: []diffing.Finding{{Rule: diffing.RuleConfigError}},
		Targets:  []diffing.TargetReport{{Name: "shop-prod", Findings: []diffing.Finding{drift, drift2, {Rule: diffing.RuleDataLoss}}}},
	})

	if code, body := get(t, h, "/healthz"); code != 200 || !strings.Contains(body, `"ok"`) {
		t.Errorf("/healthz = %d %s", code, body)
	}
	if code, body := get(t, h, "/readyz"); code != 200 {
		t.Errorf("/readyz = %d %s", code, body)
	}
	// Metrics name repositories and targets: never on the webhook listener.
	if code, _ := get(t, h, "/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics on the webhook listener = %d, want 404", code)
	}
	code, metrics := get(t, s.MetricsHandler(), "/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`driftpreview_webhook_deliveries_total{host="github",result="queued"} 1`,
		`driftpreview_webhook_deliveries_total{host="github",result="unauthorized"} 1`,
		`driftpreview_webhook_deliveries_total{host="github",result="ignored"} 1`,
		`driftpreview_jobs_total{outcome="failure"} 1`,
		`driftpreview_job_duration_seconds_bucket{le="5"} 1`,
		`driftpreview_job_duration_seconds_bucket{le="2.5"} 0`,
		`driftpreview_findings_total{rule="live-drift"} 2`,
		`driftpreview_findings_total{rule="data-loss"} 1`,
		`driftpreview_findings_total{rule="config-error"} 1`,
		`driftpreview_live_drift_objects{repo="github/acme/shop",target="shop-prod"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The store going away makes the server unready, but still healthy.
	s.Queue.Close()
	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after close = %d %s, want 503", code, body)
	}
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Errorf("/healthz after close = %d, want 200", code)
	}
}
