package hostretry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/internal/hostretry"
)

// reply is one scripted answer of the test server.
type reply struct {
	status int
	header map[string]string
}

var now = time.Date(2026, 11, 2, 3, 14, 0, 0, time.UTC)

func TestRoundTrip(t *testing.T) {
	reset := strconv.FormatInt(now.Add(7*time.Second).Unix(), 10)
	tests := []struct {
		name       string
		method     string
		replies    []reply
		wantStatus int
		wantSleeps []time.Duration
		wantCalls  int
	}{
		{
			name:       "403 with Retry-After then success",
			method:     http.MethodPost,
			replies:    []reply{{403, map[string]string{"Retry-After": "1"}}, {201, nil}},
			wantStatus: 201,
			wantSleeps: []time.Duration{time.Second},
			wantCalls:  2,
		},
		{
			name:   "403 with x-ratelimit-remaining 0 waits until x-ratelimit-reset",
			method: http.MethodGet,
			replies: []reply{
				{403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset}},
				{200, nil},
			},
			wantStatus: 200,
			wantSleeps: []time.Duration{7 * time.Second},
			wantCalls:  2,
		},
		{
			name:   "429 with GitLab RateLimit-Reset",
			method: http.MethodPut,
			replies: []reply{
				{429, map[string]string{"RateLimit-Remaining": "0", "RateLimit-Reset": reset}},
				{200, nil},
			},
			wantStatus: 200,
			wantSleeps: []time.Duration{7 * time.Second},
			wantCalls:  2,
		},
		{
			name:       "plain 403 is a permission error, not retried",
			method:     http.MethodGet,
			replies:    []reply{{403, nil}},
			wantStatus: 403,
			wantCalls:  1,
		},
		{
			name:       "5xx backs off exponentially with a cap, bounded",
			method:     http.MethodPatch,
			replies:    []reply{{502, nil}, {503, nil}, {500, nil}, {504, nil}, {500, nil}, {200, nil}},
			wantStatus: 500,
			wantSleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second},
			wantCalls:  5,
		},
		{
			name:       "429 without headers uses backoff",
			method:     http.MethodDelete,
			replies:    []reply{{429, nil}, {204, nil}},
			wantStatus: 204,
			wantSleeps: []time.Duration{time.Second},
			wantCalls:  2,
		},
		{
			name:       "wait longer than MaxWait is not slept",
			method:     http.MethodGet,
			replies:    []reply{{429, map[string]string{"Retry-After": "3600"}}},
			wantStatus: 429,
			wantCalls:  1,
		},
		{
			name:       "404 is final",
			method:     http.MethodGet,
			replies:    []reply{{404, nil}},
			wantStatus: 404,
			wantCalls:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				calls  int
				bodies []string
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				b, _ := io.ReadAll(r.Body)
				bodies = append(bodies, string(b))
				rep := tt.replies[min(calls, len(tt.replies)-1)]
				calls++
				for k, v := range rep.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(rep.status)
				_, _ = io.WriteString(w, `{"message":"scripted"}`)
			}))
			defer srv.Close()

			var sleeps []time.Duration
			tr := hostretry.New(nil, hostretry.Options{
				MaxRetries: 4,
				BaseDelay:  time.Second,
				MaxDelay:   4 * time.Second,
				MaxWait:    time.Minute,
				Now:        func() time.Time { return now },
				Sleep: func(_ context.Context, d time.Duration) error {
					sleeps = append(sleeps, d)
					return nil
				},
			})
			// A body without GetBody must still be replayed on every attempt.
			var body io.Reader
			if tt.method != http.MethodGet {
				body = io.NopCloser(strings.NewReader(`{"body":"hello"}`))
			}
			req, err := http.NewRequest(tt.method, srv.URL+"/x", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantSleeps, sleeps); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if body != nil {
				for i, b := range bodies {
					if b != `{"body":"hello"}` {
						t.Errorf("attempt %d sent body %q, want the original body", i, b)
					}
				}
			}
		})
	}
}

func TestRoundTripStopsWhenContextEnds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	tr := hostretry.New(nil, hostretry.Options{
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		},
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	_, err := (&http.Client{Transport: tr}).Do(req)
	if err == nil || !strings.Contains(err.Error(), "waiting to retry GET") {
		t.Fatalf("err = %v, want a wrapped context error", err)
	}
}

func TestSerialWrites(t *testing.T) {
	var (
		mu       sync.Mutex
		inFlight int
		maxSeen  int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		maxSeen = max(maxSeen, inFlight)
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	defer srv.Close()
	var writeMu sync.Mutex
	c := &http.Client{Transport: hostretry.SerialWrites(http.DefaultTransport, &writeMu)}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		})
	}
	wg.Wait()
	if maxSeen != 1 {
		t.Errorf("max concurrent writes = %d, want 1", maxSeen)
	}
}

func TestClientBase(t *testing.T) {
	custom := &http.Transport{}
	tests := []struct {
		name        string
		hc          *http.Client
		wantBase    http.RoundTripper
		wantTimeout time.Duration
	}{
		{"nil client", nil, http.DefaultTransport, 30 * time.Second},
		{"empty client", &http.Client{}, http.DefaultTransport, 30 * time.Second},
		{"transport and timeout", &http.Client{Transport: custom, Timeout: 5 * time.Second}, custom, 5 * time.Second},
	}
	for _, tt := range tests {
		base, timeout := hostretry.ClientBase(tt.hc)
		if base != tt.wantBase || timeout != tt.wantTimeout {
			t.Errorf("%s: ClientBase = %T, %v; want %T, %v", tt.name, base, timeout, tt.wantBase, tt.wantTimeout)
		}
	}
}
