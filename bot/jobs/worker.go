package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/bot/internal/keylock"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render/remote"
)

// Host is what a job needs from a host adapter (*github.Client, *gitlab.Client).
// Everything that differs between hosts (ref names, URL shapes, size limits) is
// data the adapter hands over; jobs never branches on bot.PR.Host.
type Host interface {
	// ResolvePR fills SHAs and refs; a re-run comment carries none.
	ResolvePR(ctx context.Context, pr bot.PR) (bot.PR, error)
	// CanRerun reports whether user has write access to pr's repository.
	CanRerun(ctx context.Context, pr bot.PR, user string) (bool, error)
	UpsertComment(ctx context.Context, pr bot.PR, key string, pages []string) error
	SetStatus(ctx context.Context, pr bot.PR, s bot.Status) error
	// FetchSpec says where and how git fetches pr's commits.
	FetchSpec(ctx context.Context, pr bot.PR) (bot.FetchSpec, error)
	// MaxCommentChars is the size limit of one comment page.
	MaxCommentChars() int
}

// Previewer runs the preview pipeline; preview.Run in production.
type Previewer interface {
	Preview(ctx context.Context, req preview.Request) (*diffing.Report, error)
}

// PreviewFunc adapts a function such as preview.Run to Previewer.
type PreviewFunc func(ctx context.Context, req preview.Request) (*diffing.Report, error)

// Preview calls f.
func (f PreviewFunc) Preview(ctx context.Context, req preview.Request) (*diffing.Report, error) {
	return f(ctx, req)
}

// Heads is the per-PR newest head record (bot/queue implements it).
type Heads interface {
	SetHead(ctx context.Context, pr, sha, state string) error
	Head(ctx context.Context, pr string) (sha, state string, found bool, err error)
}

// StatusLog durably records the in-progress statuses jobs set and which of them
// were completed, so Sweep can complete the ones a job never did (its process was
// killed on the last attempt). bot/queue implements it.
type StatusLog interface {
	// StatusStarted is called before an in-progress status is posted; payload is
	// the PR as JSON.
	StatusStarted(ctx context.Context, jobID int64, pr, sha string, startedAt time.Time, payload []byte) error
	// StatusFinished is called after a final status was posted.
	StatusFinished(ctx context.Context, jobID int64) error
}

// Store is the durable state a Worker needs: heads and the status log.
type Store interface {
	Heads
	StatusLog
}

// Observer receives job outcomes, for metrics. Outcomes are the Outcome* constants.
type Observer interface {
	JobFinished(outcome string, d time.Duration)
	ReportPosted(pr bot.PR, r *diffing.Report)
}

// Outcomes of one attempt, the label of the jobs metric.
const (
	OutcomeSuccess    = "success"    // posted, nothing fails the policy
	OutcomeFailure    = "failure"    // posted, the policy fails
	OutcomeNeutral    = "neutral"    // a fork PR that is not rendered, or nothing compared
	OutcomeSuperseded = "superseded" // a newer head (or a close) took over
	OutcomeDenied     = "denied"     // a re-run by a user without write access
	OutcomeRetry      = "retry"      // an error; River retries with backoff
	OutcomeError      = "error"      // an error on the last attempt: status error
)

// Options configures the Worker.
type Options struct {
	// AllowForkPRs renders fork PRs; otherwise they get a neutral status.
	AllowForkPRs bool
	// Clusters and DefaultCluster are passed to every preview.
	Clusters       map[string]preview.Cluster
	DefaultCluster *preview.Cluster
	// ArgoCDCluster is where Argo CD's Applications live (hub and spoke); nil
	// means in each in-cluster destination.
	ArgoCDCluster *preview.Cluster
	// Remote fetches remote charts as the server config's remote: block allows;
	// nil fetches nothing.
	Remote *remote.Fetcher
	// CheckoutDir is where previews check out base and head
	// (preview.Request.CheckoutDir); empty chooses.
	CheckoutDir string
	// RenderCache keeps renders on disk across jobs (under the work dir); nil
	// keeps them only in memory.
	RenderCache *preview.DiskCache
	// ArgoClusters, when not nil, are Argo CD's clusters for the ApplicationSet
	// clusters generator (the server config's argocd.clusters).
	ArgoClusters []gitops.ArgoCluster
	// Report is the base of the comment options; MaxChars is set per host.
	Report report.Options
	// Live keeps the live side of each posted preview and, for the next one,
	// says what changed in the cluster since (bot/watch re-previews a pull
	// request when it changes); nil keeps nothing.
	Live LiveHistory
	// Reports keeps each preview's full report page and gives the link the
	// comment shows (reports.Store); nil keeps none and links none.
	Reports ReportPages
	// StatusTimeout bounds the final status call made after the job's context ended,
	// and the comment post with its final status, which a cancel does not cut
	// short (a POST abandoned mid-flight may land after a newer head's post).
	StatusTimeout time.Duration
	// ReconcileDelay is how long after posting a job's comment the worker lists
	// the comments once more and removes any sticky comment of another head that
	// landed late (a POST abandoned by a job of an older head, in this process or
	// another replica, that the host served after this job listed the comments).
	// Zero means DefaultReconcileDelay; negative turns the second pass off.
	ReconcileDelay time.Duration
	Logger         *slog.Logger
	Now            func() time.Time
}

