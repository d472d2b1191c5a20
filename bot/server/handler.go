package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/queue"
)

// MaxBodyBytes is the default cap of a webhook body; larger deliveries get 413.
// GitHub caps its payloads at 25 MB, but the events the bot acts on (pull_request,
// issue_comment, Merge Request and Note Hooks) stay far below 10 MiB.
const MaxBodyBytes = 10 << 20

// MaxConcurrent is the default number of deliveries received at once; more wait up
// to SlotWait for a slot and are then answered 503 with Retry-After.
const MaxConcurrent = 8

// DefaultSlotWait is how long a delivery waits for a free slot by default.
const DefaultSlotWait = time.Second

// WebhookParser verifies and parses one host's deliveries (*github.Client,
// *gitlab.Client). Its error wraps bot.ErrUnauthorized for a bad or missing
// signature or token.
type WebhookParser interface {
	ParseWebhook(h http.Header, body []byte) (bot.Event, error)
}

// Queue is what the handler needs from the durable queue (*queue.Queue).
type Queue interface {
	Ping(ctx context.Context) error
	MarkDelivery(ctx context.Context, host, id string) (bool, error)
	ForgetDelivery(ctx context.Context, host, id string) error
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, bool, error)
	SetHead(ctx context.Context, pr, sha, state string) error
	SetState(ctx context.Context, pr, state string) error
	CancelPR(ctx context.Context, tag string) ([]int64, error)
	Supersede(ctx context.Context, tag, base, head string) ([]int64, error)
}

// HandlerOptions configures the HTTP handler.
type HandlerOptions struct {
	// Repos is the allowlist of path.Match globs; empty allows all.
	Repos []string
	// MaxBodyBytes caps webhook bodies (default MaxBodyBytes).
	MaxBodyBytes int64
	// MaxConcurrent bounds the deliveries received at once (default MaxConcurrent).
	// Each holds at most 256 KiB of its body in memory (the rest is spooled to a
	// temporary file until its signature is checked), so memory stays bounded
	// whatever is sent.
	MaxConcurrent int
	// SlotWait is how long a delivery waits for a slot before it is answered 503
	// (default DefaultSlotWait).
	SlotWait time.Duration
	// Reports, when set, serves the full report pages at GET /reports/{id}
	// (reports.Store, which checks each link's signature and expiry).
	Reports http.Handler
	// OnClose, when set, is called with the key of a pull request that was
	// closed or merged (after its jobs were cancelled): the server stops
	// watching its live objects. Its error fails the delivery (redelivered).
	OnClose func(ctx context.Context, prKey string) error
	// Drift queues drift report runs for pushes to default branches (the
	// queue must be a DriftQueue); otherwise they are ignored.
	Drift  bool
	Logger *slog.Logger
}

// Handler serves /webhooks/{host}, /healthz, /readyz and, when configured,
// /reports/{id}. Metrics are served on a
// listener of their own (Metrics.Handler).
type Handler struct {
	hosts   map[string]WebhookParser
	queue   Queue
	metrics *Metrics
	opts    HandlerOptions
	log     *slog.Logger
	mux     *http.ServeMux
	slots   chan struct{}
}

// NewHandler builds the handler; hosts is keyed by the path segment and bot.PR.Host
// ("github", "gitlab").
func NewHandler(hosts map[string]WebhookParser, q Queue, m *Metrics, opts HandlerOptions) *Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = MaxBodyBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = MaxConcurrent
	}
	if opts.SlotWait <= 0 {
		opts.SlotWait = DefaultSlotWait
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{hosts: hosts, queue: q, metrics: m, opts: opts, log: opts.Logger, mux: http.NewServeMux(),
		slots: make(chan struct{}, opts.MaxConcurrent)}
	h.mux.HandleFunc("POST /webhooks/{host}", h.webhook)
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { reply(w, http.StatusOK, "ok", "") })
	h.mux.HandleFunc("GET /readyz", h.ready)
	if opts.Reports != nil {
		h.mux.Handle("GET /reports/{id}", opts.Reports)
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := h.queue.Ping(ctx); err != nil {
		h.log.Warn("not ready", "error", err)
		reply(w, http.StatusServiceUnavailable, "unavailable", "queue store unreachable")
		return
	}
	reply(w, http.StatusOK, "ok", "")
}

