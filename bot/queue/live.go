package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// The live side of each pull request's latest posted preview (jobs.LiveRecord as
// JSON), so the watch of open pull requests (bot/watch) is rebuilt after a
// restart and the next preview can say what changed in the cluster since.
func init() {
	for _, s := range []*[]string{&sqliteSchema, &postgresSchema} {
		*s = append(*s, `CREATE TABLE IF NOT EXISTS driftpreview_live (
		pr TEXT PRIMARY KEY, payload TEXT NOT NULL, updated_at BIGINT NOT NULL)`)
	}
}

// SaveLive records payload as pr's latest live side.
func (q *Queue) SaveLive(ctx context.Context, pr string, payload []byte) error {
	_, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_live (pr, payload, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (pr) DO UPDATE SET payload = excluded.payload, updated_at = excluded.updated_at`),
		pr, string(payload), time.Now().Unix())
	if err != nil {
		return fmt.Errorf("recording the live side of %s: %w", pr, err)
	}
	return nil
}

// LoadLive returns pr's latest live side; found is false when none is kept.
func (q *Queue) LoadLive(ctx context.Context, pr string) (payload []byte, found bool, err error) {
	var s string
	err = q.db.QueryRowContext(ctx, q.rebind(`SELECT payload FROM driftpreview_live WHERE pr = ?`), pr).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the live side of %s: %w", pr, err)
	}
	return []byte(s), true, nil
}

// DeleteLive forgets pr's live side (the pull request was closed or merged).
func (q *Queue) DeleteLive(ctx context.Context, pr string) error {
	if _, err := q.db.ExecContext(ctx, q.rebind(`DELETE FROM driftpreview_live WHERE pr = ?`), pr); err != nil {
		return fmt.Errorf("forgetting the live side of %s: %w", pr, err)
	}
	return nil
}

// OpenLive calls fn with the live side of every pull request not recorded as
// closed, for rebuilding the watch after a restart.
func (q *Queue) OpenLive(ctx context.Context, fn func(pr string, payload []byte) error) error {
	rows, err := q.db.QueryContext(ctx, q.rebind(`SELECT l.pr, l.payload FROM driftpreview_live l
		LEFT JOIN driftpreview_pr_head h ON h.pr = l.pr WHERE h.state IS NULL OR h.state <> ?`), PRClosed)
	if err != nil {
		return fmt.Errorf("reading the live sides of open pull requests: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pr, payload string
		if err := rows.Scan(&pr, &payload); err != nil {
			return fmt.Errorf("reading the live sides of open pull requests: %w", err)
		}
		if err := fn(pr, []byte(payload)); err != nil {
			return err
		}
	}
	return rows.Err()
}

// RecheckDue cancels the unfinished re-previews of a pull request's live
// changes (jobs.Args with Recheck) carrying tag, so the one about to be queued is
// the only one: the newest wins. It returns the IDs it cancelled.
func (q *Queue) RecheckDue(ctx context.Context, tag string) ([]int64, error) {
	return q.CancelTagged(ctx, tag, func(row *rivertype.JobRow) bool {
		var a struct {
			Recheck bool `json:"recheck"`
		}
		return json.Unmarshal(row.EncodedArgs, &a) == nil && a.Recheck
	})
}
