package hostretry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options bound how long and how often a request is retried. The zero value of a
// field means "use the default" for durations and counts, so callers can override
// one knob without restating the others.
type Options struct {
	// MaxRetries is how many times one request is retried after the first attempt.
	// Negative disables retries.
	MaxRetries int
	// BaseDelay is the first backoff wait; it doubles per attempt up to MaxDelay.
	BaseDelay time.Duration
	// MaxDelay caps one computed backoff wait (5xx, 429 without headers).
	MaxDelay time.Duration
	// MaxWait caps a wait the host asks for (Retry-After, rate-limit reset). A longer
	// wait is not slept: the rate-limited response is returned to the caller, whose
	// job is retried later by the queue instead of pinning a worker.
	MaxWait time.Duration
	// Sleep waits d or until ctx is done. Tests inject a fake that records waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock used to turn reset timestamps into waits.
	Now func() time.Time
	// OnRetry, when set, is told about each retry (for logs and metrics). It gets
	// the method, the URL path (never headers), the status (0 for a transport
	// error) and the wait.
	OnRetry func(method, path string, status int, wait time.Duration)
	// Logger, when set, gets one line per wait with its reason, and one per
	// rate-limited response that is not retried because the host asks for a
	// longer wait than MaxWait.
	Logger *slog.Logger
	// HideWaitHeaders removes Retry-After and the rate-limit reset headers from the
	// responses handed to the caller, once this transport acted on them. go-github
	// records them and then refuses every request of the installation, without
	// sending it, until the reset (up to an hour); with the headers hidden the
	// waiting is this transport's alone.
	HideWaitHeaders bool
}

// SecondaryWait is the first wait after a secondary rate limit that names no wait
// (no Retry-After, no exhausted quota with a reset): GitHub asks to "wait for at
// least one minute before retrying" and, when the request keeps failing, to wait
// exponentially longer (docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api).
const SecondaryWait = time.Minute

// DefaultOptions gives 4 retries with backoff from 1 s up to 30 s, and honours a host's
// requested wait of up to 2 minutes.
func DefaultOptions() Options {
	return Options{
		MaxRetries: 4,
		BaseDelay:  time.Second,
		MaxDelay:   30 * time.Second,
		MaxWait:    2 * time.Minute,
		Sleep:      SleepContext,
		Now:        time.Now,
	}
}

// SleepContext sleeps d, returning ctx.Err() early when ctx is done. It is the
// default Options.Sleep.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Transport is an http.RoundTripper that retries rate-limited and failed requests.
// It is safe for concurrent use.
type Transport struct {
	base http.RoundTripper
	opts Options
}

// New wraps base (http.DefaultTransport when nil) with retries. Unset fields of
// opts take their DefaultOptions values.
func New(base http.RoundTripper, opts Options) *Transport {
	if base == nil {
		base = http.DefaultTransport
	}
	def := DefaultOptions()
	if opts.MaxRetries == 0 {
		opts.MaxRetries = def.MaxRetries
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = def.BaseDelay
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = def.MaxDelay
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = def.MaxWait
	}
	if opts.Sleep == nil {
		opts.Sleep = def.Sleep
	}
	if opts.Now == nil {
		opts.Now = def.Now
	}
	return &Transport{base: base, opts: opts}
}

// maxDrain bounds how much of a failed response body is read to reuse the connection.
const maxDrain = 64 << 10

