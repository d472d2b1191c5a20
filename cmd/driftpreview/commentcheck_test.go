package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// ciHost is one CI host's fake and environment for `driftpreview comment`: the
// tests of the check's life run the same cases against both.
type ciHost struct {
	name string
	// setup starts the fake, sets the CI variables for base..head of repo and
	// returns what the tests read back.
	setup func(t *testing.T, repo, base, head string) *ciFake
}

type ciFake struct {
	// check returns the state of head's check ("in_progress", "completed",
	// "running", "failed"…), its conclusion (GitHub) and title/description, and
	// how many checks of that name the head has.
	check func(head, name string) (state, conclusion, title string, n int)
	// stickies returns the bodies of the bot's sticky comments on the PR.
	stickies func() []string
	// failPost makes the next n comment posts answer status.
	failPost func(n, status int)
	// moveHead makes the host report head as the PR's current head.
	moveHead func(head string)
	// addSticky seeds a sticky comment of the bot with body.
	addSticky func(body string)
	// holdPost makes the host hold the next comment post: arrived is closed when
	// it arrives; it is served (it lands) when release is closed.
	holdPost func(arrived, release chan struct{})
}

var ciHosts = []ciHost{
	{name: "github", setup: func(t *testing.T, repo, base, head string) *ciFake {
		srv := githubtest.New(t)
		srv.BotLogin = "github-actions[bot]"
		const token = "ghs_checkLifeToken0000000000000000000"
		srv.AddToken(token, false)
		pull := githubtest.PullRequest{Repo: "acme/gitops", Number: 17, BaseRef: "main", BaseSHA: base, HeadRef: "feature", HeadSHA: head,
			HTMLURL: "https://github.com/acme/gitops/pull/17"}
		srv.AddPull(pull)
		githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", base, head), strings.TrimSuffix(srv.URL(), "/"), token)
		return &ciFake{
			check: func(head, name string) (string, string, string, int) {
				var runs []githubtest.CheckRun
				for _, r := range srv.CheckRuns("acme/gitops", head) {
					if r.Name == name {
						runs = append(runs, r)
					}
				}
				if len(runs) == 0 {
					return "", "", "", 0
				}
				r := runs[len(runs)-1]
				return r.Status, r.Conclusion, r.Title, len(runs)
			},
			stickies: func() []string {
				var out []string
				for _, c := range srv.Comments("acme/gitops", 17) {
					if c.User == srv.BotLogin && strings.HasPrefix(c.Body, "<!-- driftpreview:sticky v1") {
						out = append(out, c.Body)
					}
				}
				return out
			},
			failPost: func(n, status int) {
				srv.FailNext(http.MethodPost, "/repos/acme/gitops/issues/17/comments", n, status, nil)
			},
			moveHead:  func(h string) { p := pull; p.HeadSHA = h; srv.AddPull(p) },
			addSticky: func(body string) { srv.AddComment("acme/gitops", 17, srv.BotLogin, "Bot", body) },
			holdPost: func(arrived, release chan struct{}) {
				srv.BeforeRequest(holdHook(http.MethodPost, "/repos/acme/gitops/issues/17/comments", arrived, release))
			},
		}
	}},
	{name: "gitlab", setup: func(t *testing.T, repo, base, head string) *ciFake {
		srv := gitlabtest.New(t)
		srv.AddProject(42, "acme/platform/gitops")
		mr := gitlabtest.MergeRequest{ProjectID: 42, IID: 7, SourceBranch: "feature", TargetBranch: "main", SHA: head, BaseSHA: base, StartSHA: base,
			WebURL: "https://gitlab.example.com/acme/platform/gitops/-/merge_requests/7"}
		srv.AddMergeRequest(mr)
		gitlabCIEnv(t, srv.URL(), base, head)
		t.Setenv(GitLabTokenVar, srv.Token)
		return &ciFake{
			check: func(head, name string) (string, string, string, int) {
				var sts []gitlabtest.Status
				for _, s := range srv.Statuses(42, head) {
					if s.Name == name {
						sts = append(sts, s)
					}
				}
				if len(sts) == 0 {
					return "", "", "", 0
				}
				s := sts[len(sts)-1]
				return s.State, "", s.Description, 1
			},
			stickies: func() []string {
				var out []string
				for _, n := range srv.Notes(42, 7) {
					if n.AuthorID == srv.BotID && strings.HasPrefix(n.Body, "<!-- driftpreview:sticky v1") {
						out = append(out, n.Body)
					}
				}
				return out
			},
			failPost: func(n, status int) {
				srv.FailNext(http.MethodPost, "/api/v4/projects/42/merge_requests/7/notes", n, status, nil)
			},
			moveHead:  func(h string) { m := mr; m.SHA = h; srv.AddMergeRequest(m) },
			addSticky: func(body string) { srv.AddNote(42, 7, srv.BotID, body) },
			holdPost: func(arrived, release chan struct{}) {
				srv.BeforeRequest(holdHook(http.MethodPost, "/api/v4/projects/42/merge_requests/7/notes", arrived, release))
			},
		}
	}},
}

