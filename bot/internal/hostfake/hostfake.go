package hostfake

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Call is one request a fake received.
type Call struct {
	Method string
	Path   string
	Query  string
	Body   string
	// Header is the request's header (nil when it had none), so tests can assert
	// what a client sends, e.g. how it authenticates.
	Header http.Header
}

// Options say how a fake host answers what Recorder answers for it.
type Options struct {
	// Name prefixes the test errors the fake reports (e.g. "githubtest").
	Name string
	// ContentType is the Content-Type of every JSON answer.
	ContentType string
	// BadStatus answers a request the real API would reject (GitHub 422, GitLab 400).
	BadStatus int
	// NotFound is the message of a 404 answer for an unexpected request.
	NotFound string
}

type failure struct {
	method, path string
	n, status    int
	header       http.Header
	body         any
}

// Recorder records the calls a fake host receives and answers the failures a test
// injected, then the fake serves the rest. It is safe for concurrent use.
type Recorder struct {
	t    testing.TB
	opts Options

	mu    sync.Mutex
	calls []Call
	fails []*failure
}

// New returns a Recorder reporting to t.
func New(t testing.TB, opts Options) *Recorder {
	return &Recorder{t: t, opts: opts}
}

// Calls returns every request received so far, in order.
func (f *Recorder) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// ResetCalls forgets the recorded calls.
func (f *Recorder) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// FailNext makes the next n requests matching method ("" for any) and path answer
// status with header instead of being served.
func (f *Recorder) FailNext(method, path string, n, status int, header http.Header) {
	f.FailNextBody(method, path, n, status, header, nil)
}

// FailNextBody is FailNext answering body (encoded as JSON) instead of the default
// {"message": "injected failure"}.
func (f *Recorder) FailNextBody(method, path string, n, status int, header http.Header, body any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if body == nil {
		body = map[string]string{"message": "injected failure"}
	}
	f.fails = append(f.fails, &failure{method: method, path: path, n: n, status: status, header: header, body: body})
}

// Record records r with its already read body and answers it when an injected
// failure matches; it reports whether the fake still has to serve r.
func (f *Recorder) Record(w http.ResponseWriter, r *http.Request, body []byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var h http.Header
	if len(r.Header) > 0 {
		h = r.Header.Clone()
	}
	f.calls = append(f.calls, Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Body: string(body), Header: h})
	for _, fl := range f.fails {
		if fl.n > 0 && (fl.method == "" || fl.method == r.Method) && fl.path == r.URL.Path {
			fl.n--
			for k, v := range fl.header {
				w.Header()[k] = v
			}
			f.JSON(w, fl.status, fl.body)
			return false
		}
	}
	return true
}

// JSON answers status with v encoded as JSON.
func (f *Recorder) JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", f.opts.ContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Errorf fails the test with the fake's name in front of the message.
func (f *Recorder) Errorf(format string, args ...any) {
	f.t.Errorf("%s: %s", f.opts.Name, fmt.Sprintf(format, args...))
}

// NotFound fails the test for a request the fake does not serve and answers 404.
func (f *Recorder) NotFound(w http.ResponseWriter, r *http.Request) {
	f.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
	f.JSON(w, http.StatusNotFound, map[string]string{"message": f.opts.NotFound})
}

// Bad fails the test for a request the real API would reject and answers
// Options.BadStatus with the reason.
func (f *Recorder) Bad(w http.ResponseWriter, r *http.Request, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	f.Errorf("%s %s: %s", r.Method, r.URL.Path, msg)
	f.JSON(w, f.opts.BadStatus, map[string]string{"message": msg})
}

// Unauthorized fails the test for a request without valid credentials (why says
// what is missing) and answers 401 with message.
func (f *Recorder) Unauthorized(w http.ResponseWriter, r *http.Request, why, message string) {
	f.Errorf("%s %s %s", r.Method, r.URL.Path, why)
	f.JSON(w, http.StatusUnauthorized, map[string]string{"message": message})
}

// Strict decodes body into v rejecting unknown fields, as a shape assertion; a body
// of another shape is answered with Bad.
func (f *Recorder) Strict(w http.ResponseWriter, r *http.Request, body []byte, v any) bool {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		f.Bad(w, r, "body %s does not have the documented shape: %v", body, err)
		return false
	}
	return true
}

// Text decodes the {"body": "…"} request both hosts take for a comment or note,
// answering Bad when the request has another shape or no body.
func (f *Recorder) Text(w http.ResponseWriter, r *http.Request, body []byte) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if !f.Strict(w, r, body, &in) {
		return "", false
	}
	if in.Body == nil || *in.Body == "" {
		f.Bad(w, r, "body is missing")
		return "", false
	}
	return *in.Body, true
}

// Match says whether the path segments seg fit pattern, where "*" fits any segment.
func Match(seg []string, pattern ...string) bool {
	if len(seg) != len(pattern) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != seg[i] {
			return false
		}
	}
	return true
}

// Page cuts the page of all that the page and per_page query parameters ask for,
// as both hosts do (defaulting to page 1 and perDefault items). It returns the page
// (empty, never nil, past the end, so it encodes as []), the page number and size
// in use, and whether more pages follow.
func Page[T any](q url.Values, perDefault int, all []T) (items []T, page, per int, more bool) {
	per, _ = strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = perDefault
	}
	page, _ = strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	items = all[lo:hi]
	if items == nil {
		items = []T{}
	}
	return items, page, per, hi < len(all)
}

// Sleeps records the waits a retry transport asks for, instead of sleeping, so
// tests can assert them. The zero value is ready to use.
type Sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

// Sleep records d and returns at once; it fits hostretry.Options.Sleep.
func (s *Sleeps) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

// Got returns the waits recorded so far, in order.
func (s *Sleeps) Got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// RecordedPayloads adds to f every recorded webhook payload of host under
// fixtures/webhooks/<host> (relative to a package two levels below the module
// root, as bot/github and bot/gitlab are), with the event name event returns for
// the file's base name without extension ("pull_request", "note"…). It fails
// the fuzz test when there is none.
func RecordedPayloads(f *testing.F, host string, event func(name string) string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "fixtures", "webhooks", host, "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recorded %s payloads: %v", host, err)
	}
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		name, _, _ := strings.Cut(filepath.Base(file), ".")
		f.Add(event(name), body)
	}
}