// DefaultReconcileDelay is Options.ReconcileDelay's default: longer than a
// comment POST can be in flight (the adapters' 30 s HTTP timeout).
const DefaultReconcileDelay = time.Minute

// DefaultOptions: fork PRs off, the re-run hint in comments.
func DefaultOptions() Options {
	ro := report.DefaultOptions()
	ro.RerunHint = "Comment `/driftpreview rerun` to refresh against the live cluster."
	return Options{
		Report:        ro,
		StatusTimeout: 30 * time.Second,
		Logger:        slog.New(slog.DiscardHandler),
		Now:           time.Now,
	}
}

// Worker runs preview jobs. It is safe for concurrent use.
type Worker struct {
	river.WorkerDefaults[Args]
	hosts   map[string]Host
	preview Previewer
	mirror  *Mirror
	heads   Store
	obs     Observer
	opts    Options

	postMu keylock.Locks

	timersMu sync.Mutex
	timers   map[*time.Timer]bool // pending second passes; nil once stopped
	stopped  bool
}

// NewWorker builds a Worker. hosts is keyed by bot.PR.Host; obs may be nil.
func NewWorker(hosts map[string]Host, p Previewer, m *Mirror, heads Store, obs Observer, opts Options) *Worker {
	def := DefaultOptions()
	if opts.StatusTimeout <= 0 {
		opts.StatusTimeout = def.StatusTimeout
	}
	if opts.ReconcileDelay == 0 {
		opts.ReconcileDelay = DefaultReconcileDelay
	}
	if opts.Logger == nil {
		opts.Logger = def.Logger
	}
	if opts.Now == nil {
		opts.Now = def.Now
	}
	return &Worker{hosts: hosts, preview: p, mirror: m, heads: heads, obs: obs, opts: opts, timers: map[*time.Timer]bool{}}
}

