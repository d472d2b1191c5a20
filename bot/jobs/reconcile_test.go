package jobs_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// headPreview reports a change naming the head it previewed.
type headPreview struct{}

func (headPreview) Preview(_ context.Context, req preview.Request) (*diffing.Report, error) {
	return &diffing.Report{Base: req.Base, Head: req.Head, GeneratedAt: req.Now,
		Targets: []diffing.TargetReport{{Name: "app", Path: "app", Summary: diffing.Summary{Modified: 1},
			Changes: []diffing.Change{{Action: diffing.ActionModified, Diff: "-a\n+" + req.Head + "\n"}}}}}, nil
}

// TestLateStickyOfOlderHeadRemoved: the comment POST of an older head's job is
// held by GitHub past the client's timeout (the job gives up on it) and lands
// only after the newer head's job has posted and listed the comments again. The
// newer job's second pass (Options.ReconcileDelay) deletes it, so the PR keeps one
// sticky comment, the newer head's. On main the PR kept two for good.
func TestLateStickyOfOlderHeadRemoved(t *testing.T) {
	// A repository served as file://ROOT/acme/gitops.git, as the adapter clones.
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitfixture.Git(t, root, "init", "-q", "-b", "main", work)
	commit := func(content string) string {
		gitfixture.Git(t, work, "commit", "-q", "--allow-empty", "-m", content)
		return gitfixture.Git(t, work, "rev-parse", "HEAD")
	}
	base, headA, headB := commit("base"), commit("a"), commit("b")
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "acme", "gitops.git"))

	for _, hc := range []struct {
		name  string
		setup func(t *testing.T) lateHost
	}{
		{"github", func(t *testing.T) lateHost {
			srv := githubtest.New(t)
			o := github.DefaultOptions()
			o.AppID, o.PrivateKey, o.WebhookSecret = srv.AppID, srv.KeyPEM, []byte("s")
			o.APIURL, o.WebURL = srv.URL(), "file://"+root
			o.BotLogin = srv.BotLogin
			// The client gives up on a request after 1 s; GitHub may still serve it.
			o.HTTPClient = &http.Client{Timeout: time.Second}
			o.Retry.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
			client, err := github.New(o)
			if err != nil {
				t.Fatal(err)
			}
			return lateHost{host: client, hook: srv.BeforeRequest, postPath: "/repos/acme/gitops/issues/17/comments",
				failPost: func(n int) {
					srv.FailNext(http.MethodPost, "/repos/acme/gitops/issues/17/comments", n, http.StatusInternalServerError, nil)
				},
				status: func(head string) (string, string) {
					runs := srv.CheckRuns("acme/gitops", head)
					if len(runs) == 0 {
						return "", ""
					}
					r := runs[len(runs)-1]
					return r.Status + "/" + r.Conclusion, r.Title
				},
				pr: bot.PR{Host: "github", Repo: "acme/gitops", Number: 17, InstallationID: 1, BaseRef: "main", BaseSHA: base},
				comments: func() []string {
					var out []string
					for _, c := range srv.Comments("acme/gitops", 17) {
						out = append(out, c.Body)
					}
					return out
				}}
		}},
		{"gitlab", func(t *testing.T) lateHost {
			srv := gitlabtest.New(t)
			srv.AddProject(42, "acme/gitops")
			o := gitlab.DefaultOptions()
			o.URL, o.Token, o.WebhookSecret = srv.URL(), srv.Token, []byte("s")
			o.HTTPClient = &http.Client{Timeout: time.Second}
			o.Retry.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
			client, err := gitlab.New(o)
			if err != nil {
				t.Fatal(err)
			}
			return lateHost{host: fileClone{client, "file://" + filepath.Join(root, "acme", "gitops.git")}, hook: srv.BeforeRequest,
				failPost: func(n int) {
					srv.FailNext(http.MethodPost, "/api/v4/projects/42/merge_requests/7/notes", n, http.StatusInternalServerError, nil)
				},
				status: func(head string) (string, string) {
					sts := srv.Statuses(42, head)
					if len(sts) == 0 {
						return "", ""
					}
					return sts[len(sts)-1].State, sts[len(sts)-1].Description
				},
				postPath: "/api/v4/projects/42/merge_requests/7/notes",
				pr:       bot.PR{Host: "gitlab", Repo: "acme/gitops", ProjectID: 42, Number: 7, BaseRef: "main", BaseSHA: base},
				comments: func() []string {
					var out []string
					for _, n := range srv.Notes(42, 7) {
						out = append(out, n.Body)
					}
					return out
				}}
		}},
	} {
		t.Run(hc.name, func(t *testing.T) {
			testLateSticky(t, hc.setup, base, headA, headB)
		})
		t.Run(hc.name+"/post fails", func(t *testing.T) {
			testPostFails(t, hc.setup, headA)
		})
	}
}

