package queue_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/queue/queuetest"
)

type testArgs struct {
	Key string `json:"key" river:"unique"`
	PR  string `json:"pr"`
}

func (testArgs) Kind() string { return "test_job" }

func (a testArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Tags: []string{a.PR}, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type noopWorker struct{ river.WorkerDefaults[testArgs] }

func (noopWorker) Work(context.Context, *river.Job[testArgs]) error { return nil }

// open opens a queue of each driver; Postgres runs on a throwaway server.
func open(t *testing.T, driver string) *queue.Queue {
	t.Helper()
	opts := queue.DefaultOptions()
	opts.Driver = driver
	opts.DeliveryTTL = time.Hour
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	opts.Workers = workers
	if driver == queue.DriverSQLite {
		opts.DSN = filepath.Join(t.TempDir(), "sub", "queue.db")
	} else {
		opts.DSN = queuetest.Postgres(t)
	}
	q, err := queue.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(q.Close)
	// Opening again runs the migrations again: they must be idempotent.
	q2, err := queue.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	q2.Close()
	return q
}

func TestQueue(t *testing.T) {
	for _, driver := range []string{queue.DriverSQLite, queue.DriverPostgres} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			q := open(t, driver)
			if err := q.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}

			// Deliveries: fresh once per host and ID; forgetting allows it again.
			var fresh []bool
			for _, d := range [][2]string{{"github", "d1"}, {"github", "d1"}, {"gitlab", "d1"}, {"github", "d2"}} {
				f, err := q.MarkDelivery(ctx, d[0], d[1])
				if err != nil {
					t.Fatal(err)
				}
				fresh = append(fresh, f)
			}
			if err := q.ForgetDelivery(ctx, "github", "d1"); err != nil {
				t.Fatal(err)
			}
			f, err := q.MarkDelivery(ctx, "github", "d1")
			if err != nil {
				t.Fatal(err)
			}
			fresh = append(fresh, f)
			if diff := cmp.Diff([]bool{true, false, true, true, true}, fresh); diff != "" {
				t.Errorf("MarkDelivery fresh (-want +got):\n%s", diff)
			}

			// Heads: upsert, state change keeps the SHA.
			if _, _, found, _ := q.Head(ctx, "pr1"); found {
				t.Error("head found before any was set")
			}
			for _, step := range []func() error{
				func() error { return q.SetHead(ctx, "pr1", "a", queue.PROpen) },
				func() error { return q.SetHead(ctx, "pr1", "b", queue.PROpen) },
				func() error { return q.SetState(ctx, "pr1", queue.PRClosed) },
			} {
				if err := step(); err != nil {
					t.Fatal(err)
				}
			}
			sha, state, found, err := q.Head(ctx, "pr1")
			if err != nil || !found || sha != "b" || state != queue.PRClosed {
				t.Errorf("Head = %q %q %v %v, want b closed", sha, state, found, err)
			}

			// Insert: unique by args; CancelTagged cancels the chosen unfinished jobs.
			var ids []int64
			var dups []bool
			for _, a := range []testArgs{{"k1", "pr-1"}, {"k1", "pr-1"}, {"k2", "pr-1"}, {"k3", "pr-2"}} {
				id, dup, err := q.Insert(ctx, a, nil)
				if err != nil {
					t.Fatal(err)
				}
				ids, dups = append(ids, id), append(dups, dup)
			}
			if diff := cmp.Diff([]bool{false, true, false, false}, dups); diff != "" {
				t.Errorf("Insert duplicates (-want +got):\n%s", diff)
			}
			if ids[0] != ids[1] {
				t.Errorf("duplicate insert returned job %d, want the existing %d", ids[1], ids[0])
			}
			cancelled, err := q.CancelTagged(ctx, "pr-1", func(r *rivertype.JobRow) bool { return r.ID != ids[2] })
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{ids[0]}, cancelled); diff != "" {
				t.Errorf("CancelTagged (-want +got):\n%s", diff)
			}
			rows, err := q.Jobs(ctx, "test_job")
			if err != nil {
				t.Fatal(err)
			}
			var states []rivertype.JobState
			for _, r := range rows {
				states = append(states, r.State)
			}
			want := []rivertype.JobState{rivertype.JobStateCancelled, rivertype.JobStateAvailable, rivertype.JobStateAvailable}
			if diff := cmp.Diff(want, states); diff != "" {
				t.Errorf("job states (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	tests := []struct {
		name string
		opts queue.Options
		want string
	}{
		{"no dsn", queue.Options{Driver: queue.DriverSQLite}, "opening queue: no DSN (queue.dsn in server.yaml)"},
		{"bad driver", queue.Options{Driver: "mysql", DSN: "x"}, `opening mysql queue: unknown driver "mysql" (want sqlite or postgres)`},
		{"rescue too short", queue.Options{DSN: "x", JobTimeout: time.Minute, RescueStuckJobsAfter: time.Second}, "opening queue: rescue-stuck-jobs-after (1s) must exceed the job timeout (1m0s)"},
		{"postgres dsn with password is not echoed", queue.Options{Driver: queue.DriverPostgres, DSN: "postgres://u:hunter22@[::1"}, "opening postgres queue: parsing the Postgres DSN failed (check queue.dsn)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := queue.Open(context.Background(), tt.opts)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Open error = %v, want %q", err, tt.want)
			}
		})
	}
}