// Work runs one attempt. A returned error makes River retry with backoff; on the
// last attempt the status is completed as an error first.
func (w *Worker) Work(ctx context.Context, job *river.Job[Args]) error {
	begin := w.opts.Now()
	j := &run{w: w, job: job, pr: job.Args.PR}
	j.log = w.opts.Logger.With("job", job.ID, "attempt", job.Attempt, "host", j.pr.Host,
		"repo", j.pr.Repo, "pr", j.pr.Number, "delivery", job.Args.DeliveryID)
	outcome, err := j.do(ctx)
	if err != nil {
		outcome = j.failed(ctx, err)
		if refused(err) {
			// The check is completed; retrying the same commit cannot help.
			err = river.JobCancel(err)
		}
	}
	d := w.opts.Now().Sub(begin)
	j.log.Info("job finished", "outcome", outcome, "duration", d.Round(time.Millisecond), "error", errString(err))
	if w.obs != nil {
		w.obs.JobFinished(outcome, d)
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// run is the state of one attempt.
type run struct {
	w       *Worker
	job     *river.Job[Args]
	pr      bot.PR
	host    Host
	log     *slog.Logger
	started time.Time // when this attempt set in_progress; zero before
}

func (j *run) do(ctx context.Context) (string, error) {
	host, ok := j.w.hosts[j.pr.Host]
	if !ok {
		// A job for a host this server no longer serves: nothing can be posted.
		j.log.Error("job for a host that is not configured; dropping it")
		return OutcomeError, nil
	}
	j.host = host
	key := PRKey(j.pr)
	if j.job.Args.Rerun {
		allowed, err := host.CanRerun(ctx, j.pr, j.job.Args.Actor)
		if err != nil {
			return "", fmt.Errorf("checking %s's permission to re-run: %w", j.job.Args.Actor, err)
		}
		if !allowed {
			j.log.Info("re-run refused: no write access", "actor", j.job.Args.Actor)
			return OutcomeDenied, nil
		}
	}
	// A re-run carries no SHAs, and some hosts' hooks no base SHA: ask the host.
	if j.job.Args.Rerun || j.pr.BaseSHA == "" || j.pr.HeadSHA == "" {
		pr, err := host.ResolvePR(ctx, j.pr)
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", key, err)
		}
		if !j.job.Args.Rerun && j.pr.HeadSHA != "" && pr.HeadSHA != j.pr.HeadSHA {
			// The PR moved on since this delivery; the newer delivery previews it.
			j.log.Info("superseded before start", "reason", "head moved to "+short(pr.HeadSHA))
			return OutcomeSuperseded, nil
		}
		j.pr = pr
		if j.job.Args.Rerun {
			if err := j.w.heads.SetHead(ctx, key, pr.HeadSHA, queue.PROpen); err != nil {
				return "", err
			}
		}
	}
	if sup, why, err := j.superseded(ctx); err != nil {
		return "", err
	} else if sup {
		j.log.Info("superseded before start", "reason", why)
		return OutcomeSuperseded, nil
	}
	if j.pr.Fork && !j.w.opts.AllowForkPRs {
		err := host.SetStatus(ctx, j.pr, bot.Status{
			State: bot.StateNeutral,
			Title: "Not previewed: pull request from a fork",
			Summary: "driftpreview does not render pull requests from forks on this server, because their manifests are untrusted input. " +
				"A maintainer can enable fork PRs with `allowForkPRs: true` in the server configuration.",
			DetailsURL: j.pr.URL,
		})
		if err != nil {
			return "", fmt.Errorf("setting fork status: %w", err)
		}
		return OutcomeNeutral, nil
	}
	j.started = j.w.opts.Now()
	// Recorded first: whatever happens after the status is posted, the record lets
	// Sweep complete it.
	payload, err := json.Marshal(j.pr)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", key, err)
	}
	if err := j.w.heads.StatusStarted(ctx, j.job.ID, key, j.pr.HeadSHA, j.started, payload); err != nil {
		return "", err
	}
	if err := host.SetStatus(ctx, j.pr, bot.Status{
		State: bot.StateInProgress, Title: "Previewing " + short(j.pr.BaseSHA) + ".." + short(j.pr.HeadSHA),
		StartedAt: j.started, DetailsURL: j.pr.URL,
	}); err != nil {
		return "", fmt.Errorf("setting in-progress status: %w", err)
	}
	rep, err := j.render(ctx)
	if err != nil {
		return "", err
	}
	state, outcome := checkState(rep)

	// Post under the PR's lock, after checking no newer head took over, so an
	// older SHA's result never overwrites a newer one.
	unlock := j.w.lockPR(key)
	defer unlock()
	if sup, why, err := j.superseded(ctx); err != nil {
		return "", err
	} else if sup {
		j.finish(ctx, bot.StateNeutral, "Superseded", why)
		return OutcomeSuperseded, nil
	}
	// The page is kept under the lock too, so an older head's never replaces a
	// newer one's.
	opts := j.w.opts
	opts.Report.ReportURL = j.publishReport(key, rep)
	live := j.liveSince(ctx, key, rep, &opts)
	pages := opts.CommentPages(rep, j.pr, host.MaxCommentChars())
	// A cancel (a newer push) does not cut the post short: a comment POST
	// abandoned in flight may still land after the newer head's job listed the
	// comments. It has its own deadline instead.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*j.w.opts.StatusTimeout)
	defer cancel()
	if err := host.UpsertComment(pctx, j.pr, "", pages); err != nil {
		return "", fmt.Errorf("posting the comment: %w", err)
	}
	j.w.reconcileLater(j.pr)
	if err := host.SetStatus(pctx, j.pr, bot.Status{
		State: state, Title: report.Title(rep), Summary: pages[0],
		StartedAt: j.started, DetailsURL: j.pr.URL,
	}); err != nil {
		return "", fmt.Errorf("setting the final status: %w", err)
	}
	j.finished(pctx)
	if j.w.opts.Live != nil {
		if err := j.w.opts.Live.Previewed(pctx, live); err != nil {
			j.log.Error("keeping the preview's live side failed; its changes are not watched", "error", err)
		}
	}
	if j.w.obs != nil {
		j.w.obs.ReportPosted(j.pr, rep)
	}
	return outcome, nil
}