// RoundTrip sends req, retrying as Options allow. The request body is buffered once
// when it cannot be replayed (no GetBody), so every attempt sends the same bytes.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	getBody, err := replayable(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	secondary := 0 // secondary rate limits without a named wait so far
	for attempt := 0; ; attempt++ {
		try := req.Clone(ctx)
		if getBody != nil {
			body, err := getBody()
			if err != nil {
				return nil, fmt.Errorf("replaying body of %s %s: %w", req.Method, req.URL.Path, err)
			}
			try.Body = body
			try.GetBody = getBody
		}
		resp, rtErr := t.base.RoundTrip(try)
		wait, retry, reason := t.decide(req, resp, rtErr, attempt, secondary)
		if reason == reasonSecondary {
			secondary++
		}
		if !retry || attempt >= t.opts.MaxRetries {
			if reason != "" && t.opts.Logger != nil && resp != nil {
				why := "retries exhausted"
				if !retry {
					why = "the host asks for a longer wait than " + t.opts.MaxWait.String()
				}
				t.opts.Logger.Warn("not retrying a rate-limited or failed request: "+why,
					"method", req.Method, "path", req.URL.Path, "status", resp.StatusCode, "reason", reason, "wait", wait, "attempt", attempt+1)
			}
			t.hide(resp)
			return resp, rtErr
		}
		status := 0
		if resp != nil {
			status = resp.StatusCode
			_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
			_ = resp.Body.Close()
		}
		if t.opts.OnRetry != nil {
			t.opts.OnRetry(req.Method, req.URL.Path, status, wait)
		}
		if t.opts.Logger != nil {
			t.opts.Logger.Info("waiting before retrying a request",
				"method", req.Method, "path", req.URL.Path, "status", status, "reason", reason, "wait", wait, "attempt", attempt+1)
		}
		if err := t.opts.Sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("waiting to retry %s %s: %w", req.Method, req.URL.Path, err)
		}
	}
}

// replayable returns a function giving a fresh copy of req's body, buffering the
// body when the request has none; nil when the request has no body.
func replayable(req *http.Request) (func() (io.ReadCloser, error), error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if req.GetBody != nil {
		return req.GetBody, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("buffering body of %s %s: %w", req.Method, req.URL.Path, err)
	}
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, nil
}

// Reasons for a wait, as logged.
const (
	reasonTransport  = "transport error"
	reasonRetryAfter = "Retry-After"
	reasonReset      = "rate limit quota exhausted until its reset"
	reasonSecondary  = "secondary rate limit without Retry-After: at least 60 s, then exponentially longer"
	reasonTooMany    = "429 without Retry-After"
	reasonServer     = "server error"
)

// decide says whether the outcome of one attempt is retried, after how long and
// why; secondary counts the earlier secondary rate limits without a named wait.
func (t *Transport) decide(req *http.Request, resp *http.Response, err error, attempt, secondary int) (time.Duration, bool, string) {
	if err != nil {
		// A transport error on a write may have reached the host; only idempotent
		// methods are retried. A cancelled context is never retried.
		if req.Context().Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return 0, false, ""
		}
		return t.backoff(attempt), idempotent(req.Method), reasonTransport
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests, code == http.StatusForbidden:
		if d, why, ok := t.hostWait(resp.Header); ok {
			return d, d <= t.opts.MaxWait, why
		}
		if code == http.StatusForbidden && !secondaryLimit(resp) {
			// 403 is a rate limit only when the host says so; otherwise it is a
			// real permission error and retrying would not help.
			return 0, false, ""
		}
		if code == http.StatusTooManyRequests && !secondaryLimit(resp) {
			return t.backoff(attempt), true, reasonTooMany
		}
		d := SecondaryWait << min(secondary, 10)
		return d, d <= t.opts.MaxWait, reasonSecondary
	case code == http.StatusInternalServerError, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		if d, ok := retryAfter(resp.Header, t.opts.Now()); ok {
			return d, d <= t.opts.MaxWait, reasonRetryAfter
		}
		return t.backoff(attempt), true, reasonServer
	}
	return 0, false, ""
}

// maxPeek bounds how much of a 403 or 429 body is read to recognise a secondary
// rate limit.
const maxPeek = 64 << 10

