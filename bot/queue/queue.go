package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/driftpreview/driftpreview/bot"
)

// Drivers the queue supports.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// Options configures Open.
type Options struct {
	// Driver is DriverSQLite or DriverPostgres.
	Driver string
	// DSN is a SQLite file path (or file: URI), or a Postgres connection string.
	DSN string
	// Workers are the job workers; nil opens an insert-only queue that never works.
	Workers *river.Workers
	// MaxWorkers is how many jobs run at once in this process.
	MaxWorkers int
	// JobTimeout cancels one attempt's context.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before it is taken
	// for crashed and run again; it must exceed JobTimeout.
	RescueStuckJobsAfter time.Duration
	// MaxAttempts bounds retries (River's exponential backoff between them).
	MaxAttempts int
	// RetryPolicy overrides River's default backoff (attempt^4 seconds); nil keeps it.
	RetryPolicy river.ClientRetryPolicy
	// DeliveryTTL is how long delivery IDs are remembered for dedupe.
	DeliveryTTL time.Duration
	// FetchPollInterval is how often idle workers look for new jobs when no
	// notification arrives (SQLite has none; zero keeps River's 1 s).
	FetchPollInterval time.Duration
	Logger            *slog.Logger
}

// Defaults of Options (serverconfig names them as server.yaml's defaults).
const (
	DefaultMaxWorkers = 2
	DefaultJobTimeout = 10 * time.Minute
	// RescueMargin is how much longer than JobTimeout a job may run before it is
	// taken for crashed: RescueStuckJobsAfter defaults to JobTimeout plus it.
	RescueMargin       = 5 * time.Minute
	DefaultMaxAttempts = 5
	DefaultDeliveryTTL = 72 * time.Hour
)

// DefaultOptions is SQLite with 2 workers, 10-minute attempts, rescue after 15
// minutes, 5 attempts, and delivery IDs kept for 3 days.
func DefaultOptions() Options {
	return Options{
		Driver:               DriverSQLite,
		MaxWorkers:           DefaultMaxWorkers,
		JobTimeout:           DefaultJobTimeout,
		RescueStuckJobsAfter: DefaultJobTimeout + RescueMargin,
		MaxAttempts:          DefaultMaxAttempts,
		DeliveryTTL:          DefaultDeliveryTTL,
	}
}

// riverClient is the part of *river.Client[TTx] the queue uses, free of the
// driver's transaction type so SQLite and Postgres share one code path.
type riverClient interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	JobCancel(ctx context.Context, jobID int64) (*rivertype.JobRow, error)
	JobGet(ctx context.Context, id int64) (*rivertype.JobRow, error)
	JobList(ctx context.Context, params *river.JobListParams) (*river.JobListResult, error)
	Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func())
}

// Queue is an open queue: River's client plus the bot's own tables.
type Queue struct {
	driver  string
	db      *sql.DB       // the bot's tables (and River's, for SQLite)
	pool    *pgxpool.Pool // River's pool for Postgres
	client  riverClient
	opts    Options
	log     *slog.Logger
	started bool
}

// Open connects, runs River's migrations and the bot's own, and builds the River
// client. It does not start working jobs: call Start.
func Open(ctx context.Context, opts Options) (*Queue, error) {
	def := DefaultOptions()
	if opts.Driver == "" {
		opts.Driver = def.Driver
	}
	if opts.MaxWorkers <= 0 {
		opts.MaxWorkers = def.MaxWorkers
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = def.JobTimeout
	}
	if opts.RescueStuckJobsAfter <= 0 {
		opts.RescueStuckJobsAfter = opts.JobTimeout + RescueMargin
	}
	if opts.RescueStuckJobsAfter <= opts.JobTimeout {
		return nil, fmt.Errorf("opening queue: rescue-stuck-jobs-after (%s) must exceed the job timeout (%s)", opts.RescueStuckJobsAfter, opts.JobTimeout)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = def.MaxAttempts
	}
	if opts.DeliveryTTL <= 0 {
		opts.DeliveryTTL = def.DeliveryTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DSN == "" {
		return nil, errors.New("opening queue: no DSN (queue.dsn in server.yaml)")
	}
	q := &Queue{driver: opts.Driver, opts: opts, log: opts.Logger}
	cfg := &river.Config{
		JobTimeout:           opts.JobTimeout,
		RescueStuckJobsAfter: opts.RescueStuckJobsAfter,
		MaxAttempts:          opts.MaxAttempts,
		RetryPolicy:          opts.RetryPolicy,
		FetchPollInterval:    opts.FetchPollInterval,
		Logger:               opts.Logger.With("component", "river"),
		Workers:              opts.Workers,
		// Give running jobs a short grace period on shutdown, then cancel them; the
		// rescuer reruns what did not finish.
		SoftStopTimeout: 20 * time.Second,
	}
	if opts.FetchPollInterval > 0 && opts.FetchPollInterval < 100*time.Millisecond {
		cfg.FetchCooldown = opts.FetchPollInterval
	}
	if opts.Workers != nil {
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: opts.MaxWorkers}}
	}
	var err error
	switch opts.Driver {
	case DriverSQLite:
		err = q.openSQLite(ctx, cfg)
	case DriverPostgres:
		err = q.openPostgres(ctx, cfg)
	default:
		err = fmt.Errorf("unknown driver %q (want sqlite or postgres)", opts.Driver)
	}
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("opening %s queue: %w", opts.Driver, err)
	}
	return q, nil
}