// LiveRecord is the live side of a pull request's posted preview: the live
// objects every target compared, as they were read.
type LiveRecord struct {
	PR      bot.PR               `json:"pr"`
	At      time.Time            `json:"at"`
	Objects []diffing.LiveObject `json:"objects"`
}

// LiveHistory keeps the latest LiveRecord of each pull request (bot/server
// stores it in the queue's database and watches its objects).
type LiveHistory interface {
	// LastLive returns the pull request's latest record, nil when none.
	LastLive(ctx context.Context, prKey string) (*LiveRecord, error)
	// Previewed records a posted preview's live side.
	Previewed(ctx context.Context, rec LiveRecord) error
}

// liveSince collects rep's live side and, when the pull request was previewed
// before, has the comment say what changed in the cluster since (opts.Report).
func (j *run) liveSince(ctx context.Context, key string, rep *diffing.Report, opts *Options) LiveRecord {
	rec := LiveRecord{PR: j.pr, At: j.started}
	for i := range rep.Targets {
		rec.Objects = append(rec.Objects, rep.Targets[i].Live...)
	}
	if j.w.opts.Live == nil {
		return rec
	}
	prev, err := j.w.opts.Live.LastLive(ctx, key)
	if err != nil {
		j.log.Warn("reading the previous preview's live side failed; the comment does not say what changed since", "error", err)
		return rec
	}
	if prev != nil {
		if changes := diffing.LiveChanges(prev.Objects, rec.Objects); len(changes) > 0 {
			opts.Report.LiveSince = &report.LiveSince{At: prev.At, Changes: changes}
		}
	}
	return rec
}

// ReportPages keeps a pull request's latest full report page and returns the
// URL that shows it (reports.Store).
type ReportPages interface {
	Publish(prKey string, page []byte) (string, error)
}

// publishReport keeps rep's page for the pull request and returns its link; ""
// when no store is configured or the page could not be kept (too large, a disk
// error), which is logged: the comment is posted without the link.
func (j *run) publishReport(key string, rep *diffing.Report) string {
	if j.w.opts.Reports == nil {
		return ""
	}
	page, err := report.HTML(rep)
	if err == nil {
		var link string
		if link, err = j.w.opts.Reports.Publish(key, page); err == nil {
			return link
		}
	}
	j.log.Warn("report page not kept; the comment has no link to it", "error", err)
	return ""
}

// DefaultCheckName is the check run (GitHub) and commit status (GitLab) name
// unless one is configured; its sticky comment keeps the marker comments had
// before they were keyed by check name.
const DefaultCheckName = hosttext.DefaultCheckName

// CheckNameOverhead is how many bytes the sticky markers of check name take beyond
// the default ones (each check name keeps its own sticky comment,
// hosttext.CheckKey): a page sized for a host's limit is that much smaller.
func CheckNameOverhead(name string) int { return hosttext.KeyOverhead(hosttext.CheckKey(name)) }

// CommentPages renders rep as the pages of pr's sticky comment with o.Report, each
// sized for its host's limit maxChars with room for the hidden head marker line the
// adapters add to every page (hosttext.HeadMarker), so no page gets truncated. The
// worker and `driftpreview comment` both post these.
func (o Options) CommentPages(rep *diffing.Report, pr bot.PR, maxChars int) []string {
	opts := o.Report
	if n := maxChars; n > 0 {
		opts.MaxChars = n - len(hosttext.HeadMarker(pr.HeadSHA)) - 1
	}
	return report.Pages(rep, opts)
}

// Verdict is the check run (GitHub) or commit status (GitLab) state of a report,
// as the worker posts it; see checkState.
func Verdict(rep *diffing.Report) bot.State {
	s, _ := checkState(rep)
	return s
}

// checkState is the verdict of a report: failure when a finding the PR introduces
// fails the policy; neutral when nothing could be compared (every target failed to
// render or was not rendered, or the repo config is invalid), since a check that
// looked at nothing is neither safe nor failing; success otherwise.
func checkState(rep *diffing.Report) (bot.State, string) {
	switch {
	case rep.Failing:
		return bot.StateFailure, OutcomeFailure
	case rep.NothingCompared():
		return bot.StateNeutral, OutcomeNeutral
	}
	return bot.StateSuccess, OutcomeSuccess
}

