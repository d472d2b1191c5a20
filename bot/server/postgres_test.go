package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/queue/queuetest"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/diffing"
)

// Environment of a replica process started by TestTwoProcessesOnPostgres.
const (
	envReplicaDir   = "DRIFTPREVIEW_REPLICA_DIR"   // shared dir: run records and addresses
	envReplicaName  = "DRIFTPREVIEW_REPLICA_NAME"  // "a" or "b"
	envReplicaDSN   = "DRIFTPREVIEW_REPLICA_DSN"   // the shared Postgres
	envReplicaRepo  = "DRIFTPREVIEW_REPLICA_REPO"  // the git repository's clone URL
	envReplicaHeads = "DRIFTPREVIEW_REPLICA_HEADS" // JSON: head SHA → PR number
)

// runRecord is one side effect a replica's job had, written as its own file under
// <dir>/runs so the test can count, across both processes, what each job did.
type runRecord struct {
	Proc  string    `json:"proc"`
	Seq   int64     `json:"seq"`
	Kind  string    `json:"kind"` // "preview", "comment" or "status"
	PR    int       `json:"pr"`
	SHA   string    `json:"sha"`
	State bot.State `json:"state,omitempty"`
}

// recorder writes runRecords of one process.
type recorder struct {
	dir, proc string
	seq       atomic.Int64
}

func (r *recorder) record(rec runRecord) error {
	rec.Proc, rec.Seq = r.proc, r.seq.Add(1)
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	// Written aside and renamed, so a reader never sees half a record.
	name := filepath.Join(r.dir, fmt.Sprintf("%s-%06d.json", rec.Proc, rec.Seq))
	if err := os.WriteFile(name+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("recording %s: %w", rec.Kind, err)
	}
	return os.Rename(name+".tmp", name)
}

// recordingHost is the fake host that also records comments and statuses.
type recordingHost struct {
	*fakeHost
	rec *recorder
}

func (h recordingHost) UpsertComment(ctx context.Context, pr bot.PR, key string, pages []string) error {
	if err := h.rec.record(runRecord{Kind: "comment", PR: pr.Number, SHA: pr.HeadSHA}); err != nil {
		return err
	}
	return h.fakeHost.UpsertComment(ctx, pr, key, pages)
}

func (h recordingHost) SetStatus(ctx context.Context, pr bot.PR, s bot.Status) error {
	if err := h.rec.record(runRecord{Kind: "status", PR: pr.Number, SHA: pr.HeadSHA, State: s.State}); err != nil {
		return err
	}
	return h.fakeHost.SetStatus(ctx, pr, s)
}

// recordingPreviewer records each preview, then takes a moment (so one process's
// two workers stay busy and the other process has jobs left to take) and runs the
// fake previewer, which checks the mirror holds both commits.
type recordingPreviewer struct {
	*fakePreviewer
	rec *recorder
	pr  map[string]int // head SHA → PR number
}