// lateHost is one host's adapter over its fake, for TestLateStickyOfOlderHeadRemoved.
type lateHost struct {
	host     jobs.Host
	pr       bot.PR                          // without the head
	postPath string                          // where comments are POSTed
	hook     func(func(method, path string)) // the fake's BeforeRequest
	comments func() []string                 // the bodies of the PR's comments
	// failPost makes the next n comment POSTs answer 500.
	failPost func(n int)
	// status is the latest state and title of head's check ("completed/failure",
	// "failed"…).
	status func(head string) (state, title string)
}

// fileClone is a GitLab adapter whose commits are fetched from a local
// repository (GitLab clones from its web root, which the fake API does not serve).
type fileClone struct {
	*gitlab.Client
	url string
}

func (f fileClone) FetchSpec(context.Context, bot.PR) (bot.FetchSpec, error) {
	return bot.FetchSpec{URL: f.url}, nil
}

// startWorker runs a worker for lh's host over a SQLite queue (one attempt per
// job), with the second pass after delay.
func startWorker(t *testing.T, lh lateHost, delay time.Duration) *queue.Queue {
	ctx := context.Background()
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
	jo := jobs.DefaultOptions()
	jo.ReconcileDelay = delay
	w := jobs.NewWorker(map[string]jobs.Host{lh.pr.Host: lh.host}, headPreview{}, jobs.NewMirror(t.TempDir()), q, nil, jo)
	t.Cleanup(w.Stop)
	river.AddWorker(workers, w)
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Stop(context.Background()) })
	return q
}

// runJob queues the job of lh's PR at head (the PR's newest head) and waits for
// it to end.
func runJob(t *testing.T, q *queue.Queue, lh lateHost, head string, wait bool) (int64, rivertype.JobState) {
	t.Helper()
	ctx := context.Background()
	pr := lh.pr
	pr.HeadSHA = head
	if err := q.SetHead(ctx, jobs.PRKey(pr), head, queue.PROpen); err != nil {
		t.Fatal(err)
	}
	id, _, err := q.Insert(ctx, jobs.NewArgs(bot.Event{Kind: bot.EventRun, DeliveryID: "d-" + head, PR: pr}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !wait {
		return id, ""
	}
	return id, waitJob(t, q, id)
}

// waitJob waits for job id to reach a final state.
func waitJob(t *testing.T, q *queue.Queue, id int64) rivertype.JobState {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		job, err := q.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		switch job.State {
		case rivertype.JobStateCompleted, rivertype.JobStateDiscarded, rivertype.JobStateCancelled:
			return job.State
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %s", id, job.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testPostFails: the comment cannot be posted (the API answers 500 five times,
// exhausting the adapter's retries) on the job's last attempt: the check is
// completed as an error that names the post.
func testPostFails(t *testing.T, setup func(t *testing.T) lateHost, head string) {
	lh := setup(t)
	q := startWorker(t, lh, -1)
	lh.failPost(5)
	if _, st := runJob(t, q, lh, head, true); st != rivertype.JobStateDiscarded {
		t.Fatalf("job %s, want discarded after its only attempt", st)
	}
	state, title := lh.status(head)
	if state != "completed/failure" && state != "failed" || !strings.Contains(title, "could not finish") {
		t.Errorf("check: %q %q, want completed as an error", state, title)
	}
	if n := len(lh.comments()); n != 0 {
		t.Errorf("%d comments", n)
	}
}

func testLateSticky(t *testing.T, setup func(t *testing.T) lateHost, base, headA, headB string) {
	lh := setup(t)
	postPath, comments := lh.postPath, lh.comments
	q := startWorker(t, lh, 2*time.Second)

	// GitHub holds the first comment POST (head A's) until released.
	arrived, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	lh.hook(func(method, path string) {
		if method == http.MethodPost && path == postPath && held.CompareAndSwap(false, true) {
			close(arrived)
			<-release
		}
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	a, _ := runJob(t, q, lh, headA, false)
	<-arrived
	// A's client gives up on the held POST: A's job ends (its only attempt).
	if st := waitJob(t, q, a); st != rivertype.JobStateDiscarded {
		t.Fatalf("A's job %s, want discarded after the POST timed out", st)
	}
	if _, st := runJob(t, q, lh, headB, true); st != rivertype.JobStateCompleted {
		t.Fatalf("B's job %s", st)
	}
	// Now A's POST lands, after B's post and second listing.
	close(release)
	stickies := func() []string {
		var out []string
		for _, c := range comments() {
			if strings.HasPrefix(c, "<!-- driftpreview:sticky v1") {
				out = append(out, c)
			}
		}
		return out
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(stickies()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(stickies()); n != 2 {
		t.Fatalf("%d sticky comments after A's POST landed, want 2 (the race under test)", n)
	}
	deadline = time.Now().Add(30 * time.Second)
	for len(stickies()) > 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := stickies()
	if len(got) != 1 || !strings.Contains(got[0], "<!-- driftpreview:head "+headB+" -->") {
		t.Errorf("sticky comments after the second pass:\n%s\nwant only head B's (%s)", strings.Join(got, "\n----\n"), headB[:7])
	}
}
