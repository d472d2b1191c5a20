package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
)

// Orphans is the queue's view of in-progress statuses whose job ended without
// completing them (*queue.Queue implements it); see queue.Queue.ClaimOrphans.
type Orphans interface {
	ClaimOrphans(ctx context.Context, lease time.Duration) ([]queue.Orphan, error)
	StatusFinished(ctx context.Context, jobID int64) error
	SkipOrphan(ctx context.Context, jobID int64) error
	ReleaseOrphan(ctx context.Context, jobID int64) error
}

// Titles of the status Sweep posts. They are the whole GitLab description (at most
// 255 characters), so each says what happened and what to do.
const (
	KilledTitle    = "driftpreview stopped while previewing (the process was killed on its last attempt); comment `/driftpreview rerun` to try again"
	CancelledTitle = "driftpreview stopped while previewing (the job was cancelled); comment `/driftpreview rerun` to try again"
	FailedTitle    = "driftpreview stopped while previewing (its last attempt ended without a result); comment `/driftpreview rerun` to try again"
)

// rescuedPrefix starts the error River's rescuer records on a job whose process
// died while running it.
const rescuedPrefix = "Stuck job rescued"

// Sweep completes, as StateError with a short reason, every in-progress status
// whose job River discarded or cancelled without the job completing it: the one
// case no job code runs for is a process killed (kill -9, OOM, node loss) during
// the last attempt, which River's rescuer discards. A status whose PR moved on (a
// newer head, a close) or that a later job on the same commit overwrote is left
// alone, so an error never lands over a newer result. Claims make each status
// completed by one process even when several sweep at once. It returns how many
// statuses it completed; errors of single statuses are joined and the rest go on.
func (w *Worker) Sweep(ctx context.Context, store Orphans) (int, error) {
	orphans, err := store.ClaimOrphans(ctx, 2*w.opts.StatusTimeout+time.Minute)
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("sweeping: %w", err))
	}
	done := 0
	for _, o := range orphans {
		posted, err := w.completeOrphan(ctx, store, o)
		if err != nil {
			errs = append(errs, err)
			if rerr := store.ReleaseOrphan(context.WithoutCancel(ctx), o.JobID); rerr != nil {
				errs = append(errs, rerr)
			}
			continue
		}
		if posted {
			done++
		}
	}
	return done, errors.Join(errs...)
}

// completeOrphan settles one claimed orphan; posted is true when it set a status.
func (w *Worker) completeOrphan(ctx context.Context, store Orphans, o queue.Orphan) (posted bool, err error) {
	log := w.opts.Logger.With("job", o.JobID, "job_state", o.JobState, "pr", o.PR, "head", short(o.HeadSHA))
	var pr bot.PR
	if err := json.Unmarshal(o.Payload, &pr); err != nil || pr.HeadSHA == "" {
		log.Error("in-progress status record is unreadable; leaving it", "error", err)
		return false, store.SkipOrphan(ctx, o.JobID)
	}
	host, ok := w.hosts[pr.Host]
	if !ok {
		log.Error("in-progress status of a host that is not configured; leaving it")
		return false, store.SkipOrphan(ctx, o.JobID)
	}
	// Under the PR's lock, as a job posts, so the head check and the post are not
	// interleaved with a job of this process.
	unlock := w.lockPR(o.PR)
	defer unlock()
	if o.Overtaken {
		log.Info("leaving a stopped job's status: a later job wrote on the same commit")
		return false, store.SkipOrphan(ctx, o.JobID)
	}
	sha, state, found, err := w.heads.Head(ctx, o.PR)
	if err != nil {
		return false, fmt.Errorf("sweeping job %d: %w", o.JobID, err)
	}
	if found && (state == queue.PRClosed || (sha != "" && sha != pr.HeadSHA)) {
		log.Info("leaving a stopped job's status: the pull request moved on", "newest_head", short(sha), "state", state)
		return false, store.SkipOrphan(ctx, o.JobID)
	}
	title, summary := orphanText(o)
	sctx, cancel := context.WithTimeout(ctx, w.opts.StatusTimeout)
	defer cancel()
	if err := host.SetStatus(sctx, pr, bot.Status{
		State: bot.StateError, Title: title, Summary: summary, StartedAt: o.StartedAt, DetailsURL: pr.URL,
	}); err != nil {
		return false, fmt.Errorf("completing the status of stopped job %d on %s@%s: %w", o.JobID, o.PR, short(pr.HeadSHA), err)
	}
	log.Warn("completed the status of a job that stopped without a result", "last_error", firstLine(o.LastError))
	if w.obs != nil {
		w.obs.JobFinished(OutcomeError, w.opts.Now().Sub(o.StartedAt))
	}
	// Posted: a failure to record it only risks one more identical post.
	if err := store.StatusFinished(context.WithoutCancel(ctx), o.JobID); err != nil {
		log.Error("recording the completed status failed", "error", err)
	}
	return true, nil
}

// orphanText is the title and summary of a stopped job's error status.
func orphanText(o queue.Orphan) (title, summary string) {
	switch {
	case o.JobState == rivertype.JobStateCancelled:
		return CancelledTitle, "The preview job was cancelled while its process was not running, so it never reported a result."
	case strings.HasPrefix(o.LastError, rescuedPrefix):
		return KilledTitle, fmt.Sprintf("The process running this preview stopped (killed, out of memory, or its node lost) during attempt %d, the last one allowed, so no result was produced.", o.Attempts)
	default:
		s := fmt.Sprintf("The preview job's attempt %d, the last one allowed, ended without a result", o.Attempts)
		if o.LastError != "" {
			s += ": " + mdtext.Text(firstLine(o.LastError))
		}
		return FailedTitle, s + "."
	}
}