// holdHook is a fake's BeforeRequest hook holding the first method request to
// path until release is closed, closing arrived when it comes.
func holdHook(method, path string, arrived, release chan struct{}) func(string, string) {
	var once atomic.Bool
	return func(m, p string) {
		if m == method && p == path && once.CompareAndSwap(false, true) {
			close(arrived)
			select {
			case <-release:
			case <-time.After(time.Minute):
			}
		}
	}
}

// completedAsError asserts head's check named name is completed as an error
// (GitHub: completed/failure; GitLab: failed) with a title containing want.
func completedAsError(t *testing.T, host string, f *ciFake, head, name, want string) {
	t.Helper()
	state, conclusion, title, _ := f.check(head, name)
	done := host == "github" && state == "completed" && conclusion == "failure" || host == "gitlab" && state == "failed"
	if !done || !strings.Contains(title, want) {
		t.Errorf("%s check of %s: state %q conclusion %q title %q; want completed as an error with a title containing %q",
			host, name, state, conclusion, title, want)
	}
}

// noSleep makes the adapters' retries wait no time, for the duration of the test.
func noSleep(t *testing.T) {
	t.Helper()
	old := retrySleep
	retrySleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	t.Cleanup(func() { retrySleep = old })
}

// TestCommentCompletesCheckWhenPostFails: the preview finishes but the comment
// cannot be posted (the API answers 500 five times, exhausting the retries): the
// check is completed as an error saying the comment failed and to re-run, and the
// exit code is 2. On main it stayed in progress.
func TestCommentCompletesCheckWhenPostFails(t *testing.T) {
	repo := scenarioRepo(t, "15-clean")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			noSleep(t)
			f := h.setup(t, repo, base, head)
			f.failPost(5, http.StatusInternalServerError)
			code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
			if code != exitError || !strings.Contains(stderr, "posting the comment") {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			completedAsError(t, h.name, f, head, "driftpreview", "could not post its comment")
		})
	}
}

// TestCommentCompletesCheckOnPanic: a panic after the check is in progress
// completes it as a crash and exits 2 with the panic printed.
func TestCommentCompletesCheckOnPanic(t *testing.T) {
	repo := scenarioRepo(t, "15-clean")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	old := previewRun
	previewRun = func(context.Context, preview.Request) (*diffing.Report, error) { panic("boom in a renderer") }
	t.Cleanup(func() { previewRun = old })
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			f := h.setup(t, repo, base, head)
			code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
			if code != exitError || !strings.Contains(stderr, "boom in a renderer") {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			completedAsError(t, h.name, f, head, "driftpreview", "crashed")
		})
	}
}

// hangingCluster is a kubeconfig whose API server accepts every request and never
// answers until the client gives up; started is closed at its first request (the
// preview has reached the live comparison).
func hangingCluster(t *testing.T) (kubeconfig string, started <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{})
	var once atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if once.CompareAndSwap(false, true) {
			close(ch)
		}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	p := filepath.Join(t.TempDir(), "kubeconfig")
	writeFiles(t, filepath.Dir(p), map[string]string{"kubeconfig": `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + srv.URL + `"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`})
	return p, ch
}

// TestCommentCompletesCheckOnTimeout: --timeout runs out while the preview waits
// on the cluster: the check is completed as timed out, naming the flag.
func TestCommentCompletesCheckOnTimeout(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			kc, _ := hangingCluster(t)
			f := h.setup(t, repo, base, head)
			begin := time.Now()
			code, _, stderr := runCommentCmd(t, "--repo", repo, "--kubeconfig", kc, "--timeout", "500ms")
			if code != exitError {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			t.Logf("returned after %s; stderr:\n%s", time.Since(begin), stderr)
			completedAsError(t, h.name, f, head, "driftpreview", "timed out after 500ms")
		})
	}
}