// render fetches both commits into the mirror and runs the preview.
func (j *run) render(ctx context.Context) (*diffing.Report, error) {
	spec, err := j.host.FetchSpec(ctx, j.pr)
	if err != nil {
		return nil, fmt.Errorf("getting clone credentials: %w", err)
	}
	dir, err := j.w.mirror.Fetch(ctx, FetchRequest{
		Host: j.pr.Host, Repo: j.pr.Repo, URL: spec.URL, Header: spec.Header,
		SHAs: []string{j.pr.BaseSHA, j.pr.HeadSHA}, Refs: spec.Refs,
	})
	if err != nil {
		return nil, err
	}
	req := j.w.opts.request(dir, repoURLs(spec.URL, spec.WebURL))
	req.Base, req.Head, req.BaseBranch = j.pr.BaseSHA, j.pr.HeadSHA, j.pr.BaseRef
	rep, err := j.w.preview.Preview(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("previewing %s..%s: %w", short(j.pr.BaseSHA), short(j.pr.HeadSHA), err)
	}
	if rep == nil {
		return nil, errors.New("previewing: no report")
	}
	return rep, nil
}

// request is the preview request of the repository mirrored in dir, named by
// urls, with the server's clusters, remote policy and caches; the caller sets
// the commits.
func (o Options) request(dir string, urls []string) preview.Request {
	return preview.Request{
		RepoDir: dir, RepoURLs: urls,
		Clusters: o.Clusters, DefaultCluster: o.DefaultCluster, ArgoCDCluster: o.ArgoCDCluster, ArgoClusters: o.ArgoClusters,
		Remote: o.Remote, RenderCache: o.RenderCache, CheckoutDir: o.CheckoutDir, Now: o.Now(),
		RecordLive: o.Live != nil,
	}
}

// repoURLs are the URLs that name the PR's repository (its clone URL and the web
// URL the adapter cut from the PR's), so Argo CD Applications and Flux
// GitRepositories that point at it are recognised (the mirror has no origin
// remote). Credentials are never part of them.
func repoURLs(cloneURL, webURL string) []string {
	var urls []string
	if u, err := url.Parse(cloneURL); err == nil && u.Scheme != "file" {
		u.User = nil
		urls = append(urls, u.String())
	}
	if webURL != "" {
		urls = append(urls, webURL)
	}
	return urls
}

// superseded reports whether a newer head or a close took over this PR.
func (j *run) superseded(ctx context.Context) (bool, string, error) {
	sha, state, found, err := j.w.heads.Head(ctx, PRKey(j.pr))
	if err != nil {
		return false, "", err
	}
	switch {
	case !found:
		return false, "", nil
	case state == queue.PRClosed:
		return true, "The pull request was closed.", nil
	case sha != "" && sha != j.pr.HeadSHA:
		return true, "A newer commit (" + short(sha) + ") is being previewed.", nil
	}
	return false, "", nil
}

// failed completes the status after an error when no retry will follow (last
// attempt, or the job was cancelled) and returns the outcome.
func (j *run) failed(ctx context.Context, err error) string {
	if j.host == nil {
		return OutcomeError
	}
	if ctx.Err() != nil && errors.Is(context.Cause(ctx), river.ErrJobCancelledRemotely) {
		// Cancelled by a push or a close: say so on this commit if it was started.
		if !j.started.IsZero() {
			_, why, _ := j.superseded(context.WithoutCancel(ctx))
			if why == "" {
				why = "The job was cancelled."
			}
			j.finish(ctx, bot.StateNeutral, "Superseded", why)
		}
		return OutcomeSuperseded
	}
	msg := j.w.hidePaths(err.Error())
	if refused(err) && !j.started.IsZero() {
		j.finish(ctx, bot.StateError, "driftpreview refused this commit: "+firstLine(msg),
			"driftpreview does not preview this commit: "+msg+"\n\nThe limits keep a pull request from filling the bot's disk or memory; change the pull request to stay within them and push again.")
		return OutcomeError
	}
	if j.job.Attempt < j.job.MaxAttempts {
		j.log.Warn("attempt failed; River will retry", "error", err)
		return OutcomeRetry
	}
	if j.pr.HeadSHA != "" {
		j.finish(ctx, bot.StateError, "driftpreview could not finish", "driftpreview gave up after "+
			fmt.Sprint(j.job.Attempt)+" attempts: "+mdtext.Text(firstLine(msg)))
	}
	return OutcomeError
}