// sqliteURI turns a path into a modernc.org/sqlite URI with WAL journaling and a
// busy timeout, which River needs to avoid SQLITE_BUSY. A file: URI is used as is.
func sqliteURI(dsn string) string {
	if strings.HasPrefix(dsn, "file:") {
		return dsn
	}
	return "file:" + dsn + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"
}

func (q *Queue) openSQLite(ctx context.Context, cfg *river.Config) error {
	if !strings.HasPrefix(q.opts.DSN, "file:") {
		if err := os.MkdirAll(filepath.Dir(q.opts.DSN), 0o750); err != nil {
			return fmt.Errorf("creating the database directory: %w", err)
		}
	}
	db, err := sql.Open("sqlite", sqliteURI(q.opts.DSN))
	if err != nil {
		return err
	}
	// SQLite allows one writer; River's own advice is a single connection.
	db.SetMaxOpenConns(1)
	q.db = db
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	driver := riversqlite.New(db)
	if err := migrateSQLite(ctx, db, driver, q.opts.DSN); err != nil {
		return err
	}
	q.client, err = river.NewClient(driver, cfg)
	return err
}

func (q *Queue) openPostgres(ctx context.Context, cfg *river.Config) error {
	pool, err := pgxpool.New(ctx, q.opts.DSN)
	if err != nil {
		// pgx errors can quote the connection string; say only what failed.
		return errors.New("parsing the Postgres DSN failed (check queue.dsn)")
	}
	q.pool = pool
	q.db = stdlib.OpenDBFromPool(pool)
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	driver := riverpgxv5.New(pool)
	if err := migratePostgres(ctx, pool, driver); err != nil {
		return err
	}
	q.client, err = river.NewClient(driver, cfg)
	return err
}

// migrateSQLite runs River's migrations and creates the bot's tables, under a file
// lock next to the database so two processes starting at once migrate in turn.
func migrateSQLite(ctx context.Context, db *sql.DB, driver *riversqlite.Driver, dsn string) error {
	if !strings.HasPrefix(dsn, "file:") {
		f, err := os.OpenFile(dsn+".migrate-lock", os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return fmt.Errorf("migrating: %w", err)
		}
		defer f.Close()
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			return fmt.Errorf("migrating: taking the migration lock: %w", err)
		}
		defer func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }()
	}
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("preparing migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("running River's migrations: %w", err)
	}
	for _, stmt := range slices.Concat(sqliteSchema, driftSchema) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("creating the bot's tables: %w", err)
		}
	}
	return nil
}

// migratePostgres runs River's migrations (each in its own transaction, as Postgres
// needs for new enum values) and the bot's schema, holding a session advisory lock
// so replicas starting together migrate one at a time.
func migratePostgres(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrating: %w", err)
	}
	defer conn.Release()
	const lockKey = 7263512896001
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return fmt.Errorf("migrating: taking the migration lock: %w", err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockKey) }()
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("preparing migrations: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("running River's migrations: %w", err)
	}
	for _, stmt := range slices.Concat(postgresSchema, driftSchema) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("creating the bot's tables: %w", err)
		}
	}
	return nil
}

// The bot's own tables. Times are Unix seconds (driftpreview_status: nanoseconds,
// to order status writes) so both databases share the SQL. Every statement is
// idempotent: Open runs them all on each start.
var sqliteSchema = []string{
	`CREATE TABLE IF NOT EXISTS driftpreview_delivery (
		host TEXT NOT NULL, id TEXT NOT NULL, seen_at INTEGER NOT NULL,
		PRIMARY KEY (host, id))`,
	`CREATE INDEX IF NOT EXISTS driftpreview_delivery_seen ON driftpreview_delivery (seen_at)`,
	`CREATE TABLE IF NOT EXISTS driftpreview_pr_head (
		pr TEXT PRIMARY KEY, head_sha TEXT NOT NULL, state TEXT NOT NULL, updated_at INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS driftpreview_status (
		job_id INTEGER PRIMARY KEY, pr TEXT NOT NULL, head_sha TEXT NOT NULL, state TEXT NOT NULL,
		started_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, claimed_until INTEGER NOT NULL DEFAULT 0,
		payload TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS driftpreview_status_state ON driftpreview_status (state)`,
	`CREATE INDEX IF NOT EXISTS driftpreview_status_pr ON driftpreview_status (pr, head_sha)`,
}