// bombCommit makes a commit on top of parent whose tree holds one 10 MiB blob
// under 110 paths: a push of a few KiB that checks out to 1.1 GiB, over the
// checkout limit.
func bombCommit(t *testing.T, repo, parent string) string {
	t.Helper()
	blob := gitfixture.GitStdin(t, repo, bytes.Repeat([]byte("x"), 10<<20), "hash-object", "-w", "--stdin")
	var leaf strings.Builder
	for i := range 11 {
		fmt.Fprintf(&leaf, "100644 blob %s\tf%02d.yaml\n", blob, i)
	}
	sub := gitfixture.GitStdin(t, repo, []byte(leaf.String()), "mktree")
	var top strings.Builder
	for i := range 10 {
		fmt.Fprintf(&top, "040000 tree %s\td%02d\n", sub, i)
	}
	tree := gitfixture.GitStdin(t, repo, []byte(top.String()), "mktree")
	return gitfixture.Git(t, repo, "commit-tree", tree, "-p", parent, "-m", "bomb")
}

// TestCommentCompletesCheckOnCheckoutBomb: a head whose tree expands past the
// checkout limit is refused before a byte is written, and its check is completed
// as an error naming the limit.
func TestCommentCompletesCheckOnCheckoutBomb(t *testing.T) {
	repo := scenarioRepo(t, "15-clean")
	base := revParse(t, repo, "base")
	head := bombCommit(t, repo, base)
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			f := h.setup(t, repo, base, head)
			code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
			if code != exitError || !strings.Contains(stderr, "over the 256 MiB limit") {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			completedAsError(t, h.name, f, head, "driftpreview", "over the 256 MiB limit")
		})
	}
}

// TestCommentSignals re-executes the test binary as driftpreview and sends it
// SIGINT or SIGTERM (what GitHub Actions and GitLab CI send on cancel) while the
// preview waits on the cluster, and while the host holds the comment's POST: the
// process completes the check as cancelled, naming the signal, and exits 2 within
// seconds. On main a cancel during the post left the check in progress, and one
// during the preview titled it with the preview's error.
func TestCommentSignals(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, h := range ciHosts {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			for _, during := range []string{"preview", "post"} {
				t.Run(h.name+"/"+sig.String()+"/"+during, func(t *testing.T) {
					clearCIEnv(t)
					f := h.setup(t, repo, base, head)
					args := []string{"comment", "--repo", repo, "--cache-dir", "off"}
					var started <-chan struct{}
					if during == "preview" {
						kc, ch := hangingCluster(t)
						args = append(args, "--kubeconfig", kc)
						started = ch
					} else {
						args = append(args, "--live-mode", "off")
						arrived, release := make(chan struct{}), make(chan struct{})
						t.Cleanup(func() { close(release) })
						f.holdPost(arrived, release)
						started = arrived
					}
					cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
					cmd.Env = append(os.Environ(), mainEnv+"=1")
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					exited := make(chan error, 1)
					go func() { exited <- cmd.Wait() }()
					select {
					case <-started:
					case err := <-exited:
						t.Fatalf("exited before the %s: %v\n%s", during, err, stderr.String())
					case <-time.After(60 * time.Second):
						_ = cmd.Process.Kill()
						t.Fatalf("never reached the %s\n%s", during, stderr.String())
					}
					if state, _, _, _ := f.check(head, "driftpreview"); state != "in_progress" && state != "running" {
						t.Fatalf("check is %q before the signal, want in progress", state)
					}
					sent := time.Now()
					if err := cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					var err error
					select {
					case err = <-exited:
					case <-time.After(30 * time.Second):
						_ = cmd.Process.Kill()
						t.Fatalf("still running 30 s after %s\n%s", sig, stderr.String())
					}
					t.Logf("exited (%v) %s after the signal", err, time.Since(sent).Round(time.Millisecond))
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != exitError {
						t.Errorf("exit: %v, want code %d\n%s", err, exitError, stderr.String())
					}
					// signal.NotifyContext's cause names the signal so.
					completedAsError(t, h.name, f, head, "driftpreview", sig.String()+" signal received")
				})
			}
		}
	}
}

