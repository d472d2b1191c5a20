// Package e2e_test drives the whole bot end to end: signed webhooks into the real
// HTTP handler, the SQLite queue, the worker fetching over git's smart HTTP into a
// bare mirror, preview.Run against a real kube-apiserver (fixtures/cluster/testcluster),
// and the real GitHub and GitLab adapters talking to their fakes.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/riverqueue/river/rivertype"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/driftpreview/driftpreview/bot/github"
	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
	"github.com/driftpreview/driftpreview/bot/internal/hostretry"
	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/queue"
	"github.com/driftpreview/driftpreview/bot/server"
	"github.com/driftpreview/driftpreview/bot/server/servertest"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

var cluster *testcluster.Cluster

func TestMain(m *testing.M) { testcluster.Main(m, &cluster) }

const webhookSecret = "e2e-webhook-secret"

// repo is a bare repository acme/shop.git under root with a base commit on main and
// a head commit on feature.
type repo struct {
	root       string
	Base, Head string
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo builds the scenario: base has ConfigMaps settings and legacy and the PVC
// cache; head changes settings and deletes legacy and cache, with prune on.
func newRepo(t *testing.T, ns string, extraHead map[string]string) *repo {
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
    sync: {prune: true, manager: kustomize-controller}
`, ns),
		"app/kustomization.yaml": fmt.Sprintf("namespace: %s\nresources: [settings.yaml, legacy.yaml, cache.yaml]\n", ns),
		"app/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {LOG_LEVEL: info, MODE: a}\n",
		"app/legacy.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: legacy}\ndata: {FLAG: \"on\"}\n",
		"app/cache.yaml":         "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: cache}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
	})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "base")
	r := &repo{root: root, Base: gitfixture.Git(t, work, "rev-parse", "HEAD")}
	gitfixture.Git(t, work, "checkout", "-q", "-b", "feature")
	head := map[string]string{
		"app/kustomization.yaml": fmt.Sprintf("namespace: %s\nresources: [settings.yaml]\n", ns),
		"app/settings.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {LOG_LEVEL: info, MODE: b}\n",
		"app/legacy.yaml":        "",
		"app/cache.yaml":         "",
	}
	for k, v := range extraHead {
		head[k] = v
	}
	write(t, work, head)
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "head")
	r.Head = gitfixture.Git(t, work, "rev-parse", "HEAD")
	bare := filepath.Join(root, "git", "acme", "shop.git")
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, bare)
	return r
}

// gitFront serves repositories under root/git with git's smart HTTP protocol
// (git http-backend) and proxies everything else to api (the fake host, or nil).
// A fetch without an Authorization header passing auth gets 401.
// gitlabClient is a GitLab host client of the fake, whose git front serves
// the repository r to the fake's token only; fetches counts the fetches.
func gitlabClient(t *testing.T, r *repo, fake *gitlabtest.Server) (*gitlab.Client, *int) {
	t.Helper()
	wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("oauth2:"+fake.Token))
	front, fetches := gitFront(t, r.root, fake.URL(), func(a string) bool { return a == wantAuth })
	o := gitlab.DefaultOptions()
	o.URL, o.Token, o.WebhookSecret = front, fake.Token, []byte(webhookSecret)
	client, err := gitlab.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return client, fetches
}

// countCalls counts the calls of method to path a host fake recorded.
func countCalls(calls []hostfake.Call, method, path string) int {
	n := 0
	for _, c := range calls {
		if c.Method == method && c.Path == path {
			n++
		}
	}
	return n
}

func gitFront(t *testing.T, root string, api string, auth func(string) bool) (string, *int) {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	backend := &cgi.Handler{Path: gitPath, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Join(root, "git"), "GIT_HTTP_EXPORT_ALL=1"}}
	var proxy http.Handler
	if api != "" {
		u, _ := url.Parse(api)
		proxy = httputil.NewSingleHostReverseProxy(u)
	}
	var mu sync.Mutex
	fetches := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, ".git/") {
			if !auth(r.Header.Get("Authorization")) {
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
			mu.Lock()
			*fetches++
			mu.Unlock()
			backend.ServeHTTP(w, r)
			return
		}
		if proxy == nil {
			http.NotFound(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, fetches
}

// liveDrift creates base's objects in ns as the GitOps manager would (server-side
// apply by kustomize-controller), then a human `kubectl edit` of settings' LOG_LEVEL.
func liveDrift(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	kube := cluster.Kube()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	apply := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q},"data":{"LOG_LEVEL":"info","MODE":"a"}}`, ns)
	force := true
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.ApplyPatchType, []byte(apply),
		metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	legacy := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"legacy","namespace":%q},"data":{"FLAG":"on"}}`, ns)
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "legacy", types.ApplyPatchType, []byte(legacy),
		metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	cache := fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"cache","namespace":%q},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`, ns)
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Patch(ctx, "cache", types.ApplyPatchType, []byte(cache),
		metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"LOG_LEVEL":"debug"}}`),
		metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
}

// stack is the bot under test, serving on a real port.
type stack struct {
	url   string
	queue *queue.Queue
	srv   *server.Server
}

func startBot(t *testing.T, hosts map[string]server.Host, mod func(*server.Options)) *stack {
	t.Helper()
	dir := t.TempDir()
	prod := preview.Cluster{Name: "prod", Config: cluster.Config(), LiveMode: "simulate"}
	jo := jobs.DefaultOptions()
	jo.Clusters = map[string]preview.Cluster{"prod": prod}
	opts := server.Options{
		Hosts:     hosts,
		Previewer: jobs.PreviewFunc(preview.Run),
		WorkDir:   filepath.Join(dir, "mirrors"),
		Queue: queue.Options{Driver: queue.DriverSQLite, DSN: filepath.Join(dir, "queue.db"),
			FetchPollInterval: 50 * time.Millisecond, MaxAttempts: 2},
		Jobs:    jo,
		Handler: server.HandlerOptions{Repos: []string{"acme/*"}},
	}
	if mod != nil {
		mod(&opts)
	}
	s, err := server.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return &stack{url: servertest.Serve(t, s), queue: s.Queue, srv: s}
}

func (s *stack) deliver(t *testing.T, host string, h http.Header, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/webhooks/"+host, bytes.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitDone waits until every job is finished and returns their states.
func (s *stack) waitDone(t *testing.T) []rivertype.JobState {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		rows, err := s.queue.Jobs(context.Background(), jobs.Kind)
		if err != nil {
			t.Fatal(err)
		}
		var states []rivertype.JobState
		done := len(rows) > 0
		for _, r := range rows {
			states = append(states, r.State)
			if r.State != rivertype.JobStateCompleted && r.State != rivertype.JobStateDiscarded && r.State != rivertype.JobStateCancelled {
				done = false
			}
		}
		if done {
			return states
		}
		if time.Now().After(deadline) {
			for _, r := range rows {
				t.Logf("job %d %s errors %+v", r.ID, r.State, r.Errors)
			}
			t.Fatalf("jobs not finished: %v", states)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ghPayload(t *testing.T, action string, number int, r *repo, headRepo string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"action": action, "number": number,
		"pull_request": map[string]any{
			"number": number, "html_url": fmt.Sprintf("https://github.example/acme/shop/pull/%d", number),
			"base": map[string]any{"ref": "main", "sha": r.Base, "repo": map[string]any{"full_name": "acme/shop"}},
			"head": map[string]any{"ref": "feature", "sha": r.Head, "repo": map[string]any{"full_name": headRepo}},
		},
		"repository":   map[string]any{"full_name": "acme/shop"},
		"installation": map[string]any{"id": 4242},
		"sender":       map[string]any{"login": "ada"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkRunStates reads the check-run writes the adapter made, in order.
func checkRunStates(calls []githubtest.Call) []string {
	var out []string
	for _, c := range calls {
		if !strings.Contains(c.Path, "/check-runs") || (c.Method != http.MethodPost && c.Method != http.MethodPatch) {
			continue
		}
		var b struct{ Status, Conclusion string }
		_ = json.Unmarshal([]byte(c.Body), &b)
		out = append(out, strings.TrimSuffix(b.Status+"/"+b.Conclusion, "/"))
	}
	return out
}

func newGitHub(t *testing.T, r *repo, maxChars int) (*githubtest.Server, *github.Client, *int) {
	t.Helper()
	fake := githubtest.New(t)
	front, fetches := gitFront(t, r.root, "", func(a string) bool {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "Basic "))
		return err == nil && strings.HasPrefix(string(raw), "x-access-token:") && len(raw) > len("x-access-token:")
	})
	o := github.DefaultOptions()
	o.AppID, o.PrivateKey, o.WebhookSecret = fake.AppID, fake.KeyPEM, []byte(webhookSecret)
	o.APIURL, o.WebURL = fake.URL(), front
	o.BotLogin = fake.BotLogin
	o.Retry = hostretry.DefaultOptions()
	o.MaxCommentChars = maxChars
	c, err := github.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fake, c, fetches
}

func TestGitHubEndToEnd(t *testing.T) {
	tests := []struct {
		name      string
		number    int
		headRepo  string
		maxChars  int
		fail403   bool
		wantRuns  []string
		wantPages int // 0: no comment; -1: more than one
		wantText  []string
	}{
		{
			name: "pull request gets a check and one comment", number: 1, headRepo: "acme/shop",
			wantRuns:  []string{"in_progress", "completed/failure"},
			wantPages: 1,
			wantText: []string{"<!-- driftpreview:sticky v1 -->", "`prune-stateful`", "`prune`", "`live-drift`",
				"PersistentVolumeClaim", "cache", "legacy", "LOG_LEVEL", "kubectl-edit"},
		},
		{
			name: "oversized report is split into pages", number: 2, headRepo: "acme/shop", maxChars: 450,
			wantRuns:  []string{"in_progress", "completed/failure"},
			wantPages: -1,
			wantText:  []string{"`prune-stateful`", "page 2 -->"},
		},
		{
			name: "fork pull request gets a neutral check", number: 3, headRepo: "mallory/shop",
			wantRuns: []string{"completed/neutral"},
		},
		{
			name: "403 with Retry-After is retried", number: 4, headRepo: "acme/shop", fail403: true,
			// The first write is answered 403 and sent again after a second.
			wantRuns:  []string{"in_progress", "in_progress", "completed/failure"},
			wantPages: 1,
			wantText:  []string{"`prune-stateful`"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fmt.Sprintf("e2e-gh-%d", tt.number)
			r := newRepo(t, ns, nil)
			liveDrift(t, ns)
			fake, client, fetches := newGitHub(t, r, tt.maxChars)
			if tt.fail403 {
				fake.FailNext(http.MethodPost, "/repos/acme/shop/check-runs", 1, http.StatusForbidden,
					http.Header{"Retry-After": {"1"}, "Content-Type": {"application/json"}})
			}
			bot := startBot(t, map[string]server.Host{"github": client}, nil)
			body := ghPayload(t, "opened", tt.number, r, tt.headRepo)
			if code := bot.deliver(t, "github", githubtest.WebhookHeader("pull_request", fmt.Sprint("gh-", tt.number), []byte("wrong"), body), body); code != 401 {
				t.Errorf("badly signed delivery: %d, want 401", code)
			}
			if code := bot.deliver(t, "github", githubtest.WebhookHeader("pull_request", fmt.Sprint("gh-", tt.number), []byte(webhookSecret), body), body); code != 202 {
				t.Fatalf("delivery: %d, want 202", code)
			}
			if diff := cmp.Diff([]rivertype.JobState{rivertype.JobStateCompleted}, bot.waitDone(t)); diff != "" {
				t.Errorf("job states (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRuns, checkRunStates(fake.Calls())); diff != "" {
				t.Errorf("check run writes (-want +got):\n%s", diff)
			}
			runs := fake.CheckRuns("acme/shop", r.Head)
			if len(runs) != 1 {
				t.Fatalf("%d check runs on head, want 1: %+v", len(runs), runs)
			}
			comments := fake.Comments("acme/shop", tt.number)
			switch {
			case tt.wantPages == -1 && len(comments) < 2:
				t.Errorf("%d comments, want a split into several", len(comments))
			case tt.wantPages >= 0 && len(comments) != tt.wantPages:
				t.Errorf("%d comments, want %d", len(comments), tt.wantPages)
			}
			var all strings.Builder
			for _, c := range comments {
				if tt.maxChars > 0 && len(c.Body) > tt.maxChars {
					t.Errorf("comment %d is %d bytes, over the %d limit", c.ID, len(c.Body), tt.maxChars)
				}
				all.WriteString(c.Body)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(all.String(), w) {
					t.Errorf("comments lack %q:\n%s", w, all.String())
				}
			}
			if tt.wantPages != 0 && *fetches == 0 {
				t.Error("the mirror never fetched over HTTP")
			}
			if tt.fail403 {
				if posts := countCalls(fake.Calls(), http.MethodPost, "/repos/acme/shop/check-runs"); posts != 2 {
					t.Errorf("%d POSTs of the check run, want 2 (403, then the retry)", posts)
				}
			}
		})
	}
}

func TestGitLabEndToEnd(t *testing.T) {
	ns := "e2e-gl"
	r := newRepo(t, ns, nil)
	liveDrift(t, ns)
	fake := gitlabtest.New(t)
	fake.AddProject(42, "acme/shop")
	fake.AddMergeRequest(gitlabtest.MergeRequest{ProjectID: 42, IID: 5, SourceBranch: "feature", TargetBranch: "main",
		SHA: r.Head, StartSHA: r.Base, BaseSHA: r.Base, WebURL: "https://gitlab.example/acme/shop/-/merge_requests/5"})
	client, fetches := gitlabClient(t, r, fake)
	bot := startBot(t, map[string]server.Host{"gitlab": client}, nil)
	body, _ := json.Marshal(map[string]any{
		"object_kind": "merge_request", "user": map[string]any{"username": "ada"},
		"project": map[string]any{"id": 42, "path_with_namespace": "acme/shop"},
		"object_attributes": map[string]any{"iid": 5, "action": "open", "target_branch": "main", "source_branch": "feature",
			"source_project_id": 42, "target_project_id": 42, "last_commit": map[string]any{"id": r.Head},
			"url": "https://gitlab.example/acme/shop/-/merge_requests/5"},
	})
	if code := bot.deliver(t, "gitlab", gitlabtest.WebhookHeader("Merge Request Hook", "uuid-1", "wrong"), body); code != 401 {
		t.Errorf("delivery with a wrong token: %d, want 401", code)
	}
	for range 2 { // the same delivery twice runs once
		if code := bot.deliver(t, "gitlab", gitlabtest.WebhookHeader("Merge Request Hook", "uuid-1", webhookSecret), body); code/100 != 2 {
			t.Fatalf("delivery: %d", code)
		}
	}
	if diff := cmp.Diff([]rivertype.JobState{rivertype.JobStateCompleted}, bot.waitDone(t)); diff != "" {
		t.Errorf("job states (-want +got):\n%s", diff)
	}
	var states []string
	for _, s := range fake.Statuses(42, r.Head) {
		states = append(states, s.State)
	}
	if diff := cmp.Diff([]string{"running", "failed"}, states); diff != "" {
		t.Errorf("commit statuses (-want +got):\n%s", diff)
	}
	notes := fake.Notes(42, 5)
	if len(notes) != 1 {
		t.Fatalf("%d notes, want 1", len(notes))
	}
	for _, w := range []string{"<!-- driftpreview:sticky v1 -->", "`prune-stateful`", "`prune`", "`live-drift`", "PersistentVolumeClaim"} {
		if !strings.Contains(notes[0].Body, w) {
			t.Errorf("note lacks %q:\n%s", w, notes[0].Body)
		}
	}
	if *fetches == 0 {
		t.Error("the mirror never fetched over HTTP with the token")
	}
}

// bombRepo is a repository without a config (targets are discovered): base has
// an ApplicationSet of one Application; head adds the hostile ApplicationSets
// and Flux Kustomization of issue 20: a goTemplate repeat of 100 GB in 500
// bytes, a goTemplate loop without output, and a 1 MiB postBuild variable used
// 3,000 times.
func bombRepo(t *testing.T) *repo {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitfixture.Git(t, root, "init", "-q", "-b", "main", work)
	set := func(name, tpl string) string {
		return `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: ` + name + `, namespace: argocd}