var postgresSchema = []string{
	`CREATE TABLE IF NOT EXISTS driftpreview_delivery (
		host TEXT NOT NULL, id TEXT NOT NULL, seen_at BIGINT NOT NULL,
		PRIMARY KEY (host, id))`,
	`CREATE INDEX IF NOT EXISTS driftpreview_delivery_seen ON driftpreview_delivery (seen_at)`,
	`CREATE TABLE IF NOT EXISTS driftpreview_pr_head (
		pr TEXT PRIMARY KEY, head_sha TEXT NOT NULL, state TEXT NOT NULL, updated_at BIGINT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS driftpreview_status (
		job_id BIGINT PRIMARY KEY, pr TEXT NOT NULL, head_sha TEXT NOT NULL, state TEXT NOT NULL,
		started_at BIGINT NOT NULL, updated_at BIGINT NOT NULL, claimed_until BIGINT NOT NULL DEFAULT 0,
		payload TEXT NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS driftpreview_status_state ON driftpreview_status (state)`,
	`CREATE INDEX IF NOT EXISTS driftpreview_status_pr ON driftpreview_status (pr, head_sha)`,
}

// rebind turns ? placeholders into $n for Postgres.
func (q *Queue) rebind(s string) string {
	if q.driver != DriverPostgres {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Start starts working jobs until ctx is done or Stop is called.
func (q *Queue) Start(ctx context.Context) error {
	if q.opts.Workers == nil {
		return errors.New("starting queue: opened without workers")
	}
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("starting queue: %w", err)
	}
	q.started = true
	return nil
}

// Stop lets running jobs finish (up to a grace period, then cancels them) and stops
// fetching. Jobs that did not finish are rescued by the next process.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.started {
		return nil
	}
	q.started = false
	if err := q.client.Stop(ctx); err != nil {
		return fmt.Errorf("stopping queue: %w", err)
	}
	return nil
}

// Close releases the database; call it after Stop.
func (q *Queue) Close() {
	if q.db != nil {
		_ = q.db.Close()
	}
	if q.pool != nil {
		q.pool.Close()
	}
}

// Ping checks that the store answers; /readyz uses it.
func (q *Queue) Ping(ctx context.Context) error {
	var one int
	if err := q.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("pinging the %s queue: %w", q.driver, err)
	}
	return nil
}

// Driver is DriverSQLite or DriverPostgres, for logs.
func (q *Queue) Driver() string { return q.driver }

// Insert enqueues a job. Duplicate is true when River's unique options found the
// same job already queued, running or recently completed; id is then that job's.
func (q *Queue) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (id int64, duplicate bool, err error) {
	res, err := q.client.Insert(ctx, args, opts)
	if err != nil {
		return 0, false, fmt.Errorf("enqueuing %s job: %w", args.Kind(), err)
	}
	return res.Job.ID, res.UniqueSkippedAsDuplicate, nil
}

// MarkDelivery records a delivery ID. Fresh is false when it was seen within
// DeliveryTTL: the caller must not enqueue it again. Expired IDs are purged on the
// way.
func (q *Queue) MarkDelivery(ctx context.Context, host, id string) (fresh bool, err error) {
	now := time.Now()
	if _, err := q.db.ExecContext(ctx, q.rebind(`DELETE FROM driftpreview_delivery WHERE seen_at < ?`), now.Add(-q.opts.DeliveryTTL).Unix()); err != nil {
		return false, fmt.Errorf("expiring delivery IDs: %w", err)
	}
	res, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_delivery (host, id, seen_at) VALUES (?, ?, ?) ON CONFLICT (host, id) DO NOTHING`), host, id, now.Unix())
	if err != nil {
		return false, fmt.Errorf("recording delivery %s: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("recording delivery %s: %w", id, err)
	}
	return n == 1, nil
}

// ForgetDelivery removes a delivery ID, when enqueuing it failed and the host should
// be able to redeliver it.
func (q *Queue) ForgetDelivery(ctx context.Context, host, id string) error {
	if _, err := q.db.ExecContext(ctx, q.rebind(`DELETE FROM driftpreview_delivery WHERE host = ? AND id = ?`), host, id); err != nil {
		return fmt.Errorf("forgetting delivery %s: %w", id, err)
	}
	return nil
}

// PR states recorded with the head SHA.
const (
	PROpen   = "open"
	PRClosed = "closed"
)

// SetHead records sha as the newest head of pr (a host-neutral key such as
// "github/acme/shop#12") in state PROpen or PRClosed. Jobs compare their own SHA with
// it before posting.
func (q *Queue) SetHead(ctx context.Context, pr, sha, state string) error {
	_, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_pr_head (pr, head_sha, state, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (pr) DO UPDATE SET head_sha = excluded.head_sha, state = excluded.state, updated_at = excluded.updated_at`),
		pr, sha, state, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("recording head of %s: %w", pr, err)
	}
	return nil
}