// TestCommentSupersededLeavesComment: the pull request's head moved on while
// the job previewed (the host says so): the job does not touch the sticky
// comment the newer head's job posted, completes its own check as superseded
// naming the newer commit (GitHub: neutral; GitLab: canceled), and exits 0. On
// main it replaced the newer head's comment with the older head's report.
func TestCommentSupersededLeavesComment(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	const newer = "feedfacefeedfacefeedfacefeedfacefeedface"
	newerSticky := "<!-- driftpreview:sticky v1 -->\n<!-- driftpreview:head " + newer + " -->\nthe newer head's report"
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			f := h.setup(t, repo, base, head)
			f.addSticky(newerSticky)
			f.moveHead(newer)
			code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
			if code != exitOK || !strings.Contains(stderr, "superseded by feedfac") {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitOK, stderr)
			}
			if got := f.stickies(); len(got) != 1 || got[0] != newerSticky {
				t.Errorf("sticky comments = %q, want only the newer head's, untouched", got)
			}
			state, conclusion, title, _ := f.check(head, "driftpreview")
			done := h.name == "github" && state == "completed" && conclusion == "neutral" || h.name == "gitlab" && state == "canceled"
			if !done || !strings.Contains(title, "Superseded by feedfac") {
				t.Errorf("check: state %q conclusion %q title %q; want completed as superseded by feedfac", state, conclusion, title)
			}

			// The host's view lagging behind this job's push (it reports the
			// head's parent) is not a newer head: the job posts.
			f.moveHead(base)
			if code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off"); code != exitFailing || strings.Contains(stderr, "superseded") {
				t.Fatalf("host lagging: exit %d, want %d; stderr:\n%s", code, exitFailing, stderr)
			}
			if got := f.stickies(); len(got) != 1 || !strings.Contains(got[0], "<!-- driftpreview:head "+head+" -->") {
				t.Errorf("host lagging: sticky comments = %q, want this head's", got)
			}
		})
	}
}

// TestCommentStickyPerCheckName: two jobs with different --check-name keep two
// sticky comments; the default name keeps today's marker, so a comment posted
// before markers were keyed is still found and edited in place.
func TestCommentStickyPerCheckName(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, h := range ciHosts {
		t.Run(h.name, func(t *testing.T) {
			clearCIEnv(t)
			f := h.setup(t, repo, base, head)
			// Posted by an earlier version, before markers carried the head.
			f.addSticky("<!-- driftpreview:sticky v1 -->\nan older report")
			for _, name := range []string{"driftpreview", "driftpreview/prod --> cluster", "driftpreview"} {
				if code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off", "--check-name", name); code != exitFailing {
					t.Fatalf("--check-name %q: exit %d; stderr:\n%s", name, code, stderr)
				}
				if state, _, _, _ := f.check(head, name); state != "completed" && state != "failed" {
					t.Errorf("check %q is %q, want completed", name, state)
				}
			}
			got := f.stickies()
			if len(got) != 2 {
				t.Fatalf("%d sticky comments, want one per check name:\n%s", len(got), strings.Join(got, "\n----\n"))
			}
			first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
			if first(got[0]) != "<!-- driftpreview:sticky v1 -->" || !strings.Contains(got[0], "PersistentVolumeClaim") {
				t.Errorf("the default check's comment (the earlier one, edited) starts %q:\n%s", first(got[0]), got[0])
			}
			if first(got[1]) != "<!-- driftpreview:sticky v1 check=driftpreview%2Fprod+--%3E+cluster -->" || strings.Count(got[1], "<!-- driftpreview:sticky v1") != 1 {
				t.Errorf("the second check's comment:\n%s", got[1])
			}
		})
	}
}
