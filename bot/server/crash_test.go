package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/diffing"
)

// Settings shared by the killed process and the one that takes over: short enough
// for a test, and RescueStuckJobsAfter > JobTimeout as River requires.
const (
	crashJobTimeout = time.Second
	crashRescue     = 2 * time.Second
)

// hangingPreviewer marks that it started and then hangs, ignoring cancellation,
// like a process wedged in a render.
type hangingPreviewer struct{ marker string }

func (h hangingPreviewer) Preview(context.Context, preview.Request) (*diffing.Report, error) {
	_ = os.WriteFile(h.marker, []byte("started"), 0o644)
	select {}
}

// TestHelperProcess is not a test: run by TestKilledMidJob as a separate process, it
// serves the queue in DRIFTPREVIEW_CRASH_DIR with a job that hangs.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("DRIFTPREVIEW_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestKilledMidJob")
	}
	maxAttempts, _ := strconv.Atoi(os.Getenv("DRIFTPREVIEW_CRASH_MAXATTEMPTS"))
	s, err := server.New(context.Background(), server.Options{
		Hosts:     map[string]server.Host{"github": newFakeHost("github", os.Getenv("DRIFTPREVIEW_CRASH_REPO"))},
		Previewer: hangingPreviewer{marker: filepath.Join(dir, "started")},
		WorkDir:   filepath.Join(dir, "mirrors"),
		Queue: queue.Options{Driver: queue.DriverSQLite, DSN: filepath.Join(dir, "queue.db"),
			JobTimeout: crashJobTimeout, RescueStuckJobsAfter: crashRescue, FetchPollInterval: 50 * time.Millisecond,
			MaxAttempts: maxAttempts},
		Jobs: jobs.DefaultOptions(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(3)
	}
	fmt.Printf("LISTEN %s\n", ln.Addr())
	_ = s.Serve(context.Background(), ln)
	os.Exit(0)
}

// killMidJob starts the helper process on dir's queue (with maxAttempts, 0 for the
// default), delivers a preview of repo's head and SIGKILLs the helper once the job
// runs. It returns the PR.
func killMidJob(t *testing.T, dir string, repo *gitRepo, maxAttempts int) bot.PR {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "DRIFTPREVIEW_CRASH_DIR="+dir, "DRIFTPREVIEW_CRASH_REPO="+repo.URL,
		"DRIFTPREVIEW_CRASH_MAXATTEMPTS="+strconv.Itoa(maxAttempts))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "LISTEN ") {
		t.Fatalf("helper did not report its address: %q %v", line, err)
	}
	helper := &running{url: "http://" + strings.TrimSpace(strings.TrimPrefix(line, "LISTEN "))}
	thePR := pr("acme/shop", 9, repo.Head)
	thePR.BaseSHA = repo.Base
	if code := helper.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: thePR}); code != 202 {
		t.Fatalf("delivery to the helper: %d", code)
	}
	eventually(t, "the helper's job to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	return thePR
}

// TestKilledMidJob: a serve process is SIGKILLed while its job runs; a new process
// on the same SQLite queue rescues the job and completes it.
func TestKilledMidJob(t *testing.T) {
	dir := t.TempDir()
	repo := newGitRepo(t)
	killMidJob(t, dir, repo, 0)

	// The second process: same database and mirrors, a previewer that works.
	host := newFakeHost("github", repo.URL)
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.WorkDir = filepath.Join(dir, "mirrors")
		o.Queue.DSN = filepath.Join(dir, "queue.db")
		o.Queue.JobTimeout, o.Queue.RescueStuckJobsAfter = crashJobTimeout, crashRescue
	})
	// The killed process may have held River's leadership; its term must lapse
	// before the rescuer runs here, which takes River up to ~20 s.
	deadline := time.Now().Add(60 * time.Second)
	for {
		js := jobStates(t, srv.Queue)
		if len(js) == 1 && js[0].State == rivertype.JobStateCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job not completed after restart: %+v", js)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if diff := cmp.Diff([]bot.State{bot.StateInProgress, bot.StateSuccess}, host.states(repo.Head)); diff != "" {
		t.Errorf("statuses after restart (-want +got):\n%s", diff)
	}
	if n := len(host.Comments()); n != 1 {
		t.Errorf("%d comments after restart, want 1", n)
	}
	job, err := srv.Queue.Jobs(context.Background(), jobs.Kind)
	if err != nil {
		t.Fatal(err)
	}
	if job[0].Attempt != 2 {
		t.Errorf("job completed on attempt %d, want 2 (the killed one, then the rescue)", job[0].Attempt)
	}
}

// TestKilledOnLastAttempt: the serve process is SIGKILLed during the job's only
// attempt, so River's rescuer discards the job without any job code running. The
// process that takes over completes the check the killed one left in progress as
// an error, exactly once.
func TestKilledOnLastAttempt(t *testing.T) {
	dir := t.TempDir()
	repo := newGitRepo(t)
	thePR := killMidJob(t, dir, repo, 1)

	host := newFakeHost("github", repo.URL)
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.WorkDir = filepath.Join(dir, "mirrors")
		o.Queue.DSN = filepath.Join(dir, "queue.db")
		o.Queue.JobTimeout, o.Queue.RescueStuckJobsAfter = crashJobTimeout, crashRescue
		o.Queue.MaxAttempts = 1
		o.SweepInterval = 100 * time.Millisecond
	})
	// As in TestKilledMidJob, the rescuer runs once the killed process's
	// leadership lapsed; the sweep follows within SweepInterval.
	deadline := time.Now().Add(60 * time.Second)
	for len(host.states(thePR.HeadSHA)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no status completed after restart; jobs: %+v", jobStates(t, srv.Queue))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Sweeping again (as the loop keeps doing) completes nothing more.
	for range 3 {
		n, err := srv.Sweep(context.Background())
		if err != nil || n != 0 {
			t.Errorf("Sweep after completion = %d, %v; want 0, nil", n, err)
		}
	}
	var got []bot.Status
	for _, s := range host.Statuses() {
		if s.SHA == thePR.HeadSHA {
			s.Status.Summary = ""
			got = append(got, s.Status)
		}
	}
	want := []bot.Status{{State: bot.StateError, Title: jobs.KilledTitle, DetailsURL: thePR.URL}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statuses after restart (-want +got):\n%s", diff)
	}
	js := jobStates(t, srv.Queue)
	if len(js) != 1 || js[0].State != rivertype.JobStateDiscarded {
		t.Errorf("jobs after restart: %+v, want one discarded", js)
	}
	if n := len(host.Comments()); n != 0 {
		t.Errorf("%d comments after restart, want none", n)
	}
}