spec:
  goTemplate: true
  generators: [{list: {elements: [{i: 0}]}}]
  template:
    metadata: {name: '` + tpl + `'}
    spec:
      project: default
      source: {repoURL: https://example.com/acme/shop.git, path: apps, targetRevision: HEAD}
      destination: {server: https://kubernetes.default.svc, namespace: shop}
`
	}
	write(t, work, map[string]string{
		"argocd/apps.yaml": set("apps", "app-{{ .i }}"),
		"apps/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\n",
	})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "base")
	r := &repo{root: root, Base: gitfixture.Git(t, work, "rev-parse", "HEAD")}
	gitfixture.Git(t, work, "checkout", "-q", "-b", "feature")
	var uses strings.Builder
	uses.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: shop}\ndata:\n")
	for i := range 3000 {
		fmt.Fprintf(&uses, "  k%04d: ${big}\n", i)
	}
	write(t, work, map[string]string{
		"argocd/repeat.yaml": set("repeat", `{{ repeat 100000000000 "x" }}`),
		"argocd/loop.yaml":   set("loop", `app{{ range 1000000000000 }}{{ end }}`),
		"clusters/prod/subst.yaml": `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: subst, namespace: flux-system}
spec:
  interval: 10m
  path: ./subst
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  postBuild:
    substitute: {big: "` + strings.Repeat("v", 1<<20) + `"}
`,
		"subst/cm.yaml": uses.String(),
	})
	gitfixture.Git(t, work, "add", "-A")
	gitfixture.Git(t, work, "commit", "-q", "-m", "head")
	r.Head = gitfixture.Git(t, work, "rev-parse", "HEAD")
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "git", "acme", "shop.git"))
	return r
}

// TestServeSurvivesBombs: serve previews a PR of ApplicationSet and
// substitution bombs (issue 20), completes its check with the reasons, and
// then serves another PR. Before, the repeat set killed the process ("fatal
// error: out of memory") with every job in flight, and the loop held a worker
// for good. The template limits are small (a 3 s timeout) to keep it quick.
func TestServeSurvivesBombs(t *testing.T) {
	bombs := bombRepo(t)
	fake, client, _ := newGitHub(t, bombs, 0)
	bot := startBot(t, map[string]server.Host{"github": client}, func(o *server.Options) {
		o.Previewer = jobs.PreviewFunc(func(ctx context.Context, req preview.Request) (*diffing.Report, error) {
			req.TemplateLimits.Timeout = 3 * time.Second
			return preview.Run(ctx, req)
		})
	})
	body := ghPayload(t, "opened", 7, bombs, "acme/shop")
	start := time.Now()
	if code := bot.deliver(t, "github", githubtest.WebhookHeader("pull_request", "gh-bombs", []byte(webhookSecret), body), body); code != 202 {
		t.Fatalf("delivery: %d, want 202", code)
	}
	if diff := cmp.Diff([]rivertype.JobState{rivertype.JobStateCompleted}, bot.waitDone(t)); diff != "" {
		t.Errorf("job states (-want +got):\n%s", diff)
	}
	t.Logf("bombs previewed in %s", time.Since(start))
	runs := fake.CheckRuns("acme/shop", bombs.Head)
	if len(runs) != 1 || runs[0].Status != "completed" {
		t.Fatalf("check runs on head: %+v, want one completed", runs)
	}
	var all strings.Builder
	for _, c := range fake.Comments("acme/shop", 7) {
		all.WriteString(c.Body)
	}
	for _, w := range []string{"repeat", "limit per template output", "took longer than 3s", "after substitution"} {
		if !strings.Contains(all.String(), w) {
			t.Errorf("the comment lacks %q:\n%s", w, all.String())
		}
	}

	// The same bot serves the next PR: a calm change of the same repository.
	next := &repo{root: bombs.root, Base: bombs.Base, Head: calmCommit(t, bombs)}
	body = ghPayload(t, "opened", 8, next, "acme/shop")
	if code := bot.deliver(t, "github", githubtest.WebhookHeader("pull_request", "gh-next", []byte(webhookSecret), body), body); code != 202 {
		t.Fatalf("delivery: %d, want 202", code)
	}
	bot.waitDone(t)
	runs = fake.CheckRuns("acme/shop", next.Head)
	if len(runs) != 1 || runs[0].Status != "completed" {
		t.Fatalf("check runs of the next PR: %+v, want one completed", runs)
	}
}

// calmCommit commits a small change on main of r and makes it the feature
// branch of r's bare repository.
func calmCommit(t *testing.T, r *repo) string {
	t.Helper()
	work := filepath.Join(r.root, "work")
	gitfixture.Git(t, work, "checkout", "-q", "-b", "calm", "main")
	write(t, work, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\ndata: {a: b}\n"})
	gitfixture.Git(t, work, "commit", "-q", "-am", "calm")
	gitfixture.Git(t, work, "push", "-q", "-f", filepath.Join(r.root, "git", "acme", "shop.git"), "calm:feature")
	return gitfixture.Git(t, work, "rev-parse", "HEAD")
}
