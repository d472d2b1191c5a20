package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// setLogLevel is a human's `kubectl edit` of settings' LOG_LEVEL in ns.
func setLogLevel(t *testing.T, ns, level string) {
	t.Helper()
	if _, err := cluster.Kube().CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"data":{"LOG_LEVEL":"`+level+`"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// pushMain commits a file that changes no manifest on main and pushes it to
// the served repository, returning the new head.
func pushMain(t *testing.T, r *repo, name string) string {
	t.Helper()
	work := filepath.Join(r.root, "work")
	gitfixture.Git(t, work, "checkout", "-q", "main")
	write(t, work, map[string]string{name: "notes\n"})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", name)
	gitfixture.Git(t, work, "push", "-q", "-f", filepath.Join(r.root, "git", "acme", "shop.git"), "main:main")
	return gitfixture.Git(t, work, "rev-parse", "HEAD")
}

// driftRuns waits until n drift runs exist and all are finished.
func (s *stack) driftRuns(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		rows, err := s.queue.Jobs(context.Background(), jobs.DriftKind)
		if err != nil {
			t.Fatal(err)
		}
		done := len(rows) == n
		for _, r := range rows {
			if r.FinalizedAt == nil {
				done = false
			}
		}
		if done {
			for _, r := range rows {
				if len(r.Errors) > 0 {
					t.Logf("drift run %d %s: %+v", r.ID, r.State, r.Errors)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			for _, r := range rows {
				t.Logf("drift run %d %s errors %+v", r.ID, r.State, r.Errors)
			}
			t.Fatalf("%d drift runs, want %d finished", len(rows), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *stack) metrics(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func ghPush(t *testing.T, after string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "after": after, "deleted": false,
		"repository":   map[string]any{"full_name": "acme/shop", "default_branch": "main", "html_url": "https://github.example/acme/shop"},
		"installation": map[string]any{"id": 4242},
		"sender":       map[string]any{"login": "ada"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGitHubDriftIssue: the drift report of main, against the real apiserver
// and the GitHub fake: a hand edit opens the issue, fixing it closes the issue
// on the next (scheduled) run, a new edit reopens the same issue after a push;
// the gauge follows.
func TestGitHubDriftIssue(t *testing.T) {
	ns := "e2e-drift-gh"
	r := newRepo(t, ns, nil)
	liveDrift(t, ns) // LOG_LEVEL debug by kubectl-edit; git says info
	fake, client, _ := newGitHub(t, r, 0)
	bot := startBot(t, map[string]server.Host{"github": client}, func(o *server.Options) {
		o.Drift = server.DriftOptions{Enabled: true, Interval: time.Hour}
	})
	body := ghPush(t, r.Base)
	if code := bot.deliver(t, "github", githubtest.WebhookHeader("push", "push-1", []byte(webhookSecret), body), body); code != 202 {
		t.Fatalf("push delivery: %d, want 202", code)
	}
	bot.driftRuns(t, 1)
	issues := fake.Issues("acme/shop")
	if len(issues) != 1 || issues[0].State != "open" || issues[0].Title != "driftpreview: live drift on main" {
		t.Fatalf("issues %+v, want one open drift issue", issues)
	}
	for _, want := range []string{hosttext.DriftMarker, "LOG_LEVEL", "kubectl-edit", "`" + r.Base[:7] + "`"} {
		if !strings.Contains(issues[0].Body, want) {
			t.Errorf("issue body lacks %q:\n%s", want, issues[0].Body)
		}
	}
	gauge := `driftpreview_drift_objects{cluster="prod",repo="github/acme/shop",target="shop"} `
	if m := bot.metrics(t); !strings.Contains(m, gauge+"1\n") {
		t.Errorf("metrics lack %s1:\n%s", gauge, grepLines(m, "driftpreview_drift_objects"))
	}

	// The edit is undone: the scheduled run closes the issue.
	setLogLevel(t, ns, "info")
	if n, err := bot.srv.ScheduleDrift(context.Background()); err != nil || n != 1 {
		t.Fatalf("ScheduleDrift: %d %v, want 1 run", n, err)
	}
	bot.driftRuns(t, 2)
	issues = fake.Issues("acme/shop")
	if len(issues) != 1 || issues[0].State != "closed" || issues[0].StateReason != "completed" {
		t.Fatalf("issues %+v, want the one issue closed", issues)
	}
	if m := bot.metrics(t); !strings.Contains(m, gauge+"0\n") {
		t.Errorf("metrics lack %s0:\n%s", gauge, grepLines(m, "driftpreview_drift_objects"))
	}

	// New drift, then a push to main: the same issue is reopened.
	setLogLevel(t, ns, "warn")
	head := pushMain(t, r, "NOTES.md")
	body = ghPush(t, head)
	if code := bot.deliver(t, "github", githubtest.WebhookHeader("push", "push-2", []byte(webhookSecret), body), body); code != 202 {
		t.Fatalf("second push delivery: %d, want 202", code)
	}
	bot.driftRuns(t, 3)
	issues = fake.Issues("acme/shop")
	if len(issues) != 1 || issues[0].State != "open" || !strings.Contains(issues[0].Body, "warn") ||
		!strings.Contains(issues[0].Body, "`"+head[:7]+"`") {
		t.Fatalf("issues %+v, want the one issue reopened with the new drift at %s", issues, head[:7])
	}
	if creates := countCalls(fake.Calls(), "POST", "/repos/acme/shop/issues"); creates != 1 {
		t.Errorf("%d issue creates, want 1", creates)
	}
}

func TestGitLabDriftIssue(t *testing.T) {
	ns := "e2e-drift-gl"
	r := newRepo(t, ns, nil)
	liveDrift(t, ns)
	fake := gitlabtest.New(t)
	fake.AddProject(42, "acme/shop")
	client, _ := gitlabClient(t, r, fake)
	bot := startBot(t, map[string]server.Host{"gitlab": client}, func(o *server.Options) {
		o.Drift = server.DriftOptions{Enabled: true, Interval: time.Hour}
	})
	body, _ := json.Marshal(map[string]any{
		"object_kind": "push", "ref": "refs/heads/main", "after": r.Base, "user_username": "ada", "project_id": 42,
		"project": map[string]any{"id": 42, "path_with_namespace": "acme/shop", "default_branch": "main", "web_url": "https://gitlab.example/acme/shop"},
	})
	if code := bot.deliver(t, "gitlab", gitlabtest.WebhookHeader("Push Hook", "uuid-push", webhookSecret), body); code != 202 {
		t.Fatalf("push delivery: %d, want 202", code)
	}
	bot.driftRuns(t, 1)
	issues := fake.Issues(42)
	if len(issues) != 1 || issues[0].State != "opened" || !strings.Contains(issues[0].Description, "kubectl-edit") {
		t.Fatalf("issues %+v, want one open drift issue naming kubectl-edit", issues)
	}
	if m := bot.metrics(t); !strings.Contains(m, `driftpreview_drift_objects{cluster="prod",repo="gitlab/acme/shop",target="shop"} 1`) {
		t.Errorf("metrics:\n%s", grepLines(m, "driftpreview_drift_objects"))
	}
	setLogLevel(t, ns, "info")
	if n, err := bot.srv.ScheduleDrift(context.Background()); err != nil || n != 1 {
		t.Fatalf("ScheduleDrift: %d %v", n, err)
	}
	bot.driftRuns(t, 2)
	if issues = fake.Issues(42); len(issues) != 1 || issues[0].State != "closed" {
		t.Fatalf("issues %+v, want the one issue closed", issues)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}
