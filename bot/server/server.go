package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/watch"
)

// Host is a full host adapter: webhook parsing plus what jobs post.
type Host interface {
	WebhookParser
	jobs.Host
}

// Options wires a Server.
type Options struct {
	// Listen is the HTTP address of webhooks and health (":8080").
	Listen string
	// MetricsListen is the address of GET /metrics ("127.0.0.1:9090"); empty serves
	// no metrics. Metrics name repositories and targets, so they are never served on
	// Listen.
	MetricsListen string
	// MetricsToken, when set, is the bearer token every scrape must send.
	MetricsToken string
	// Hosts are the served hosts by name ("github", "gitlab").
	Hosts     map[string]Host
	Previewer jobs.Previewer
	// WorkDir holds the bare git mirrors.
	WorkDir string
	Queue   queue.Options
	Jobs    jobs.Options
	Handler HandlerOptions
	Logger  *slog.Logger
	// ShutdownTimeout bounds the graceful stop of HTTP and running jobs.
	ShutdownTimeout time.Duration
	// SweepInterval is how often this process completes the statuses of jobs that
	// stopped without a result (jobs.Worker.Sweep); default DefaultSweepInterval.
	SweepInterval time.Duration
	// Watch re-checks open pull requests when their live objects change.
	Watch WatchOptions
	// Drift turns on the drift report of the default branches.
	Drift DriftOptions
}

// DefaultSweepInterval is how often, by default, statuses left in progress by a
// job killed on its last attempt are completed.
const DefaultSweepInterval = time.Minute

// Server is the running bot: HTTP handler, queue and worker.
type Server struct {
	opts    Options
	Queue   *queue.Queue
	Metrics *Metrics
	handler *Handler
	worker  *jobs.Worker
	log     *slog.Logger
	live    *liveHistory
	watcher *watch.Watcher // nil when Watch is off
}

// New opens the queue (running migrations), registers the worker and builds the
// handler. Call Run to serve, or use Handler directly in tests.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	if len(opts.Hosts) == 0 {
		return nil, errors.New("starting server: no host configured")
	}
	if opts.Previewer == nil {
		return nil, errors.New("starting server: no previewer")
	}
	m := NewMetrics()
	workers := river.NewWorkers()
	opts.Queue.Workers = workers
	opts.Queue.Logger = opts.Logger
	q, err := queue.Open(ctx, opts.Queue)
	if err != nil {
		return nil, err
	}
	jobHosts := map[string]jobs.Host{}
	parsers := map[string]WebhookParser{}
	for name, h := range opts.Hosts {
		jobHosts[name] = h
		parsers[name] = h
	}
	opts.Jobs.Logger = opts.Logger
	s := &Server{opts: opts, Queue: q, Metrics: m, log: opts.Logger}
	s.live = &liveHistory{q: q, log: opts.Logger}
	if opts.Watch.Enabled {
		wo := opts.Watch.Options
		wo.Logger = opts.Logger.With("component", "watch")
		if s.watcher, err = watch.New(watchClusters(opts.Jobs), s.recheck, wo); err != nil {
			q.Close()
			return nil, err
		}
		s.live.w = s.watcher
		m.reg.MustRegister(newWatchCollector(s.watcher))
	}
	opts.Jobs.Live = s.live
	w := jobs.NewWorker(jobHosts, opts.Previewer, jobs.NewMirror(opts.WorkDir), q, m, opts.Jobs)
	river.AddWorker(workers, w)
	if err := addDriftWorker(workers, opts, q, m); err != nil {
		q.Close()
		return nil, err
	}
	opts.Handler.Drift = opts.Drift.Enabled
	opts.Handler.Logger = opts.Logger
	opts.Handler.OnClose = s.live.closed
	s.opts, s.worker = opts, w
	s.handler = NewHandler(parsers, q, m, opts.Handler)
	return s, nil
}

// Handler is the HTTP handler of Listen (webhooks, health).
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler is the HTTP handler of MetricsListen: GET /metrics, behind the
// bearer token when one is configured.
func (s *Server) MetricsHandler() http.Handler {
	return MetricsHandler(s.Metrics, s.opts.MetricsToken)
}

// Run starts the workers and serves HTTP on Options.Listen until ctx is done, then
// stops gracefully: HTTP first, then the queue (running jobs get a grace period and
// are rescued by the next process if they do not finish). It closes the queue.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		s.Queue.Close()
		return fmt.Errorf("listening on %s: %w", s.opts.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener; metrics get a listener of their own on
// MetricsListen.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.Queue.Close()
	var mln net.Listener
	if s.opts.MetricsListen != "" {
		var err error
		if mln, err = net.Listen("tcp", s.opts.MetricsListen); err != nil {
			_ = ln.Close()
			return fmt.Errorf("listening for metrics on %s: %w", s.opts.MetricsListen, err)
		}
	}
	if err := s.Queue.Start(ctx); err != nil {
		_ = ln.Close()
		if mln != nil {
			_ = mln.Close()
		}
		return err
	}
	if s.opts.Drift.Enabled && s.opts.Drift.Interval > 0 {
		// The schedule's first look, before any webhook is taken: run beside
		// the server, it raced the first push (a push remembered before the
		// look got a scheduled run beside its own; TestGitLabDriftIssue saw
		// two runs on a loaded machine).
		s.scheduleDriftNow(ctx)
	}
	srv := s.httpServer(s.handler)
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var msrv *http.Server
	if mln != nil {
		msrv = s.httpServer(s.MetricsHandler())
		go func() { errc <- msrv.Serve(mln) }()
		s.log.Info("serving metrics", "addr", mln.Addr().String(), "bearerToken", s.opts.MetricsToken != "")
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	var loops sync.WaitGroup
	loops.Go(func() { s.sweepLoop(sweepCtx) })
	if s.watcher != nil {
		go func() {
			n, err := s.live.rebuild(sweepCtx)
			if err != nil && sweepCtx.Err() == nil {
				s.log.Error("rebuilding the watch of open pull requests", "error", err)
			}
			s.log.Info("watching the live objects of open pull requests", "pullRequests", n)
		}()
	}
	if s.opts.Drift.Enabled && s.opts.Drift.Interval > 0 {
		loops.Go(func() { s.driftLoop(sweepCtx) })
	}
	s.log.Info("serving", "addr", ln.Addr().String(), "queue", s.Queue.Driver())
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.log.Info("shutting down")
	stopSweep()
	loops.Wait()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown", "error", err)
	}
	if msrv != nil {
		if err := msrv.Shutdown(sctx); err != nil {
			s.log.Warn("metrics http shutdown", "error", err)
		}
	}
	if err := s.Queue.Stop(sctx); err != nil {
		s.log.Warn("queue shutdown", "error", err)
	}
	s.worker.Stop()
	if s.watcher != nil {
		s.watcher.Stop()
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serving http: %w", serveErr)
	}
	return nil
}

// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB).
const maxHeaderBytes = 64 << 10

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Sweep completes, once, the statuses of jobs that stopped without a result (see
// jobs.Worker.Sweep) and returns how many it completed. Serve runs it every
// SweepInterval in every process; claims in the queue make that safe.
func (s *Server) Sweep(ctx context.Context) (int, error) {
	return s.worker.Sweep(ctx, s.Queue)
}

// sweepLoop runs Sweep at start and every SweepInterval until ctx is done.
func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	for {
		if n, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("completing the statuses of stopped jobs", "error", err)
		} else if n > 0 {
			s.log.Info("completed the statuses of stopped jobs", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
