package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// States of a driftpreview_status row.
const (
	statusRunning = "running" // the job set an in-progress status and has not completed it
	statusFinal   = "final"   // a final status was posted (by the job or by the sweep)
	statusSkipped = "skipped" // the job ended without completing it, and nothing must be posted
)

// How long status rows are kept: longer than River keeps any finished job (7 days
// for discarded ones), so a row never outlives the job the sweep would look up.
const statusRetention = 8 * 24 * time.Hour

// orphanBatch bounds one sweep.
const orphanBatch = 500

// StatusStarted records that job jobID is about to set an in-progress status on sha
// of pr (the PRKey), with payload holding what completing it needs (the PR as JSON).
// It is recorded before the status is posted, so a process killed right after
// posting still leaves the record that ClaimOrphans finds.
func (q *Queue) StatusStarted(ctx context.Context, jobID int64, pr, sha string, startedAt time.Time, payload []byte) error {
	now := time.Now().UnixNano()
	_, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_status (job_id, pr, head_sha, state, started_at, updated_at, claimed_until, payload)
		VALUES (?, ?, ?, ?, ?, ?, 0, ?)
		ON CONFLICT (job_id) DO UPDATE SET pr = excluded.pr, head_sha = excluded.head_sha, state = excluded.state,
			started_at = excluded.started_at, updated_at = excluded.updated_at, claimed_until = 0, payload = excluded.payload`),
		jobID, pr, sha, statusRunning, startedAt.UnixNano(), now, string(payload))
	if err != nil {
		return fmt.Errorf("recording the in-progress status of job %d: %w", jobID, err)
	}
	return nil
}

// StatusFinished records that job jobID's status was completed (by the job, or by
// the sweep for it), so the sweep leaves it alone. It also prunes old rows.
func (q *Queue) StatusFinished(ctx context.Context, jobID int64) error {
	now := time.Now()
	if _, err := q.db.ExecContext(ctx, q.rebind(`UPDATE driftpreview_status SET state = ?, updated_at = ?, claimed_until = 0 WHERE job_id = ?`),
		statusFinal, now.UnixNano(), jobID); err != nil {
		return fmt.Errorf("recording the final status of job %d: %w", jobID, err)
	}
	if _, err := q.db.ExecContext(ctx, q.rebind(`DELETE FROM driftpreview_status WHERE updated_at < ?`),
		now.Add(-statusRetention).UnixNano()); err != nil {
		return fmt.Errorf("pruning status records: %w", err)
	}
	return nil
}

// SkipOrphan marks a claimed orphan as needing no status (its PR moved on), without
// counting as a status write on its commit.
func (q *Queue) SkipOrphan(ctx context.Context, jobID int64) error {
	if _, err := q.db.ExecContext(ctx, q.rebind(`UPDATE driftpreview_status SET state = ?, claimed_until = 0 WHERE job_id = ? AND state = ?`),
		statusSkipped, jobID, statusRunning); err != nil {
		return fmt.Errorf("skipping the status of job %d: %w", jobID, err)
	}
	return nil
}

// ReleaseOrphan gives a claimed orphan back, when its status could not be posted,
// so the next sweep (in any process) tries again.
func (q *Queue) ReleaseOrphan(ctx context.Context, jobID int64) error {
	if _, err := q.db.ExecContext(ctx, q.rebind(`UPDATE driftpreview_status SET claimed_until = 0 WHERE job_id = ? AND state = ?`),
		jobID, statusRunning); err != nil {
		return fmt.Errorf("releasing the status of job %d: %w", jobID, err)
	}
	return nil
}

// Orphan is an in-progress status whose job River finished as discarded or
// cancelled without the job completing the status: its process was killed on the
// last attempt (River's rescuer discards it without running any of our code), or
// the job panicked, or it was cancelled while its process was dead.
type Orphan struct {
	JobID int64
	// JobState is rivertype.JobStateDiscarded or rivertype.JobStateCancelled.
	JobState rivertype.JobState
	// LastError is River's record of the last attempt's error, if any.
	LastError string
	// Attempts is how many attempts the job had.
	Attempts int
	// PR and HeadSHA are what StatusStarted recorded; Payload is its payload.
	PR, HeadSHA string
	StartedAt   time.Time
	Payload     []byte
	// Overtaken is true when another job wrote a status on the same PR and commit
	// after this one: completing this one would overwrite a newer result.
	Overtaken bool
}

// ClaimOrphans finds orphaned in-progress statuses and claims each for lease, so
// that of several processes sweeping at once exactly one completes it. The caller
// then calls StatusFinished (posted), SkipOrphan (nothing to post) or ReleaseOrphan
// (posting failed); a claim that is never settled lapses after lease. On an error
// it also returns the orphans claimed so far, which the caller must still settle.
func (q *Queue) ClaimOrphans(ctx context.Context, lease time.Duration) ([]Orphan, error) {
	now := time.Now().UnixNano()
	rows, err := q.db.QueryContext(ctx, q.rebind(`SELECT job_id FROM driftpreview_status WHERE state = ? AND claimed_until < ? ORDER BY job_id LIMIT ?`),
		statusRunning, now, orphanBatch)
	if err != nil {
		return nil, fmt.Errorf("listing in-progress statuses: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing in-progress statuses: %w", err)
		}
		ids = append(ids, id)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("listing in-progress statuses: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	res, err := q.client.JobList(ctx, river.NewJobListParams().IDs(ids...).First(len(ids)))
	if err != nil {
		return nil, fmt.Errorf("listing the jobs of in-progress statuses: %w", err)
	}
	jobs := make(map[int64]*rivertype.JobRow, len(res.Jobs))
	for _, job := range res.Jobs {
		jobs[job.ID] = job
	}
	var out []Orphan
	for _, id := range ids {
		job := jobs[id]
		if job == nil || job.State == rivertype.JobStateCompleted {
			// The job returned normally (it completes its own status unless the PR
			// moved on), or River already deleted it: nothing left to sweep. Settling
			// the row keeps the rows scanned per sweep to jobs still alive.
			if err := q.SkipOrphan(ctx, id); err != nil {
				return out, err
			}
			continue
		}
		if job.State != rivertype.JobStateDiscarded && job.State != rivertype.JobStateCancelled {
			continue // still running or to be retried: the job itself will complete it
		}
		claimed, err := q.db.ExecContext(ctx, q.rebind(`UPDATE driftpreview_status SET claimed_until = ? WHERE job_id = ? AND state = ? AND claimed_until < ?`),
			time.Now().Add(lease).UnixNano(), job.ID, statusRunning, now)
		if err != nil {
			return out, fmt.Errorf("claiming the status of job %d: %w", job.ID, err)
		}
		if n, err := claimed.RowsAffected(); err != nil {
			return out, fmt.Errorf("claiming the status of job %d: %w", job.ID, err)
		} else if n != 1 {
			continue // another process claimed it first
		}
		o := Orphan{JobID: job.ID, JobState: job.State, Attempts: job.Attempt}
		if n := len(job.Errors); n > 0 {
			o.LastError = job.Errors[n-1].Error
		}
		var started, updated int64
		var payload string
		if err := q.db.QueryRowContext(ctx, q.rebind(`SELECT pr, head_sha, started_at, updated_at, payload FROM driftpreview_status WHERE job_id = ?`),
			job.ID).Scan(&o.PR, &o.HeadSHA, &started, &updated, &payload); err != nil {
			return out, fmt.Errorf("reading the status of job %d: %w", job.ID, err)
		}
		o.StartedAt, o.Payload = time.Unix(0, started), []byte(payload)
		var newer int
		if err := q.db.QueryRowContext(ctx, q.rebind(`SELECT COUNT(*) FROM driftpreview_status
			WHERE pr = ? AND head_sha = ? AND job_id <> ? AND updated_at > ?`),
			o.PR, o.HeadSHA, job.ID, updated).Scan(&newer); err != nil {
			return out, fmt.Errorf("comparing the status of job %d: %w", job.ID, err)
		}
		o.Overtaken = newer > 0
		out = append(out, o)
	}
	return out, nil
}
