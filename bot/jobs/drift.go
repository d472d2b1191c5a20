package jobs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/keylock"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
)

// DriftKind is the River job kind of a drift report run. Stored jobs refer to
// it: never rename it.
const DriftKind = "driftpreview_drift"

// Triggers of a drift run.
const (
	DriftOnPush     = "push"
	DriftOnSchedule = "schedule"
)

// DriftArgs is one queued drift report run of a repository's default branch.
// Every run checks the branch's head when it starts, whatever commit its push
// named, so the newest run always reports the newest commit.
type DriftArgs struct {
	// Repo names the repository (bot.PR with Number 0, BaseRef the default
	// branch, HeadSHA the pushed commit or "" for a scheduled run).
	Repo       bot.PR `json:"repo"`
	DeliveryID string `json:"deliveryID,omitempty"`
	Trigger    string `json:"trigger"`
	// Period makes a scheduled run unique per period (River's ByPeriod): every
	// replica's schedule inserts it, one runs.
	Period time.Duration `json:"period,omitempty"`
	// UniqueKey is the repository plus the pushed commit, or "schedule".
	UniqueKey string `json:"uniqueKey" river:"unique"`
}

// Kind implements river.JobArgs.
func (DriftArgs) Kind() string { return DriftKind }

// InsertOpts tags the run with its repository (DriftTag) and makes it unique
// by UniqueKey (within Period for a scheduled run).
func (a DriftArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Tags: []string{DriftTag(a.Repo)}, UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: a.Period}}
}

// NewDriftArgs is the run of a push to the default branch (bot.EventDrift).
func NewDriftArgs(ev bot.Event) DriftArgs {
	return DriftArgs{Repo: ev.PR, DeliveryID: ev.DeliveryID, Trigger: DriftOnPush,
		UniqueKey: DriftKey(ev.PR) + "@" + ev.PR.HeadSHA}
}

// ScheduledDriftArgs is the scheduled run of repo, one per period.
func ScheduledDriftArgs(repo bot.PR, period time.Duration) DriftArgs {
	repo.HeadSHA = ""
	return DriftArgs{Repo: repo, Trigger: DriftOnSchedule, Period: period, UniqueKey: DriftKey(repo) + " schedule"}
}

// DriftKey names a repository host-neutrally ("github/acme/shop").
func DriftKey(repo bot.PR) string { return repo.Host + "/" + repo.Repo }

// DriftTag is the River tag of every drift run of a repository.
func DriftTag(repo bot.PR) string {
	sum := sha256.Sum256([]byte(DriftKey(repo)))
	return "drift-" + hex.EncodeToString(sum[:12])
}

// DriftTitle is the drift issue's title: found in a search, one per repository.
func DriftTitle(branch string) string { return "driftpreview: live drift on " + branch }

// DriftHost is what a drift run needs from a host adapter (*github.Client,
// *gitlab.Client): where to fetch the repository from, and its one drift issue.
type DriftHost interface {
	FetchSpec(ctx context.Context, pr bot.PR) (bot.FetchSpec, error)
	UpsertDriftIssue(ctx context.Context, repo bot.PR, want bot.DriftIssue) (bot.IssueRef, error)
}

// DriftFunc runs the drift engine; preview.Drift in production.
type DriftFunc func(ctx context.Context, req preview.DriftRequest) (*diffing.DriftReport, error)

// DriftRuns is what the drift worker needs from the queue (*queue.Queue): the
// other runs of the same repository.
type DriftRuns interface {
	TagSiblings(ctx context.Context, tag string, id int64) (olderRunning, newer bool, err error)
}

// DriftObserver receives each posted drift report's counts, for the
// driftpreview_drift_objects gauge.
type DriftObserver interface {
	DriftReported(repo string, counts []diffing.TargetCount)
}

// DriftWait is how long a run waits (River's snooze, which costs no attempt)
// while an older run of the same repository is still running. Tests shorten
// it before starting a worker.
var DriftWait = 15 * time.Second

// DriftWorker runs drift report jobs: at most one per repository at a time, the
// newest winning. It is safe for concurrent use.
type DriftWorker struct {
	river.WorkerDefaults[DriftArgs]
	hosts  map[string]DriftHost
	drift  DriftFunc
	mirror *Mirror
	runs   DriftRuns
	obs    DriftObserver
	opts   Options
	postMu keylock.Locks
}

// NewDriftWorker builds a DriftWorker; obs may be nil. opts are the preview
// worker's (clusters, remote, caches, logger, clock).
func NewDriftWorker(hosts map[string]DriftHost, drift DriftFunc, m *Mirror, runs DriftRuns, obs DriftObserver, opts Options) *DriftWorker {
	def := DefaultOptions()
	if opts.StatusTimeout <= 0 {
		opts.StatusTimeout = def.StatusTimeout
	}
	if opts.Logger == nil {
		opts.Logger = def.Logger
	}
	if opts.Now == nil {
		opts.Now = def.Now
	}
	return &DriftWorker{hosts: hosts, drift: drift, mirror: m, runs: runs, obs: obs, opts: opts}
}

