package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/watch"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// watchRepo is a repository whose PR changes settings' MODE and starts setting
// its LOG_LEVEL (info, as live has it, set by a setup job); live-drift fails the
// check, so a hand edit of LOG_LEVEL that the merge would revert turns the check
// from success to failure (the base does not set LOG_LEVEL, so the drift is the
// PR's, not pre-existing).
func watchRepo(t *testing.T, ns string) *repo {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitfixture.Git(t, root, "init", "-q", "-b", "main", work)
	write(t, work, map[string]string{
		".driftpreview.yaml": fmt.Sprintf(`version: 1
targets:
  - name: shop
    path: app
    namespace: %s
    cluster: prod
    sync: {manager: kustomize-controller}
policy:
  fail: [live-drift]
`, ns),
		"app/kustomization.yaml": fmt.Sprintf("namespace: %s\nresources: [settings.yaml]\n", ns),
		"app/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {MODE: a}\n",
	})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "base")
	r := &repo{root: root, Base: gitfixture.Git(t, work, "rev-parse", "HEAD")}
	gitfixture.Git(t, work, "checkout", "-q", "-b", "feature")
	write(t, work, map[string]string{
		"app/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {LOG_LEVEL: info, MODE: b}\n",
	})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "head")
	r.Head = gitfixture.Git(t, work, "rev-parse", "HEAD")
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "git", "acme", "shop.git"))
	return r
}

