package server_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/diffing"
)

// driftIssues records the fake host's drift issue upserts.
var driftIssues sync.Map // *fakeHost → *[]bot.DriftIssue

func (f *fakeHost) UpsertDriftIssue(_ context.Context, repo bot.PR, want bot.DriftIssue) (bot.IssueRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, _ := driftIssues.LoadOrStore(f, &[]bot.DriftIssue{})
	calls := v.(*[]bot.DriftIssue)
	*calls = append(*calls, want)
	return bot.IssueRef{Number: 1, Open: want.Drift}, nil
}

func (f *fakeHost) driftCalls() []bot.DriftIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := driftIssues.Load(f)
	if !ok {
		return nil
	}
	return append([]bot.DriftIssue(nil), *v.(*[]bot.DriftIssue)...)
}

// fakeDrift is a drift engine: each run reports the commit it was given with
// objects drifting per target; a run waits for release when block is set, not
// honouring cancellation (the worst case), and the most runs at once are kept.
type fakeDrift struct {
	mu       sync.Mutex
	objects  int
	block    chan struct{}
	started  chan string
	running  int
	maxAtNow int
	refs     []string
}

func (d *fakeDrift) run(_ context.Context, req preview.DriftRequest) (*diffing.DriftReport, error) {
	d.mu.Lock()
	d.running++
	d.maxAtNow = max(d.maxAtNow, d.running)
	d.refs = append(d.refs, req.Ref)
	block, n := d.block, d.objects
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.running--
		d.mu.Unlock()
	}()
	if d.started != nil {
		d.started <- req.Ref
	}
	if block != nil {
		<-block
	}
	return &diffing.DriftReport{Ref: req.Ref, Commit: req.Ref, Drifted: n > 0, Targets: []diffing.DriftTarget{
		{Name: "shop", Cluster: "prod", LiveChecked: true, DriftedObjects: n},
		{Name: "web", Cluster: "prod", LiveChecked: true},
	}}, nil
}

func (d *fakeDrift) set(objects int, block chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.objects, d.block = objects, block
}

func pushEvent(delivery, head string) bot.Event {
	return bot.Event{Kind: bot.EventDrift, DeliveryID: delivery, PR: bot.PR{Host: "github", Repo: "acme/shop", BaseRef: "main", HeadSHA: head}}
}

// driftDone waits until every drift run is finished and returns their states.
func driftDone(t *testing.T, s *running) []rivertype.JobState {
	t.Helper()
	var states []rivertype.JobState
	eventually(t, "drift runs to finish", func() bool {
		rows, err := s.Queue.Jobs(context.Background(), jobs.DriftKind)
		if err != nil {
			t.Fatal(err)
		}
		states = nil
		for _, r := range rows {
			states = append(states, r.State)
			if r.State != rivertype.JobStateCompleted && r.State != rivertype.JobStateCancelled && r.State != rivertype.JobStateDiscarded {
				return false
			}
		}
		return len(rows) > 0
	})
	return states
}

func metricsText(t *testing.T, s *running) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// shortDriftWait makes a drift run wait 100 ms for the one before it, for
// the test's duration.
func shortDriftWait(t *testing.T) {
	old := jobs.DriftWait
	jobs.DriftWait = 100 * time.Millisecond
	t.Cleanup(func() { jobs.DriftWait = old })
}

