package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/diffing"
)

const intakeSecret = "intake-secret"

func githubParser(t *testing.T) *github.Client {
	t.Helper()
	_, key, err := githubtest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := github.New(github.Options{AppID: 1, PrivateKey: key, WebhookSecret: []byte(intakeSecret)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A validly signed issue_comment "created" without an issue object once panicked
// in the adapter (go-github's Issue.IsPullRequest has a value receiver); it is a 400
// that says what is missing.
func TestSignedIssueCommentWithoutIssue(t *testing.T) {
	h := server.NewHandler(map[string]server.WebhookParser{"github": githubParser(t)}, nil, server.NewMetrics(), server.HandlerOptions{})
	body := []byte(`{"action":"created"}`)
	req := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
	req.Header = githubtest.WebhookHeader("issue_comment", "d-nil-issue", []byte(intakeSecret), body)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct{ Status, Reason string }
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("answer %d %q is not JSON: %v", rec.Code, rec.Body.String(), err)
	}
	if rec.Code != http.StatusBadRequest || resp.Status != "bad_request" || !strings.Contains(resp.Reason, "no issue object") {
		t.Fatalf("answer = %d %+v, want 400 bad_request naming the missing issue object", rec.Code, resp)
	}
}

// zeros is an endless reader, so a client can send a huge body without holding it.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Forty concurrent unauthenticated 24 MiB POSTs once held every body in memory
// before the signature was checked (1.5 GB RSS). Now at most MaxConcurrent of them
// are received at once, each keeping 256 KiB in memory: the heap stays small. The
// peak heap growth is logged (the number the README quotes) and bounded generously.
func TestUnauthenticatedFloodMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 960 MiB")
	}
	h := server.NewHandler(map[string]server.WebhookParser{"github": githubParser(t)}, nil, server.NewMetrics(), server.HandlerOptions{
		MaxBodyBytes: 25 << 20, // large enough that every body is read to its end
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	const clients, size = 40, 24 << 20
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	codes := make(chan int, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/github", io.LimitReader(zeros{}, size))
			if err != nil {
				t.Error(err)
				return
			}
			req.ContentLength = size
			req.Header = githubtest.WebhookHeader("pull_request", fmt.Sprint("flood-", i), []byte("not the secret"), nil)
			resp, err := srv.Client().Do(req)
			if err != nil {
				codes <- 0 // the server answered early and closed the connection
				return
			}
			_ = resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	growth := int64(peak.Load()) - int64(before.HeapInuse)
	t.Logf("40 concurrent unauthenticated 24 MiB POSTs: answers %v; peak heap in use grew by %.1f MiB (from %.1f MiB)",
		count, float64(growth)/(1<<20), float64(before.HeapInuse)/(1<<20))
	if count[http.StatusAccepted] > 0 || count[http.StatusOK] > 0 {
		t.Errorf("an unauthenticated delivery was accepted: %v", count)
	}
	if count[http.StatusUnauthorized] == 0 {
		t.Errorf("no delivery was read to its end and refused as unauthorized: %v", count)
	}
	// Generous: 8 slots × 256 KiB plus buffers is a few MiB; holding the bodies is
	// close to 1 GiB.
	if growth > 128<<20 {
		t.Errorf("heap grew by %d MiB under the flood, want < 128 MiB", growth>>20)
	}
}

// readingHost authenticates everything; its verifier reports when a handler
// started reading a body, that is, holds a delivery slot.
type readingHost struct{ reading chan struct{} }

func (h readingHost) VerifyWebhook(http.Header) (io.Writer, func() error, error) {
	return &firstWrite{c: h.reading}, func() error { return nil }, nil
}

func (readingHost) ParseWebhook(http.Header, []byte) (bot.Event, error) {
	return bot.Event{Kind: bot.EventIgnore, Reason: "test"}, nil
}

type firstWrite struct {
	c    chan struct{}
	once sync.Once
}

func (w *firstWrite) Write(p []byte) (int, error) {
	w.once.Do(func() { w.c <- struct{}{} })
	return len(p), nil
}

// Beyond MaxConcurrent deliveries at once, a delivery waits SlotWait and is then
// answered 503 with Retry-After, without its body being read.
func TestConcurrentDeliveryLimit(t *testing.T) {
	host := readingHost{reading: make(chan struct{}, 8)}
	h := server.NewHandler(map[string]server.WebhookParser{"github": host}, nil, server.NewMetrics(), server.HandlerOptions{
		MaxConcurrent: 2, SlotWait: 50 * time.Millisecond,
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	post := func(body io.Reader) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/webhooks/github", body)
		return srv.Client().Do(req)
	}
	// Two deliveries whose bodies never end hold both slots.
	var writers []*io.PipeWriter
	done := make(chan int, 2)
	for range 2 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		go func() {
			resp, err := post(pr)
			if err != nil {
				done <- 0
				return
			}
			_ = resp.Body.Close()
			done <- resp.StatusCode
		}()
		go func() { _, _ = pw.Write([]byte("{")) }()
		select {
		case <-host.reading: // the handler is reading this body: it holds a slot
		case <-time.After(30 * time.Second):
			t.Fatal("the handler never started reading a delivery")
		}
	}
	resp, err := post(strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third delivery: %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, pw := range writers {
		_ = pw.CloseWithError(errors.New("client gave up"))
	}
	<-done
	<-done
	// With the slots free again, a delivery is served (ignored: 200).
	resp, err = post(strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("delivery after the slots were freed: %d, want 200", resp.StatusCode)
	}
}

// Metrics name repositories and targets: they are served on a listener of their
// own (loopback by default), not next to the webhooks, and with a bearer token
// configured a scrape without it is refused.
func TestMetricsListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	_ = ln.Close()
	host := newFakeHost("github", "file:///nonexistent")
	s := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.MetricsListen, o.MetricsToken = metricsAddr, "scrape-token"
	})
	s.Metrics.ReportPosted(pr("acme/shop", 1, shaA), &diffing.Report{Targets: []diffing.TargetReport{{Name: "shop-prod"}}})
	scrape := func(url, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := scrape(s.url+"/metrics", "Bearer scrape-token"); code != http.StatusNotFound {
		t.Errorf("/metrics on the webhook listener = %d, want 404", code)
	}
	for _, auth := range []string{"", "Bearer wrong", "scrape-token", "Basic c2NyYXBlLXRva2Vu"} {
		if code, body := scrape("http://"+metricsAddr+"/metrics", auth); code != http.StatusUnauthorized || strings.Contains(body, "acme/shop") {
			t.Errorf("scrape with Authorization %q = %d, want 401 without metrics", auth, code)
		}
	}
	code, body := scrape("http://"+metricsAddr+"/metrics", "Bearer scrape-token")
	if code != http.StatusOK || !strings.Contains(body, `driftpreview_live_drift_objects{repo="github/acme/shop",target="shop-prod"} 0`) {
		t.Errorf("scrape with the token = %d, want 200 with the metrics:\n%.300s", code, body)
	}
}