// response is the JSON body of every webhook answer.
type response struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Job    int64  `json:"job,omitempty"`
}

func reply(w http.ResponseWriter, code int, status, reason string) {
	replyJob(w, code, response{Status: status, Reason: reason})
}

func replyJob(w http.ResponseWriter, code int, r response) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}

func (h *Handler) webhook(w http.ResponseWriter, r *http.Request) {
	hostName := r.PathValue("host")
	host, ok := h.hosts[hostName]
	if !ok {
		reply(w, http.StatusNotFound, "not_found", "this server does not serve "+hostName+" webhooks")
		return
	}
	log := h.log.With("host", hostName)
	// What the headers alone prove is checked before a slot is taken or a byte of
	// the body read.
	var mac io.Writer = io.Discard
	check := func() error { return nil }
	if sv, ok := host.(StreamVerifier); ok {
		var err error
		if mac, check, err = sv.VerifyWebhook(r.Header); err != nil {
			h.unauthorized(w, r, hostName, log, err)
			return
		}
	}
	if !h.acquire(r.Context()) {
		h.metrics.delivery(hostName, "busy")
		log.Warn("webhook refused: too many deliveries at once", "limit", h.opts.MaxConcurrent, "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		reply(w, http.StatusServiceUnavailable, "busy", fmt.Sprintf("more than %d deliveries at once; retry later", h.opts.MaxConcurrent))
		return
	}
	defer func() { <-h.slots }()
	sp := &spool{}
	defer sp.Close()
	// The body streams through the signature check into the spool: an
	// unauthenticated body is never held in memory beyond spoolMemory.
	_, err := io.Copy(io.MultiWriter(sp, mac), http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.metrics.delivery(hostName, "too_large")
			log.Warn("webhook body too large", "limit", h.opts.MaxBodyBytes)
			reply(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("body exceeds %d bytes", h.opts.MaxBodyBytes))
			return
		}
		h.metrics.delivery(hostName, "bad_request")
		log.Warn("reading webhook body failed", "error", err)
		reply(w, http.StatusBadRequest, "bad_request", "reading body failed")
		return
	}
	if err := check(); err != nil {
		h.unauthorized(w, r, hostName, log, err)
		return
	}
	body, err := sp.Bytes()
	if err != nil {
		h.metrics.delivery(hostName, "error")
		log.Error("reading spooled webhook body failed", "error", err)
		reply(w, http.StatusServiceUnavailable, "error", "reading body failed")
		return
	}
	ev, err := host.ParseWebhook(r.Header, body)
	if err != nil {
		if errors.Is(err, bot.ErrUnauthorized) {
			h.unauthorized(w, r, hostName, log, err)
			return
		}
		h.metrics.delivery(hostName, "bad_request")
		log.Warn("webhook not understood", "error", err)
		// The delivery is authenticated, so its own error says what is wrong with it
		// (adapters never put secrets into parse errors).
		reply(w, http.StatusBadRequest, "bad_request", "payload not understood: "+truncate(err.Error(), 500))
		return
	}
	log = log.With("delivery", ev.DeliveryID, "event", ev.Kind, "repo", ev.PR.Repo, "pr", ev.PR.Number)
	result, code, resp := h.accept(r.Context(), hostName, ev, log)
	h.metrics.delivery(hostName, result)
	if resp.Status == "" {
		resp.Status = result
	}
	replyJob(w, code, resp)
}

// retryAfterSeconds is the Retry-After of a 503 for too many deliveries at once.
const retryAfterSeconds = 10