func TestDriftReportOnPush(t *testing.T) {
	shortDriftWait(t)
	repo := newGitRepo(t)
	repo.push(t)
	host := newFakeHost("github", repo.URL)
	d := &fakeDrift{objects: 2}
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.Drift = server.DriftOptions{Enabled: true, Run: d.run}
	})
	if code := srv.post(t, pushEvent("p1", repo.Head)); code != 202 {
		t.Fatalf("push: %d", code)
	}
	driftDone(t, srv)
	calls := host.driftCalls()
	if len(calls) != 1 || !calls[0].Drift || calls[0].Title != "driftpreview: live drift on main" ||
		!strings.Contains(calls[0].Body, "`"+repo.Head[:7]+"`") {
		t.Fatalf("issue upserts %+v, want one with drift at %s", calls, repo.Head[:7])
	}
	// The run checked the branch's head as fetched into the mirror.
	if d.refs[0] != repo.Head {
		t.Fatalf("drift ran on %s, want the branch head %s", d.refs[0], repo.Head)
	}
	m := metricsText(t, srv)
	for _, want := range []string{
		`driftpreview_drift_objects{cluster="prod",repo="github/acme/shop",target="shop"} 2`,
		`driftpreview_drift_objects{cluster="prod",repo="github/acme/shop",target="web"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The same delivery again, and the same commit in another delivery, run nothing.
	srv.post(t, pushEvent("p1", repo.Head))
	if code := srv.post(t, pushEvent("p1-again", repo.Head)); code != 200 {
		t.Fatalf("same commit again: %d, want 200 (duplicate)", code)
	}
	// In sync: the issue is asked to close, the gauge follows, and a target
	// that is gone loses its series.
	d.set(0, nil)
	head2 := repo.commit(t, "cm.yaml", "d")
	repo.push(t)
	srv.post(t, pushEvent("p2", head2))
	driftDone(t, srv)
	calls = host.driftCalls()
	if len(calls) != 2 || calls[1].Drift {
		t.Fatalf("issue upserts %+v, want a second one without drift", calls)
	}
	if m := metricsText(t, srv); !strings.Contains(m, `driftpreview_drift_objects{cluster="prod",repo="github/acme/shop",target="shop"} 0`) {
		t.Errorf("gauge not reset:\n%s", m)
	}
}

// Pushes while a run is running: the older run is cancelled and never posts,
// the newer waits for it, so at most one run per repository runs at a time
// and the newest wins.
func TestDriftNewestWinsOneAtATime(t *testing.T) {
	shortDriftWait(t)
	repo := newGitRepo(t)
	repo.push(t)
	host := newFakeHost("github", repo.URL)
	release := make(chan struct{})
	d := &fakeDrift{objects: 1, block: release, started: make(chan string, 10)}
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.Drift = server.DriftOptions{Enabled: true, Run: d.run}
		o.Queue.MaxWorkers = 4
	})
	srv.post(t, pushEvent("a", repo.Base))
	<-d.started
	// Two more pushes while the first run is stuck.
	head2 := repo.commit(t, "cm.yaml", "e")
	repo.push(t)
	srv.post(t, pushEvent("b", head2))
	srv.post(t, pushEvent("c", head2+"")) // same commit, another delivery: one run
	time.Sleep(500 * time.Millisecond)    // the newer run snoozes meanwhile
	if got := host.driftCalls(); len(got) != 0 {
		t.Fatalf("posted while the first run is stuck: %+v", got)
	}
	d.set(1, nil)
	close(release)
	driftDone(t, srv)
	calls := host.driftCalls()
	if len(calls) != 1 {
		t.Fatalf("%d issue upserts, want 1 (the newest run's)", len(calls))
	}
	if !strings.Contains(calls[0].Body, "`"+head2[:7]+"`") {
		t.Fatalf("the post reports %q, want the newest head %s", calls[0].Body, head2[:7])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.maxAtNow != 1 {
		t.Fatalf("%d drift runs at once, want 1", d.maxAtNow)
	}
}

func TestDriftScheduleAndOff(t *testing.T) {
	repo := newGitRepo(t)
	repo.push(t)
	host := newFakeHost("github", repo.URL)
	d := &fakeDrift{objects: 1}
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.Drift = server.DriftOptions{Enabled: true, Interval: time.Hour, Run: d.run}
	})
	ctx := context.Background()
	if n, err := srv.ScheduleDrift(ctx); err != nil || n != 0 {
		t.Fatalf("schedule before any push: %d %v", n, err)
	}
	srv.post(t, pushEvent("p1", repo.Head))
	driftDone(t, srv)
	// The pushed repository is on the schedule: one run per period, whatever
	// the number of ticks (or replicas).
	for i, want := range []int{1, 0} {
		if n, err := srv.ScheduleDrift(ctx); err != nil || n != want {
			t.Fatalf("schedule %d: %d %v, want %d", i, n, err, want)
		}
	}
	driftDone(t, srv)
	if n := len(host.driftCalls()); n != 2 {
		t.Fatalf("%d issue upserts, want 2 (push, schedule)", n)
	}

	// Drift off: pushes are ignored.
	host2 := newFakeHost("github", repo.URL)
	off := startServer(t, host2, newFakePreviewer(), nil)
	if code := off.post(t, pushEvent("p1", repo.Head)); code != 200 {
		t.Fatalf("push with drift off: %d, want 200 ignored", code)
	}
	// An interval without drift reports is refused.
	if _, err := server.New(ctx, server.Options{Hosts: map[string]server.Host{"github": host2}, Previewer: newFakePreviewer(),
		Drift: server.DriftOptions{Interval: time.Hour}, WorkDir: t.TempDir(),
		Queue: queue.Options{Driver: queue.DriverSQLite, DSN: filepath.Join(t.TempDir(), "q.db")}}); err == nil {
		t.Fatal("an interval with drift off was accepted")
	}
}
