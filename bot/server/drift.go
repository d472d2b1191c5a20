package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
)

// DriftOptions turns on the drift report of the default branches: after each
// push to a repository's default branch, and every Interval, the drift engine
// (preview.Drift) compares the branch's head with the live clusters and keeps
// one issue per repository saying what drifts.
type DriftOptions struct {
	// Enabled runs the drift report after pushes to default branches.
	Enabled bool
	// Interval, when positive, also runs it every Interval for every repository
	// that was pushed to since drift reports were enabled (remembered in the
	// queue's database, so across restarts).
	Interval time.Duration
	// Run is the drift engine; nil means preview.Drift.
	Run jobs.DriftFunc
}

// DriftQueue is what drift reports need from the queue (*queue.Queue) beyond
// Queue: the repositories the schedule checks, and the other runs of a
// repository.
type DriftQueue interface {
	RememberDriftRepo(ctx context.Context, repo string, payload []byte) error
	DriftRepos(ctx context.Context) ([][]byte, error)
	CancelTagged(ctx context.Context, tag string, cancel func(*rivertype.JobRow) bool) ([]int64, error)
	jobs.DriftRuns
}

// driftHosts checks that every served host can keep drift issues.
func driftHosts(hosts map[string]Host) (map[string]jobs.DriftHost, error) {
	out := map[string]jobs.DriftHost{}
	for name, h := range hosts {
		dh, ok := h.(jobs.DriftHost)
		if !ok {
			return nil, fmt.Errorf("starting server: drift reports are on but host %s cannot keep drift issues", name)
		}
		out[name] = dh
	}
	return out, nil
}

// addDriftWorker registers the drift worker when drift reports are on.
func addDriftWorker(workers *river.Workers, opts Options, q *queue.Queue, m *Metrics) error {
	if !opts.Drift.Enabled {
		if opts.Drift.Interval > 0 {
			return errors.New("starting server: a drift interval is set but drift reports are off")
		}
		return nil
	}
	hosts, err := driftHosts(opts.Hosts)
	if err != nil {
		return err
	}
	run := opts.Drift.Run
	if run == nil {
		run = preview.Drift
	}
	river.AddWorker(workers, jobs.NewDriftWorker(hosts, run, jobs.NewMirror(opts.WorkDir), q, m, opts.Jobs))
	return nil
}

// enqueueDrift queues the drift run of a push to a default branch: it
// remembers the repository for the schedule, cancels the repository's older
// runs (the newest wins: every run checks the branch's head) and inserts the
// run.
func (h *Handler) enqueueDrift(ctx context.Context, ev bot.Event, log *slog.Logger) (string, int, response, error) {
	if !h.opts.Drift {
		return "ignored", http.StatusOK, response{Reason: "drift reports are off on this server (drift.enabled)"}, nil
	}
	dq, ok := h.queue.(DriftQueue)
	if !ok {
		return "", 0, response{}, errors.New("the queue cannot hold drift runs")
	}
	repo := ev.PR
	repo.HeadSHA = ""
	payload, err := json.Marshal(repo)
	if err != nil {
		return "", 0, response{}, err
	}
	if err := dq.RememberDriftRepo(ctx, jobs.DriftKey(repo), payload); err != nil {
		return "", 0, response{}, err
	}
	args := jobs.NewDriftArgs(ev)
	ids, err := dq.CancelTagged(ctx, jobs.DriftTag(repo), func(row *rivertype.JobRow) bool {
		var a jobs.DriftArgs
		return json.Unmarshal(row.EncodedArgs, &a) == nil && a.UniqueKey != args.UniqueKey
	})
	if err != nil {
		return "", 0, response{}, err
	}
	if len(ids) > 0 {
		log.Info("cancelled older drift runs", "cancelled", ids)
	}
	id, dup, err := h.queue.Insert(ctx, args, nil)
	if err != nil {
		return "", 0, response{}, err
	}
	if dup {
		return "duplicate", http.StatusOK, response{Job: id, Reason: "drift run of this commit already queued"}, nil
	}
	log.Info("queued drift run", "job", id, "branch", repo.BaseRef, "head", ev.PR.HeadSHA)
	return "queued", http.StatusAccepted, response{Job: id}, nil
}

// maxDriftTick is the longest wait between two looks at the drift schedule:
// a scheduled run starts at most this long after its period begins.
const maxDriftTick = 5 * time.Minute

// ScheduleDrift queues one scheduled drift run for every repository pushed to
// since drift reports were on (and still in the allowlist, on a served host),
// unique per Interval period across replicas; it returns how many it queued.
// Serve runs it at start, before it takes requests, and every min(Interval, 5m).
func (s *Server) ScheduleDrift(ctx context.Context) (int, error) {
	if !s.opts.Drift.Enabled || s.opts.Drift.Interval <= 0 {
		return 0, nil
	}
	payloads, err := s.Queue.DriftRepos(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range payloads {
		var repo bot.PR
		if err := json.Unmarshal(p, &repo); err != nil {
			errs = append(errs, fmt.Errorf("reading a remembered drift repository: %w", err))
			continue
		}
		if _, ok := s.opts.Hosts[repo.Host]; !ok || !MatchRepo(s.opts.Handler.Repos, repo.Repo) {
			continue
		}
		_, dup, err := s.Queue.Insert(ctx, jobs.ScheduledDriftArgs(repo, s.opts.Drift.Interval), nil)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !dup {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// driftLoop runs ScheduleDrift every min(Interval, 5m) (Serve runs the first
// pass itself, before it takes requests: scheduleDriftNow).
func (s *Server) driftLoop(ctx context.Context) {
	t := time.NewTicker(min(s.opts.Drift.Interval, maxDriftTick))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.scheduleDriftNow(ctx)
	}
}

// scheduleDriftNow runs ScheduleDrift once and logs what it did.
func (s *Server) scheduleDriftNow(ctx context.Context) {
	if n, err := s.ScheduleDrift(ctx); err != nil && ctx.Err() == nil {
		s.log.Error("scheduling drift runs", "error", err)
	} else if n > 0 {
		s.log.Info("scheduled drift runs", "count", n)
	}
}