// acquire takes a delivery slot, waiting up to SlotWait.
func (h *Handler) acquire(ctx context.Context) bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(h.opts.SlotWait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (h *Handler) unauthorized(w http.ResponseWriter, r *http.Request, hostName string, log *slog.Logger, err error) {
	h.metrics.delivery(hostName, "unauthorized")
	log.Warn("webhook rejected", "error", err, "remote", r.RemoteAddr)
	reply(w, http.StatusUnauthorized, "unauthorized", "signature or token missing or wrong")
}

// accept decides what a verified delivery does; it returns the metric result.
func (h *Handler) accept(ctx context.Context, hostName string, ev bot.Event, log *slog.Logger) (string, int, response) {
	if ev.Kind == bot.EventIgnore || ev.Kind == "" {
		log.Debug("ignoring delivery", "reason", ev.Reason)
		return "ignored", http.StatusOK, response{Reason: ev.Reason}
	}
	if ev.PR.Host == "" {
		ev.PR.Host = hostName
	}
	if !MatchRepo(h.opts.Repos, ev.PR.Repo) {
		log.Info("ignoring delivery: repository not in the allowlist")
		return "not_allowed", http.StatusOK, response{Reason: "repository " + ev.PR.Repo + " is not in this server's allowlist"}
	}
	if ev.DeliveryID == "" {
		return "bad_request", http.StatusBadRequest, response{Reason: "no delivery ID"}
	}
	fresh, err := h.queue.MarkDelivery(ctx, hostName, ev.DeliveryID)
	if err != nil {
		log.Error("recording delivery failed", "error", err)
		return "error", http.StatusServiceUnavailable, response{Reason: "queue unavailable"}
	}
	if !fresh {
		log.Info("duplicate delivery")
		return "duplicate", http.StatusOK, response{}
	}
	result, code, resp, err := h.enqueue(ctx, ev, log)
	if err != nil {
		log.Error("queueing delivery failed", "error", err)
		// Let the host redeliver: forget the ID so the retry is not a duplicate.
		if ferr := h.queue.ForgetDelivery(context.WithoutCancel(ctx), hostName, ev.DeliveryID); ferr != nil {
			log.Error("forgetting delivery failed", "error", ferr)
		}
		return "error", http.StatusServiceUnavailable, response{Reason: "queue unavailable"}
	}
	return result, code, resp
}

func (h *Handler) enqueue(ctx context.Context, ev bot.Event, log *slog.Logger) (string, int, response, error) {
	key, tag := jobs.PRKey(ev.PR), jobs.PRTag(ev.PR)
	switch ev.Kind {
	case bot.EventClose:
		if err := h.queue.SetState(ctx, key, queue.PRClosed); err != nil {
			return "", 0, response{}, err
		}
		ids, err := h.queue.CancelPR(ctx, tag)
		if err != nil {
			return "", 0, response{}, err
		}
		if h.opts.OnClose != nil {
			if err := h.opts.OnClose(ctx, key); err != nil {
				return "", 0, response{}, err
			}
		}
		log.Info("pull request closed: cancelled its jobs", "cancelled", len(ids))
		return "cancelled", http.StatusOK, response{Reason: fmt.Sprintf("cancelled %d job(s)", len(ids))}, nil
	case bot.EventRun:
		if err := h.queue.SetHead(ctx, key, ev.PR.HeadSHA, queue.PROpen); err != nil {
			return "", 0, response{}, err
		}
		ids, err := h.queue.Supersede(ctx, tag, ev.PR.BaseSHA, ev.PR.HeadSHA)
		if err != nil {
			return "", 0, response{}, err
		}
		if len(ids) > 0 {
			log.Info("superseded older jobs", "cancelled", ids)
		}
	case bot.EventRerun:
	case bot.EventDrift:
		return h.enqueueDrift(ctx, ev, log)
	default:
		return "ignored", http.StatusOK, response{Reason: "unknown event kind " + string(ev.Kind)}, nil
	}
	id, dup, err := h.queue.Insert(ctx, jobs.NewArgs(ev), nil)
	if err != nil {
		return "", 0, response{}, err
	}
	if dup {
		log.Info("same preview already queued", "job", id)
		return "duplicate", http.StatusOK, response{Job: id, Reason: "same base and head already queued"}, nil
	}
	log.Info("queued preview", "job", id, "head", ev.PR.HeadSHA)
	return "queued", http.StatusAccepted, response{Job: id}, nil
}

// MatchRepo reports whether repo matches one of the path.Match globs of the
// allowlist; an empty list matches everything.
func MatchRepo(globs []string, repo string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, repo); ok {
			return true
		}
	}
	return false
}

// ValidRepoGlob reports whether g is a usable allowlist entry (path.Match syntax).
func ValidRepoGlob(g string) bool {
	_, err := path.Match(g, "")
	return err == nil && g != ""
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