// applyBase creates the namespace and base's settings as kustomize-controller,
// with LOG_LEVEL info set by another (not human) manager.
func applyBase(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	kube := cluster.Kube()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	force := true
	for manager, data := range map[string]string{"kustomize-controller": `{"MODE":"a"}`, "setup-job": `{"LOG_LEVEL":"info"}`} {
		apply := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q},"data":%s}`, ns, data)
		if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.ApplyPatchType, []byte(apply),
			metav1.PatchOptions{FieldManager: manager, Force: &force}); err != nil {
			t.Fatal(err)
		}
	}
}

// kubectlEdit changes settings' LOG_LEVEL the way `kubectl edit` does: an update
// (PUT) of the whole object with field manager kubectl-edit.
func kubectlEdit(t *testing.T, ns, level string) {
	t.Helper()
	ctx := context.Background()
	cms := cluster.Kube().CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["LOG_LEVEL"] = level
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// hostUnderTest is one host's side of the watch test: how to open and close its
// pull request, and what the fake recorded.
type hostUnderTest struct {
	host    server.Host
	name    string
	open    func(t *testing.T, s *stack)
	close   func(t *testing.T, s *stack)
	comment func() string // the sticky comment's body
	verdict func() string // the last conclusion on head ("success", "failure", …)
}

func githubUnderTest(t *testing.T, r *repo, number int) hostUnderTest {
	fake, client, _ := newGitHub(t, r, 0)
	deliver := func(t *testing.T, s *stack, action, id string) {
		body := ghPayload(t, action, number, r, "acme/shop")
		if code := s.deliver(t, "github", githubtest.WebhookHeader("pull_request", id, []byte(webhookSecret), body), body); code/100 != 2 {
			t.Fatalf("%s delivery: %d", action, code)
		}
	}
	return hostUnderTest{host: client, name: "github",
		open:  func(t *testing.T, s *stack) { deliver(t, s, "opened", "gh-watch-open") },
		close: func(t *testing.T, s *stack) { deliver(t, s, "closed", "gh-watch-close") },
		comment: func() string {
			var b strings.Builder
			for _, c := range fake.Comments("acme/shop", number) {
				b.WriteString(c.Body)
			}
			return b.String()
		},
		verdict: func() string {
			runs := fake.CheckRuns("acme/shop", r.Head)
			if len(runs) == 0 {
				return ""
			}
			last := runs[len(runs)-1]
			if last.Status != "completed" {
				return last.Status
			}
			return last.Conclusion
		},
	}
}

func gitlabUnderTest(t *testing.T, r *repo) hostUnderTest {
	fake := gitlabtest.New(t)
	fake.AddProject(42, "acme/shop")
	fake.AddMergeRequest(gitlabtest.MergeRequest{ProjectID: 42, IID: 5, SourceBranch: "feature", TargetBranch: "main",
		SHA: r.Head, StartSHA: r.Base, BaseSHA: r.Base, WebURL: "https://gitlab.example/acme/shop/-/merge_requests/5"})
	client, _ := gitlabClient(t, r, fake)
	deliver := func(t *testing.T, s *stack, action, id string) {
		body, _ := json.Marshal(map[string]any{
			"object_kind": "merge_request", "user": map[string]any{"username": "ada"},
			"project": map[string]any{"id": 42, "path_with_namespace": "acme/shop"},
			"object_attributes": map[string]any{"iid": 5, "action": action, "target_branch": "main", "source_branch": "feature",
				"source_project_id": 42, "target_project_id": 42, "last_commit": map[string]any{"id": r.Head},
				"url": "https://gitlab.example/acme/shop/-/merge_requests/5"},
		})
		if code := s.deliver(t, "gitlab", gitlabtest.WebhookHeader("Merge Request Hook", id, webhookSecret), body); code/100 != 2 {
			t.Fatalf("%s delivery: %d", action, code)
		}
	}
	return hostUnderTest{host: client, name: "gitlab",
		open:  func(t *testing.T, s *stack) { deliver(t, s, "open", "gl-watch-open") },
		close: func(t *testing.T, s *stack) { deliver(t, s, "close", "gl-watch-close") },
		comment: func() string {
			var b strings.Builder
			for _, n := range fake.Notes(42, 5) {
				b.WriteString(n.Body)
			}
			return b.String()
		},
		verdict: func() string {
			st := fake.Statuses(42, r.Head)
			if len(st) == 0 {
				return ""
			}
			return map[string]string{"success": "success", "failed": "failure", "running": "in_progress"}[st[len(st)-1].State]
		},
	}
}

// TestWatchRechecksOnLiveChange is issue 26's end-to-end test: a pull request is
// previewed; a `kubectl edit` changes a field the PR also sets; within 30 s the
// sticky comment says what changed and the check follows; after the close, a
// further edit runs nothing.
func TestWatchRechecksOnLiveChange(t *testing.T) {
	for _, hostName := range []string{"github", "gitlab"} {
		t.Run(hostName, func(t *testing.T) {
			ns := "e2e-watch-" + hostName
			r := watchRepo(t, ns)
			applyBase(t, ns)
			var h hostUnderTest
			if hostName == "github" {
				h = githubUnderTest(t, r, 7)
			} else {
				h = gitlabUnderTest(t, r)
			}
			bot := startBot(t, map[string]server.Host{hostName: h.host}, func(o *server.Options) {
				o.Watch = server.WatchOptions{Enabled: true, Options: watch.Options{Debounce: time.Second}}
			})
			h.open(t, bot)
			bot.waitDone(t)
			if got := h.verdict(); got != "success" {
				t.Fatalf("first preview's check: %q, want success\n%s", got, h.comment())
			}
			if strings.Contains(h.comment(), "Since the preview at") {
				t.Fatalf("first comment says something changed:\n%s", h.comment())
			}

			kubectlEdit(t, ns, "debug")
			edited := time.Now()
			want := fmt.Sprintf("`kubectl-edit` changed `/data/LOG_LEVEL` of ConfigMap `%s/settings`", ns)
			for {
				if c := h.comment(); strings.Contains(c, want) && h.verdict() == "failure" {
					break
				}
				if time.Since(edited) > 30*time.Second {
					t.Fatalf("30 s after the edit: check %q, comment:\n%s", h.verdict(), h.comment())
				}
				time.Sleep(200 * time.Millisecond)
			}
			if c := h.comment(); !strings.Contains(c, "Since the preview at") || !strings.Contains(c, "`live-drift`") {
				t.Errorf("re-preview's comment lacks the since line or the live-drift finding:\n%s", c)
			}

			h.close(t, bot)
			bot.waitDone(t)
			before := jobCount(t, bot)
			kubectlEdit(t, ns, "trace")
			// Several debounce windows: any re-check would have been queued by now.
			time.Sleep(5 * time.Second)
			if after := jobCount(t, bot); after != before {
				t.Errorf("%d jobs after the close and an edit, want %d: a closed pull request is still re-checked", after, before)
			}
		})
	}
}

func jobCount(t *testing.T, s *stack) int {
	t.Helper()
	rows, err := s.queue.Jobs(context.Background(), jobs.Kind)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}
