package server_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestCheckoutBombCompletesAtOnce: a push of a few KiB whose tree expands to
// 1.1 GiB (one 10 MiB blob under 110 paths) is refused by the real preview before
// anything is written; the job completes the check as an error naming the limit
// on its first attempt and is not retried (the same commit fails the same way).
// On main the check stayed in progress through River's retries.
func TestCheckoutBombCompletesAtOnce(t *testing.T) {
	repo := newGitRepo(t)
	blob := gitfixture.GitStdin(t, repo.work, bytes.Repeat([]byte("x"), 10<<20), "hash-object", "-w", "--stdin")
	var leaf strings.Builder
	for i := range 11 {
		fmt.Fprintf(&leaf, "100644 blob %s\tf%02d.yaml\n", blob, i)
	}
	sub := gitfixture.GitStdin(t, repo.work, []byte(leaf.String()), "mktree")
	var top strings.Builder
	for i := range 10 {
		fmt.Fprintf(&top, "040000 tree %s\td%02d\n", sub, i)
	}
	tree := gitfixture.GitStdin(t, repo.work, []byte(top.String()), "mktree")
	bomb := gitfixture.Git(t, repo.work, "commit-tree", tree, "-p", repo.Head, "-m", "bomb")
	gitfixture.Git(t, repo.work, "reset", "-q", "--soft", bomb)
	repo.push(t)

	host := newFakeHost("github", repo.URL)
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.Previewer = jobs.PreviewFunc(preview.Run)
		o.Queue.MaxAttempts = 5
	})
	p := pr("acme/shop", 3, bomb)
	p.BaseSHA = repo.Base
	if code := srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: p}); code != 202 {
		t.Fatalf("delivery: %d", code)
	}
	eventually(t, "the job to end without a retry", func() bool {
		js := jobStates(t, srv.Queue)
		return len(js) == 1 && js[0].State == rivertype.JobStateCancelled
	})
	var got []bot.State
	for _, s := range host.Statuses() {
		got = append(got, s.Status.State)
	}
	if diff := cmp.Diff([]bot.State{bot.StateInProgress, bot.StateError}, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	last := host.Statuses()[1].Status
	if !strings.Contains(last.Title, "refused this commit") || !strings.Contains(last.Title, "over the 256 MiB limit") {
		t.Errorf("final status title %q does not name the limit", last.Title)
	}
	if n := len(host.Comments()); n != 0 {
		t.Errorf("%d comments posted", n)
	}
}

// TestJobTimeoutCompletesCheck: a preview that outlives the job timeout on the
// last attempt completes its check as an error saying the job gave up.
func TestJobTimeoutCompletesCheck(t *testing.T) {
	repo := newGitRepo(t)
	host := newFakeHost("github", repo.URL)
	p := newFakePreviewer()
	p.block[repo.Head] = make(chan struct{}) // never released: only the timeout ends it
	srv := startServer(t, host, p, func(o *server.Options) {
		o.Queue.MaxAttempts = 1
		o.Queue.JobTimeout = time.Second
	})
	thePR := pr("acme/shop", 3, repo.Head)
	thePR.BaseSHA = repo.Base
	if code := srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: thePR}); code != 202 {
		t.Fatalf("delivery: %d", code)
	}
	eventually(t, "the job to end", func() bool {
		js := jobStates(t, srv.Queue)
		return len(js) == 1 && js[0].State == rivertype.JobStateDiscarded
	})
	var got []bot.State
	for _, s := range host.Statuses() {
		got = append(got, s.Status.State)
	}
	if diff := cmp.Diff([]bot.State{bot.StateInProgress, bot.StateError}, got); diff != "" {
		t.Fatalf("statuses (-want +got):\n%s", diff)
	}
	if last := host.Statuses()[1].Status; !strings.Contains(last.Summary, "deadline exceeded") {
		t.Errorf("final status does not say the job timed out: %+v", last)
	}
}
