package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// The drift report's table: the repositories whose default branch the drift
// schedule checks, learned from their pushes (payload is the repository as a
// bot.PR in JSON: host, path, installation or project ID, default branch).
var driftSchema = []string{
	`CREATE TABLE IF NOT EXISTS driftpreview_drift_repo (
		repo TEXT PRIMARY KEY, payload TEXT NOT NULL, updated_at BIGINT NOT NULL)`,
}

// RememberDriftRepo records repo (a host-neutral key such as "github/acme/shop")
// with payload, replacing what was recorded, so the drift schedule checks it.
func (q *Queue) RememberDriftRepo(ctx context.Context, repo string, payload []byte) error {
	_, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_drift_repo (repo, payload, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (repo) DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at`),
		repo, string(payload), time.Now().Unix())
	if err != nil {
		return fmt.Errorf("recording %s for the drift schedule: %w", repo, err)
	}
	return nil
}

// maxDriftRepos bounds one listing of DriftRepos.
const maxDriftRepos = 10000

// DriftRepos returns the payloads RememberDriftRepo recorded, by repository.
func (q *Queue) DriftRepos(ctx context.Context) ([][]byte, error) {
	rows, err := q.db.QueryContext(ctx, q.rebind(`SELECT payload FROM driftpreview_drift_repo ORDER BY repo LIMIT ?`), maxDriftRepos)
	if err != nil {
		return nil, fmt.Errorf("listing the drift schedule's repositories: %w", err)
	}
	var out [][]byte
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing the drift schedule's repositories: %w", err)
		}
		out = append(out, []byte(p))
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("listing the drift schedule's repositories: %w", err)
	}
	return out, nil
}

// TagSiblings looks at the other unfinished jobs carrying tag (one repository's
// drift runs) from job id's point of view: olderRunning is true when a job with
// a lower ID is running (id must wait: at most one run per repository at a
// time), newer when a job with a higher ID is waiting or running (id's result is
// stale: the newest run wins).
func (q *Queue) TagSiblings(ctx context.Context, tag string, id int64) (olderRunning, newer bool, err error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().TagsAll(tag).States(unfinished...).First(1000))
	if err != nil {
		return false, false, fmt.Errorf("listing jobs tagged %s: %w", tag, err)
	}
	for _, job := range res.Jobs {
		switch {
		case job.ID < id && job.State == rivertype.JobStateRunning:
			olderRunning = true
		case job.ID > id:
			newer = true
		}
	}
	return olderRunning, newer, nil
}
