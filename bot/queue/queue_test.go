package queue_test

import (
	"context"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
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
	q, _ := openWith(t, driver)
	return q
}

// openWith is open that also returns the options, to open the same queue again.
func openWith(t *testing.T, driver string) (*queue.Queue, queue.Options) {
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
	return q, opts
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

// TestClaimOrphans: statuses whose job was cancelled (or discarded) are claimed by
// exactly one of two queues on the same database; settled ones are not claimed
// again; a status overwritten later on the same commit is marked Overtaken.
func TestClaimOrphans(t *testing.T) {
	for _, driver := range []string{queue.DriverSQLite, queue.DriverPostgres} {
		t.Run(driver, func(t *testing.T) {
			ctx := context.Background()
			q, opts := openWith(t, driver)
			q2, err := queue.Open(ctx, opts)
			if err != nil {
				t.Fatalf("second Open: %v", err)
			}
			t.Cleanup(q2.Close)

			// a and b are cancelled; c and d stay queued. d wrote on a's commit after a.
			id := map[string]int64{}
			for _, a := range []testArgs{{"a", "pr-x"}, {"b", "pr-x"}, {"c", "pr-y"}, {"d", "pr-z"}} {
				jid, _, err := q.Insert(ctx, a, nil)
				if err != nil {
					t.Fatal(err)
				}
				id[a.Key] = jid
			}
			for _, s := range []struct{ key, pr, sha string }{{"a", "p1", "s1"}, {"b", "p1", "s0"}, {"c", "p2", "s2"}, {"d", "p1", "s1"}} {
				if err := q.StatusStarted(ctx, id[s.key], s.pr, s.sha, time.Unix(100, 0), []byte(`{"k":"`+s.key+`"}`)); err != nil {
					t.Fatal(err)
				}
			}
			// A row whose job does not exist (River deleted it) is settled, not claimed.
			if err := q.StatusStarted(ctx, 999999, "p9", "s9", time.Unix(100, 0), nil); err != nil {
				t.Fatal(err)
			}
			if _, err := q.CancelTagged(ctx, "pr-x", nil); err != nil {
				t.Fatal(err)
			}

			type got struct {
				ID        int64
				State     rivertype.JobState
				PR, SHA   string
				Payload   string
				Overtaken bool
				Started   int64
			}
			conv := func(os []queue.Orphan) []got {
				var out []got
				for _, o := range os {
					out = append(out, got{o.JobID, o.JobState, o.PR, o.HeadSHA, string(o.Payload), o.Overtaken, o.StartedAt.Unix()})
				}
				return out
			}
			// Both queues claim at once; together they get each orphan once.
			var (
				wg         sync.WaitGroup
				res1, res2 []queue.Orphan
				err1, err2 error
			)
			wg.Add(2)
			go func() { defer wg.Done(); res1, err1 = q.ClaimOrphans(ctx, time.Hour) }()
			go func() { defer wg.Done(); res2, err2 = q2.ClaimOrphans(ctx, time.Hour) }()
			wg.Wait()
			if err1 != nil || err2 != nil {
				t.Fatalf("ClaimOrphans: %v, %v", err1, err2)
			}
			all := append(conv(res1), conv(res2)...)
			sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
			want := []got{
				{id["a"], rivertype.JobStateCancelled, "p1", "s1", `{"k":"a"}`, true, 100},
				{id["b"], rivertype.JobStateCancelled, "p1", "s0", `{"k":"b"}`, false, 100},
			}
			if diff := cmp.Diff(want, all); diff != "" {
				t.Errorf("claimed orphans (-want +got):\n%s", diff)
			}
			// Claimed: not claimed again until released or the lease lapses.
			claim := func(lease time.Duration) []int64 {
				t.Helper()
				os, err := q2.ClaimOrphans(ctx, lease)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for _, o := range os {
					ids = append(ids, o.JobID)
				}
				return ids
			}
			if diff := cmp.Diff([]int64(nil), claim(time.Hour)); diff != "" {
				t.Errorf("claim while claimed (-want +got):\n%s", diff)
			}
			if err := q.ReleaseOrphan(ctx, id["b"]); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{id["b"]}, claim(time.Nanosecond)); diff != "" {
				t.Errorf("claim after release (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int64{id["b"]}, claim(time.Hour)); diff != "" {
				t.Errorf("claim after the lease lapsed (-want +got):\n%s", diff)
			}
			if err := q.StatusFinished(ctx, id["b"]); err != nil {
				t.Fatal(err)
			}
			if err := q.SkipOrphan(ctx, id["a"]); err != nil {
				t.Fatal(err)
			}
			if err := q.ReleaseOrphan(ctx, id["a"]); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64(nil), claim(time.Nanosecond)); diff != "" {
				t.Errorf("claim after settling (-want +got):\n%s", diff)
			}
			// A new attempt of a settled job records a new in-progress status.
			if err := q.StatusStarted(ctx, id["b"], "p1", "s3", time.Unix(200, 0), nil); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{id["b"]}, claim(time.Hour)); diff != "" {
				t.Errorf("claim after a new attempt (-want +got):\n%s", diff)
			}
		})
	}
}

// prJobArgs stores a pull request as "pr", as jobs.Args does.
type prJobArgs struct {
	PR  bot.PR `json:"pr"`
	Tag string `json:"tag"`
}

func (prJobArgs) Kind() string { return "test_pr_job" }

func (a prJobArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Tags: []string{a.Tag}, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type noopPRWorker struct {
	river.WorkerDefaults[prJobArgs]
}

func (noopPRWorker) Work(context.Context, *river.Job[prJobArgs]) error { return nil }

// TestSupersede: a push cancels the PR's jobs at other commits, keeps the ones at
// the new base..head and leaves other PRs alone; CancelPR cancels the rest.
func TestSupersede(t *testing.T) {
	ctx := context.Background()
	opts := queue.DefaultOptions()
	opts.DSN = filepath.Join(t.TempDir(), "queue.db")
	workers := river.NewWorkers()
	river.AddWorker(workers, noopPRWorker{})
	opts.Workers = workers
	q, err := queue.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	var ids []int64
	for _, a := range []prJobArgs{
		{bot.PR{BaseSHA: "b1", HeadSHA: "h1"}, "pr-1"},
		{bot.PR{BaseSHA: "b1", HeadSHA: "h2"}, "pr-1"},
		{bot.PR{BaseSHA: "b2", HeadSHA: "h2"}, "pr-1"},
		{bot.PR{BaseSHA: "b1", HeadSHA: "h1"}, "pr-2"},
	} {
		id, _, err := q.Insert(ctx, a, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	got, err := q.Supersede(ctx, "pr-1", "b1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ids[0], ids[2]}, got); diff != "" {
		t.Errorf("Supersede (-want +got):\n%s", diff)
	}
	if got, err = q.CancelPR(ctx, "pr-1"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{ids[1]}, got); diff != "" {
		t.Errorf("CancelPR (-want +got):\n%s", diff)
	}
}