// hidePaths names the service's own directories (the repository mirror, the
// checkout dir, the temp dir) symbolically in an error for a status: a
// user-facing message never shows where the service keeps its files (issue 20).
func (w *Worker) hidePaths(msg string) string {
	var dirs [][2]string
	if w.mirror != nil && w.mirror.dir != "" {
		dirs = append(dirs, [2]string{w.mirror.dir, "(repository mirror)"})
	}
	if w.opts.CheckoutDir != "" {
		dirs = append(dirs, [2]string{w.opts.CheckoutDir, "(checkout dir)"})
	}
	dirs = append(dirs, [2]string{os.TempDir(), "(temp dir)"})
	for _, d := range dirs {
		if p := filepath.Clean(d[0]); p != "/" && p != "." {
			msg = strings.ReplaceAll(msg, p, d[1])
		}
	}
	return msg
}

// finish sets a final status even when ctx is already done.
func (j *run) finish(ctx context.Context, state bot.State, title, summary string) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.w.opts.StatusTimeout)
	defer cancel()
	if err := j.host.SetStatus(sctx, j.pr, bot.Status{State: state, Title: title, Summary: summary, StartedAt: j.started, DetailsURL: j.pr.URL}); err != nil {
		j.log.Error("setting the final status failed", "state", state, "error", err)
		return
	}
	j.finished(sctx)
}

// finished records that this job's status is complete, so Sweep leaves it alone. A
// failure only risks a second, identical completion by Sweep: it is logged.
func (j *run) finished(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.w.opts.StatusTimeout)
	defer cancel()
	if err := j.w.heads.StatusFinished(sctx, j.job.ID); err != nil {
		j.log.Error("recording the final status failed", "error", err)
	}
}

func (w *Worker) lockPR(key string) func() {
	mu := w.postMu.For(key)
	mu.Lock()
	return mu.Unlock
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// refused says whether err is the pull request's content exceeding a bound
// (preview.ErrOverLimit, e.g. a checkout bomb): the same commit fails the same
// way on every attempt.
func refused(err error) bool { return errors.Is(err, preview.ErrOverLimit) }

// CommentReconciler is a Host that can delete, without posting, the sticky
// comments of other heads than a PR's (the adapters' ReconcileComments).
type CommentReconciler interface {
	ReconcileComments(ctx context.Context, pr bot.PR, key string) error
}

// reconcileLater has the host reconcile pr's comments once more after
// ReconcileDelay, unless a newer head or a close took over by then: the adapter
// lists the comments again and deletes any sticky comment of another head whose
// POST landed after this job's post (its job gave up on it, here or in another
// replica), so the PR keeps one sticky comment per check name in every
// interleaving. It only deletes: a re-run's newer pages are never reverted. It
// costs one listing.
func (w *Worker) reconcileLater(pr bot.PR) {
	if _, ok := w.hosts[pr.Host].(CommentReconciler); !ok || w.opts.ReconcileDelay < 0 {
		return
	}
	w.timersMu.Lock()
	defer w.timersMu.Unlock()
	if w.stopped {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(w.opts.ReconcileDelay, func() {
		w.timersMu.Lock()
		delete(w.timers, t)
		w.timersMu.Unlock()
		w.reconcile(pr)
	})
	w.timers[t] = true
}

// reconcile is the second pass of reconcileLater.
func (w *Worker) reconcile(pr bot.PR) {
	key := PRKey(pr)
	log := w.opts.Logger.With("host", pr.Host, "repo", pr.Repo, "pr", pr.Number, "head", short(pr.HeadSHA))
	host, ok := w.hosts[pr.Host].(CommentReconciler)
	if !ok {
		return
	}
	unlock := w.lockPR(key)
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*w.opts.StatusTimeout)
	defer cancel()
	sha, state, found, err := w.heads.Head(ctx, key)
	if err != nil {
		log.Error("second pass over the comments: reading the head failed", "error", err)
		return
	}
	if found && (state == queue.PRClosed || sha != "" && sha != pr.HeadSHA) {
		return // the newer head's job posts, and passes, itself
	}
	if err := host.ReconcileComments(ctx, pr, ""); err != nil {
		log.Error("second pass over the comments failed", "error", err)
	}
}

// Stop cancels the second passes not yet run (the next job of each PR removes
// what they would have). The server calls it when it shuts down.
func (w *Worker) Stop() {
	w.timersMu.Lock()
	defer w.timersMu.Unlock()
	w.stopped = true
	for t := range w.timers {
		t.Stop()
	}
	w.timers = nil
}