// SetState changes a PR's recorded state (to PRClosed on close) and keeps its head.
func (q *Queue) SetState(ctx context.Context, pr, state string) error {
	_, err := q.db.ExecContext(ctx, q.rebind(`INSERT INTO driftpreview_pr_head (pr, head_sha, state, updated_at) VALUES (?, '', ?, ?)
		ON CONFLICT (pr) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`),
		pr, state, time.Now().Unix())
	if err != nil {
		return fmt.Errorf("recording state of %s: %w", pr, err)
	}
	return nil
}

// Head returns the newest head SHA and state recorded for pr; found is false when
// none was recorded.
func (q *Queue) Head(ctx context.Context, pr string) (sha, state string, found bool, err error) {
	err = q.db.QueryRowContext(ctx, q.rebind(`SELECT head_sha, state FROM driftpreview_pr_head WHERE pr = ?`), pr).Scan(&sha, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, fmt.Errorf("reading head of %s: %w", pr, err)
	}
	return sha, state, true, nil
}

// unfinished are the states of jobs that may still run.
var unfinished = []rivertype.JobState{
	rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRetryable,
	rivertype.JobStateRunning, rivertype.JobStateScheduled,
}

// CancelTagged cancels every unfinished job carrying tag for which cancel returns
// true; running jobs get their context cancelled (River notifies the process that
// runs them). It returns the IDs it cancelled.
func (q *Queue) CancelTagged(ctx context.Context, tag string, cancel func(*rivertype.JobRow) bool) ([]int64, error) {
	params := river.NewJobListParams().TagsAll(tag).States(unfinished...).First(1000)
	res, err := q.client.JobList(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("listing jobs tagged %s: %w", tag, err)
	}
	var ids []int64
	for _, job := range res.Jobs {
		if cancel != nil && !cancel(job) {
			continue
		}
		if _, err := q.client.JobCancel(ctx, job.ID); err != nil {
			if errors.Is(err, rivertype.ErrNotFound) {
				continue
			}
			return ids, fmt.Errorf("cancelling job %d: %w", job.ID, err)
		}
		ids = append(ids, job.ID)
	}
	return ids, nil
}

// CancelPR cancels every unfinished job carrying tag, the tag of one pull
// request's jobs (a close). It returns the IDs it cancelled.
func (q *Queue) CancelPR(ctx context.Context, tag string) ([]int64, error) {
	return q.CancelTagged(ctx, tag, nil)
}

// prArgs is the part of a job's arguments Supersede reads: every job that carries
// a pull request stores it as "pr" (jobs.Args).
type prArgs struct {
	PR bot.PR `json:"pr"`
}

// Supersede cancels every unfinished job carrying tag whose pull request is at
// other commits than base..head (a push moved the PR on), and returns their IDs.
// Jobs for base..head itself, and rows that do not decode, are left alone.
func (q *Queue) Supersede(ctx context.Context, tag, base, head string) ([]int64, error) {
	return q.CancelTagged(ctx, tag, func(row *rivertype.JobRow) bool {
		var a prArgs
		if json.Unmarshal(row.EncodedArgs, &a) != nil {
			return false
		}
		return a.PR.HeadSHA != head || a.PR.BaseSHA != base
	})
}

// Job returns one job, for tests and diagnostics.
func (q *Queue) Job(ctx context.Context, id int64) (*rivertype.JobRow, error) {
	job, err := q.client.JobGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reading job %d: %w", id, err)
	}
	return job, nil
}

// Jobs lists jobs of a kind in any state, oldest first, for tests and diagnostics.
func (q *Queue) Jobs(ctx context.Context, kind string) ([]*rivertype.JobRow, error) {
	res, err := q.client.JobList(ctx, river.NewJobListParams().Kinds(kind).First(10000).OrderBy(river.JobListOrderByID, river.SortOrderAsc))
	if err != nil {
		return nil, fmt.Errorf("listing %s jobs: %w", kind, err)
	}
	return res.Jobs, nil
}

// Subscribe streams job events (completed, failed, cancelled…) of this process's
// workers, for metrics and tests. Call the returned function to stop.
func (q *Queue) Subscribe(kinds ...river.EventKind) (<-chan *river.Event, func()) {
	return q.client.Subscribe(kinds...)
}
