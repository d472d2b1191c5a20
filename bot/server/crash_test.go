package server_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
	s, err := server.New(context.Background(), server.Options{
		Hosts:     map[string]server.Host{"github": newFakeHost("github", os.Getenv("DRIFTPREVIEW_CRASH_REPO"))},
		Previewer: hangingPreviewer{marker: filepath.Join(dir, "started")},
		WorkDir:   filepath.Join(dir, "mirrors"),
		Queue: queue.Options{Driver: queue.DriverSQLite, DSN: filepath.Join(dir, "queue.db"),
			JobTimeout: crashJobTimeout, RescueStuckJobsAfter: crashRescue, FetchPollInterval: 50 * time.Millisecond},
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

// TestKilledMidJob: a serve process is SIGKILLed while its job runs; a new process
// on the same SQLite queue rescues the job and completes it.
func TestKilledMidJob(t *testing.T) {
	dir := t.TempDir()
	repo := newGitRepo(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "DRIFTPREVIEW_CRASH_DIR="+dir, "DRIFTPREVIEW_CRASH_REPO="+repo.URL)
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