// Drift run outcomes, for logs.
const (
	DriftPosted     = "posted"
	DriftSuperseded = "superseded"
	DriftUnknown    = "not-compared"
)

// Work runs one drift report: it waits for an older run of the repository,
// gives way to a newer one, fetches the default branch's head, runs the
// engine, and (unless a newer run was queued meanwhile) makes the repository's
// drift issue say what it found and updates the gauge. Errors are retried by
// River.
func (w *DriftWorker) Work(ctx context.Context, job *river.Job[DriftArgs]) error {
	a := job.Args
	log := w.opts.Logger.With("job", job.ID, "attempt", job.Attempt, "host", a.Repo.Host, "repo", a.Repo.Repo,
		"trigger", a.Trigger, "delivery", a.DeliveryID)
	host, ok := w.hosts[a.Repo.Host]
	if !ok {
		log.Error("drift run for a host that is not configured or cannot keep issues; dropping it")
		return nil
	}
	tag := DriftTag(a.Repo)
	older, newer, err := w.runs.TagSiblings(ctx, tag, job.ID)
	if err != nil {
		return err
	}
	if newer {
		log.Info("drift run superseded before start: a newer run of the repository is queued")
		return nil
	}
	if older {
		log.Debug("drift run waits for the repository's running one")
		return river.JobSnooze(DriftWait)
	}
	begin := w.opts.Now()
	outcome, ref, err := w.run(ctx, job.ID, host, a, log)
	if err != nil {
		log.Warn("drift run failed", "error", err)
		return err
	}
	log.Info("drift run finished", "outcome", outcome, "issue", ref.Number, "open", ref.Open,
		"duration", w.opts.Now().Sub(begin).Round(time.Millisecond))
	return nil
}

func (w *DriftWorker) run(ctx context.Context, id int64, host DriftHost, a DriftArgs, log *slog.Logger) (string, bot.IssueRef, error) {
	repo := a.Repo
	branch := repo.BaseRef
	if branch == "" {
		return "", bot.IssueRef{}, river.JobCancel(fmt.Errorf("drift run of %s names no default branch", repo.Repo))
	}
	spec, err := host.FetchSpec(ctx, repo)
	if err != nil {
		return "", bot.IssueRef{}, fmt.Errorf("getting clone credentials: %w", err)
	}
	dir, sha, err := w.mirror.FetchBranch(ctx, FetchRequest{Host: repo.Host, Repo: repo.Repo, URL: spec.URL, Header: spec.Header}, branch)
	if err != nil {
		return "", bot.IssueRef{}, err
	}
	req := preview.DriftRequest{Request: w.opts.request(dir, repoURLs(spec.URL, repo.URL)), Ref: sha}
	req.BaseBranch = branch
	rep, err := w.drift(ctx, req)
	if err != nil {
		return "", bot.IssueRef{}, fmt.Errorf("drift of %s at %s: %w", branch, short(sha), err)
	}
	if rep == nil {
		return "", bot.IssueRef{}, errors.New("drift: no report")
	}
	if compared, _ := rep.Compared(); compared == 0 {
		// Nothing was compared with live: whether the cluster matches git is
		// unknown, so the issue is neither closed nor reopened.
		log.Warn("drift run compared no target with live; the drift issue is left as it is", "commit", short(sha))
		return DriftUnknown, bot.IssueRef{}, nil
	}
	// Post under the repository's lock, after checking that no newer run was
	// queued meanwhile: an older result never overwrites a newer one.
	mu := w.postMu.For(DriftKey(repo))
	mu.Lock()
	defer mu.Unlock()
	if _, newer, err := w.runs.TagSiblings(ctx, DriftTag(repo), id); err != nil {
		return "", bot.IssueRef{}, err
	} else if newer {
		return DriftSuperseded, bot.IssueRef{}, nil
	}
	want := bot.DriftIssue{Title: DriftTitle(branch), Body: DriftIssueBody(rep, branch, sha, w.opts.Now()), Drift: rep.Drifted}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*w.opts.StatusTimeout)
	defer cancel()
	ref, err := host.UpsertDriftIssue(pctx, repo, want)
	if err != nil {
		return "", bot.IssueRef{}, fmt.Errorf("keeping the drift issue: %w", err)
	}
	if w.obs != nil {
		w.obs.DriftReported(DriftKey(repo), rep.Counts())
	}
	return DriftPosted, ref, nil
}

// DriftIssueBody is the drift issue's text: the engine's Markdown report, then
// which commit was checked when and what the issue is.
func DriftIssueBody(rep *diffing.DriftReport, branch, sha string, at time.Time) string {
	var b strings.Builder
	b.WriteString(report.DriftMarkdown(rep))
	fmt.Fprintf(&b, "\n\n---\nChecked `%s` at commit `%s` against the live clusters at %s. ", branch, short(sha), at.UTC().Format(time.RFC3339))
	b.WriteString("driftpreview keeps this one issue per repository: it edits it after each push to the default branch and on its schedule, closes it when the clusters match git again and reopens it on new drift.")
	return b.String()
}