// secondaryLimit reports whether a 403 or 429 is GitHub's secondary rate limit:
// its message says so and its documentation_url ends in secondary-rate-limits (the
// older abuse-rate-limits too), as go-github's CheckResponse recognises it. The
// body stays readable for the caller.
func secondaryLimit(resp *http.Response) bool {
	if resp.Body == nil || resp.Body == http.NoBody {
		return false
	}
	peek, err := io.ReadAll(io.LimitReader(resp.Body, maxPeek))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	lower := strings.ToLower(string(peek))
	return strings.Contains(lower, "secondary rate limit") || strings.Contains(lower, "secondary-rate-limits") ||
		strings.Contains(lower, "abuse-rate-limits") || strings.Contains(lower, "abuse detection")
}

// hide removes the wait headers from a response handed to the caller, when
// HideWaitHeaders is set.
func (t *Transport) hide(resp *http.Response) {
	if !t.opts.HideWaitHeaders || resp == nil {
		return
	}
	for _, h := range []string{"Retry-After", "X-Ratelimit-Reset", "Ratelimit-Reset"} {
		resp.Header.Del(h)
	}
}

// hostWait reads the wait a rate-limited response asks for: Retry-After first, then
// a reset timestamp when the remaining quota is zero (GitHub's x-ratelimit-*,
// GitLab's RateLimit-*).
func (t *Transport) hostWait(h http.Header) (time.Duration, string, bool) {
	now := t.opts.Now()
	if d, ok := retryAfter(h, now); ok {
		return d, reasonRetryAfter, true
	}
	for _, pair := range [][2]string{
		{"X-Ratelimit-Remaining", "X-Ratelimit-Reset"},
		{"Ratelimit-Remaining", "Ratelimit-Reset"},
	} {
		if strings.TrimSpace(h.Get(pair[0])) != "0" {
			continue
		}
		if d, ok := resetWait(h.Get(pair[1]), now); ok {
			return d, reasonReset, true
		}
	}
	return 0, "", false
}

// retryAfter parses Retry-After as delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			n = 0
		}
		return time.Duration(n) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return nonNegative(at.Sub(now)), true
	}
	return 0, false
}

// resetWait turns a reset header into a wait. Values that look like Unix times
// (GitHub's x-ratelimit-reset, GitLab's RateLimit-Reset) are absolute; small values
// are delta seconds (the IETF RateLimit draft).
func resetWait(v string, now time.Time) (time.Duration, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n > 1_000_000_000 {
		return nonNegative(time.Unix(n, 0).Sub(now)), true
	}
	return time.Duration(n) * time.Second, true
}

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// backoff is BaseDelay·2^attempt, capped at MaxDelay.
func (t *Transport) backoff(attempt int) time.Duration {
	d := t.opts.BaseDelay
	for i := 0; i < attempt && d < t.opts.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.opts.MaxDelay)
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// ClientBase returns the base transport and timeout an adapter's
// Options.HTTPClient supplies: http.DefaultTransport and a 30 s timeout where hc is
// nil or leaves them unset. The adapters put their retries and write lock above
// that base.
func ClientBase(hc *http.Client) (http.RoundTripper, time.Duration) {
	base, timeout := http.RoundTripper(http.DefaultTransport), 30*time.Second
	if hc != nil {
		if hc.Transport != nil {
			base = hc.Transport
		}
		if hc.Timeout > 0 {
			timeout = hc.Timeout
		}
	}
	return base, timeout
}

// SerialWrites wraps next so that writes (POST, PATCH, PUT, DELETE) through it run one
// at a time, holding mu for the whole request including retries. GitHub asks
// integrations to avoid concurrent writes to stay clear of secondary rate limits;
// the adapters pass one mutex per installation (GitHub) or per token (GitLab).
func SerialWrites(next http.RoundTripper, mu *sync.Mutex) http.RoundTripper {
	return serialWrites{next: next, mu: mu}
}

type serialWrites struct {
	next http.RoundTripper
	mu   *sync.Mutex
}

func (s serialWrites) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		s.mu.Lock()
		defer s.mu.Unlock()
	}
	return s.next.RoundTrip(req)
}
