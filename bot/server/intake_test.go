package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/server"
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
