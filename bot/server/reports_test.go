package server_test

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/reports"
	"github.com/driftpreview/driftpreview/bot/server"
)

// TestReportPageLinked runs a job through the handler and the worker with report
// pages on: the comment links the page at the server's public URL, and the
// server serves the preview's page at that link, and nothing at a tampered one.
func TestReportPageLinked(t *testing.T) {
	repo, host, store, srv := reportServer(t, 0)
	_ = store
	comments := host.Comments()
	if len(comments) != 1 {
		t.Fatalf("%d comments", len(comments))
	}
	m := regexp.MustCompile(`\[Full report\]\(https://driftpreview\.example\.com(/reports/[0-9a-f]{32}\?exp=[0-9]+&sig=[0-9a-f]{64})\)`).FindStringSubmatch(comments[0].Pages[0])
	if m == nil {
		t.Fatalf("the comment does not link the report page:\n%s", comments[0].Pages[0])
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(m[1])
	if code != 200 || !strings.HasPrefix(body, "<!DOCTYPE html>") || !strings.Contains(body, repo.Head) {
		t.Errorf("GET the linked page: %d\n%.500s", code, body)
	}
	if code, _ := get(strings.Replace(m[1], "sig=", "sig=0", 1)); code != http.StatusForbidden {
		t.Errorf("GET a tampered link: %d, want 403", code)
	}
}

// reportServer runs one job with report pages capped at maxBytes (0: the
// default) and returns once its final status is set.
func reportServer(t *testing.T, maxBytes int64) (*gitRepo, *fakeHost, *reports.Store, *running) {
	t.Helper()
	repo := newGitRepo(t)
	host := newFakeHost("github", repo.URL)
	store, err := reports.Open(reports.Options{Dir: filepath.Join(t.TempDir(), "reports"), BaseURL: "https://driftpreview.example.com", MaxBytes: maxBytes})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, host, newFakePreviewer(), func(o *server.Options) {
		o.Jobs.Reports = store
		o.Handler.Reports = store
	})
	prA := pr("acme/shop", 7, repo.Head)
	prA.BaseSHA = repo.Base
	if code := srv.post(t, bot.Event{Kind: bot.EventRun, DeliveryID: "d1", PR: prA}); code != 202 {
		t.Fatalf("delivery: %d", code)
	}
	eventually(t, "the final status", func() bool { return len(host.states(repo.Head)) == 2 })
	return repo, host, store, srv
}

// TestReportPageOverCap: a page over reports.maxBytes is not kept, and the
// comment still goes out, without a link to it.
func TestReportPageOverCap(t *testing.T) {
	repo, host, _, _ := reportServer(t, 1000)
	comments := host.Comments()
	if len(comments) != 1 || strings.Contains(comments[0].Pages[0], "Full report") || !strings.Contains(comments[0].Pages[0], repo.Head[:7]) {
		t.Errorf("comments %+v, want one without a report link", comments)
	}
}
