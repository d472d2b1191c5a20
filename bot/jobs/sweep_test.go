package jobs_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/diffing"
)

// crashingHost records statuses and panics when asked for clone credentials, which
// a job does right after setting its status in progress: River recovers the panic
// and, on the last attempt, discards the job without any of the job's code running
// again, as it does for a process killed mid-job.
type crashingHost struct {
	mu       sync.Mutex
	statuses []bot.Status
	failSet  int // fail this many SetStatus calls
}

func (h *crashingHost) ResolvePR(_ context.Context, pr bot.PR) (bot.PR, error) { return pr, nil }
func (h *crashingHost) CanRerun(context.Context, bot.PR, string) (bool, error) { return true, nil }
func (h *crashingHost) UpsertComment(context.Context, bot.PR, string, []string) error {
	return errors.New("crashingHost: no comment expected")
}

func (h *crashingHost) SetStatus(_ context.Context, pr bot.PR, s bot.Status) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failSet > 0 && s.State != bot.StateInProgress {
		h.failSet--
		return errors.New("crashingHost: status API down")
	}
	if pr.HeadSHA != "h1" || pr.Repo != "acme/shop" || pr.Number != 3 {
		return errors.New("crashingHost: status for the wrong PR " + pr.Repo + "@" + pr.HeadSHA)
	}
	s.StartedAt, s.Summary, s.DetailsURL = time.Time{}, "", ""
	h.statuses = append(h.statuses, s)
	return nil
}

func (h *crashingHost) FetchSpec(context.Context, bot.PR) (bot.FetchSpec, error) {
	panic("crashingHost: the job stops here")
}

func (h *crashingHost) MaxCommentChars() int { return 65536 }

func (h *crashingHost) got() []bot.Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]bot.Status(nil), h.statuses...)
}

type noPreview struct{}

func (noPreview) Preview(context.Context, preview.Request) (*diffing.Report, error) {
	return nil, errors.New("noPreview: not reached")
}

// TestSweep runs a job that stops after setting its status in progress, on its
// only attempt, then sweeps: the status is completed as an error exactly once,
// unless the PR moved on (a newer head, a close) or a later job wrote on the
// same commit.
func TestSweep(t *testing.T) {
	inProgress := bot.Status{State: bot.StateInProgress, Title: "Previewing b0..h1"}
	stopped := bot.Status{State: bot.StateError, Title: jobs.FailedTitle}
	tests := []struct {
		name string
		// after runs once the job was discarded, before the sweep.
		after   func(ctx context.Context, q *queue.Queue, job int64) error
		failSet int
		want    []bot.Status
	}{
		{name: "same head: completed as an error", want: []bot.Status{inProgress, stopped}},
		{name: "status API down once: completed by the next sweep", failSet: 1, want: []bot.Status{inProgress, stopped}},
		{
			name: "superseded by a newer head: left alone",
			after: func(ctx context.Context, q *queue.Queue, _ int64) error {
				return q.SetHead(ctx, "github/acme/shop#3", "h2", queue.PROpen)
			},
			want: []bot.Status{inProgress},
		},
		{
			name: "closed: left alone",
			after: func(ctx context.Context, q *queue.Queue, _ int64) error {
				return q.SetState(ctx, "github/acme/shop#3", queue.PRClosed)
			},
			want: []bot.Status{inProgress},
		},
		{
			name: "a later job wrote on the same commit: left alone",
			after: func(ctx context.Context, q *queue.Queue, job int64) error {
				return q.StatusStarted(ctx, job+1000, "github/acme/shop#3", "h1", time.Now(), []byte(`{}`))
			},
			want: []bot.Status{inProgress},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			host := &crashingHost{failSet: tt.failSet}
			workers := river.NewWorkers()
			qopts := queue.DefaultOptions()
			qopts.DSN = filepath.Join(t.TempDir(), "queue.db")
			qopts.MaxAttempts = 1
			qopts.FetchPollInterval = 20 * time.Millisecond
			qopts.Workers = workers
			q, err := queue.Open(ctx, qopts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(q.Close)
			w := jobs.NewWorker(map[string]jobs.Host{"github": host}, noPreview{}, jobs.NewMirror(t.TempDir()), q, nil, jobs.DefaultOptions())
			river.AddWorker(workers, w)
			if err := q.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = q.Stop(context.Background()) })

			pr := bot.PR{Host: "github", Repo: "acme/shop", Number: 3, BaseSHA: "b0", HeadSHA: "h1"}
			if err := q.SetHead(ctx, jobs.PRKey(pr), pr.HeadSHA, queue.PROpen); err != nil {
				t.Fatal(err)
			}
			args := jobs.NewArgs(bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: pr})
			id, _, err := q.Insert(ctx, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				job, err := q.Job(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if job.State == rivertype.JobStateDiscarded {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job not discarded: %s", job.State)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if tt.after != nil {
				if err := tt.after(ctx, q, id); err != nil {
					t.Fatal(err)
				}
			}
			// Sweep until nothing is left: a failed post is retried, a settled
			// status is never posted again.
			total := 0
			for range 3 {
				n, err := w.Sweep(ctx, q)
				if err != nil && tt.failSet == 0 {
					t.Errorf("Sweep: %v", err)
				}
				total += n
			}
			if diff := cmp.Diff(tt.want, host.got()); diff != "" {
				t.Errorf("statuses (-want +got):\n%s", diff)
			}
			if want := len(tt.want) - 1; total != want {
				t.Errorf("Sweep completed %d statuses, want %d", total, want)
			}
		})
	}
}