func (p recordingPreviewer) Preview(ctx context.Context, req preview.Request) (*diffing.Report, error) {
	if err := p.rec.record(runRecord{Kind: "preview", PR: p.pr[req.Head], SHA: req.Head}); err != nil {
		return nil, err
	}
	select {
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.fakePreviewer.Preview(ctx, req)
}

// TestReplicaProcess is not a test: run by TestTwoProcessesOnPostgres as a separate
// process, it serves the real server on the shared Postgres queue until SIGTERM,
// recording what its jobs do under $DRIFTPREVIEW_REPLICA_DIR/runs. It returns
// normally, so a race found in it fails its exit status.
func TestReplicaProcess(t *testing.T) {
	dir := os.Getenv(envReplicaDir)
	if dir == "" {
		t.Skip("helper process for TestTwoProcessesOnPostgres")
	}
	name, repoURL := os.Getenv(envReplicaName), os.Getenv(envReplicaRepo)
	var heads map[string]int
	if err := json.Unmarshal([]byte(os.Getenv(envReplicaHeads)), &heads); err != nil {
		t.Fatalf("decoding the heads: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rec := &recorder{dir: filepath.Join(dir, "runs"), proc: name}
	fp := newFakePreviewer()
	go func() {
		for range fp.started {
		}
	}()
	s, err := server.New(ctx, server.Options{
		Hosts:     map[string]server.Host{"github": recordingHost{fakeHost: newFakeHost("github", repoURL), rec: rec}},
		Previewer: recordingPreviewer{fakePreviewer: fp, rec: rec, pr: heads},
		WorkDir:   filepath.Join(dir, "mirrors-"+name),
		Queue: queue.Options{Driver: queue.DriverPostgres, DSN: os.Getenv(envReplicaDSN),
			MaxWorkers: 2, FetchPollInterval: 50 * time.Millisecond},
		Jobs:    jobs.DefaultOptions(),
		Handler: server.HandlerOptions{Repos: []string{"acme/*"}},
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, nil)).With("replica", name),
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := filepath.Join(dir, name+".addr")
	if err := os.WriteFile(addr+".tmp", []byte(ln.Addr().String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(addr+".tmp", addr); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ctx, ln); err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

// syncBuffer collects a child's output while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// replicaProc is a running TestReplicaProcess.
type replicaProc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
	*running
}

// startReplica starts a replica process; its output is shown if the test fails.
func startReplica(t *testing.T, dir, name string, env ...string) *replicaProc {
	t.Helper()
	p := &replicaProc{name: name, out: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestReplicaProcess$", "-test.v=false", "-test.timeout=2m")
	p.cmd.Env = append(append(os.Environ(), envReplicaDir+"="+dir, envReplicaName+"="+name), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting replica %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("replica %s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// waitListening waits for the replica to write its address (it has then opened and
// migrated the queue), failing early if it exits.
func (p *replicaProc) waitListening(t *testing.T, dir string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, p.name+".addr")); err == nil {
			p.running = &running{url: "http://" + string(b)}
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("replica %s exited before listening: %v", p.name, p.err)
		case <-deadline:
			t.Fatalf("replica %s did not start listening within 30 s", p.name)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *replicaProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stopping replica %s: %v", p.name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not exit within 30 s of SIGTERM", p.name)
	}
	if p.err != nil {
		t.Errorf("replica %s exited with %v", p.name, p.err)
	}
}

// prRuns is what the jobs of one PR did, summed over both processes.
type prRuns struct {
	Previews, Comments int
	// Statuses in the order set (exact when one process did them all).
	Statuses []bot.State
	// Processes is how many processes did any of it.
	Processes int
}

// TestTwoProcessesOnPostgres runs two real serve processes on one Postgres, as two
// replicas behind a load balancer. Every delivery is sent to both at once (a host
// retrying across replicas); one PR also gets a second delivery ID for the same
// commits, and a delivery is redelivered after its job finished. Each PR must be
// previewed, commented and given its statuses exactly once across both processes.
func TestTwoProcessesOnPostgres(t *testing.T) {
	dsn := queuetest.Postgres(t)
	repo := newGitRepo(t)
	const n = 10
	heads := map[string]int{}
	prs := make([]bot.PR, n)
	for i := range n {
		p := pr("acme/shop", 100+i, repo.commit(t, "cm.yaml", fmt.Sprint("v", i)))
		p.BaseSHA = repo.Base
		prs[i] = p
		heads[p.HeadSHA] = p.Number
	}
	repo.push(t)
	headsJSON, err := json.Marshal(heads)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{envReplicaDSN + "=" + dsn, envReplicaRepo + "=" + repo.URL, envReplicaHeads + "=" + string(headsJSON)}
	// Both start at once, so they also migrate the fresh database together.
	procs := []*replicaProc{startReplica(t, dir, "a", env...), startReplica(t, dir, "b", env...)}
	for _, p := range procs {
		p.waitListening(t, dir)
	}

	type sent struct {
		pr   int
		proc string
		code int
	}
	var (
		mu      sync.Mutex
		answers []sent
		wg      sync.WaitGroup
	)
	send := func(ev bot.Event) {
		for _, p := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				code, err := p.deliver(ev)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				answers = append(answers, sent{ev.PR.Number, p.name, code})
				mu.Unlock()
			}()
		}
	}
	for i, p := range prs {
		send(bot.Event{Kind: bot.EventRun, DeliveryID: fmt.Sprint("delivery-", i), PR: p})
	}
	// A second delivery ID for PR 101's same base and head: River's unique job args,
	// not the delivery table, must keep it from running twice.
	send(bot.Event{Kind: bot.EventRun, DeliveryID: "delivery-1-again", PR: prs[1]})
	wg.Wait()

	gotCodes := map[int][]int{}
	inserted := map[string]int{}
	for _, a := range answers {
		gotCodes[a.pr] = append(gotCodes[a.pr], a.code)
		if a.code == 202 {
			inserted[a.proc]++
		}
	}
	wantCodes := map[int][]int{}
	for _, p := range prs {
		wantCodes[p.Number] = []int{200, 202}
	}
	wantCodes[prs[1].Number] = []int{200, 200, 200, 202}
	for _, c := range gotCodes {
		sort.Ints(c)
	}
	if diff := cmp.Diff(wantCodes, gotCodes); diff != "" {
		t.Errorf("answers per PR across both processes (-want +got):\n%s", diff)
	}

	// The test's own view of the queue: insert-only, it works no jobs.
	q, err := queue.Open(context.Background(), queue.Options{Driver: queue.DriverPostgres, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	eventually(t, "every job to complete", func() bool {
		js := jobStates(t, q)
		if len(js) != n {
			return false
		}
		for _, j := range js {
			if j.State != rivertype.JobStateCompleted {
				return false
			}
		}
		return true
	})
	// The host retries a delivery whose job already ran, at both replicas.
	late := map[string]int{}
	for _, p := range procs {
		late[p.name] = p.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "delivery-0", PR: prs[0]})
	}
	if diff := cmp.Diff(map[string]int{"a": 200, "b": 200}, late); diff != "" {
		t.Errorf("answers to a late redelivery (-want +got):\n%s", diff)
	}
	// Once both processes have exited no straggler can run, so the records are final.
	for _, p := range procs {
		p.stop(t)
	}

	rows, err := q.Jobs(context.Background(), jobs.Kind)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.State != rivertype.JobStateCompleted || r.Attempt != 1 {
			t.Errorf("job %d: state %s after %d attempts, want completed after 1", r.ID, r.State, r.Attempt)
		}
	}
	if len(rows) != n {
		t.Errorf("%d jobs in the queue, want %d", len(rows), n)
	}

	recs := readRuns(t, filepath.Join(dir, "runs"))
	got := map[int]prRuns{}
	procsOf := map[int]map[string]bool{}
	worked := map[string]int{}
	for _, r := range recs {
		if r.PR < 100 || r.PR >= 100+n || r.SHA != prs[r.PR-100].HeadSHA {
			t.Errorf("record for PR %d at %s, which is not that PR's head", r.PR, r.SHA)
			continue
		}
		sum := got[r.PR]
		switch r.Kind {
		case "preview":
			sum.Previews++
			worked[r.Proc]++
		case "comment":
			sum.Comments++
		case "status":
			sum.Statuses = append(sum.Statuses, r.State)
		}
		if procsOf[r.PR] == nil {
			procsOf[r.PR] = map[string]bool{}
		}
		procsOf[r.PR][r.Proc] = true
		sum.Processes = len(procsOf[r.PR])
		got[r.PR] = sum
	}
	want := map[int]prRuns{}
	for _, p := range prs {
		want[p.Number] = prRuns{Previews: 1, Comments: 1, Statuses: []bot.State{bot.StateInProgress, bot.StateSuccess}, Processes: 1}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what each PR's job did, over both processes (-want +got):\n%s", diff)
	}
	// River decides who works what; both processes usually do, but that is not a
	// property of the bot, so it is only reported.
	t.Logf("deliveries queued per process: %v; jobs worked per process: %v", inserted, worked)
}

// readRuns reads every record, ordered by process then sequence.
func readRuns(t *testing.T, dir string) []runRecord {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var out []runRecord
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r runRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("decoding %s: %v", f, err)
		}
		out = append(out, r)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("half-written records left: %s", strings.Join(left, ", "))
	}
	return out
}
