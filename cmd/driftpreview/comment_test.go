package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/github/githubtest"
	"github.com/driftpreview/driftpreview/bot/gitlab/gitlabtest"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// revParse returns the SHA of rev in repo.
func revParse(t *testing.T, repo, rev string) string {
	t.Helper()
	return gitfixture.Git(t, repo, "rev-parse", rev)
}

// clearCIEnv unsets every variable a CI host could have set for the test process.
func clearCIEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "CI_") || k == "GITLAB_CI" || k == "CI" || k == GitLabTokenVar {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("KUBECONFIG", "")
}

// eventFile writes a GitHub event payload: the recorded webhook fixture name with
// the pull request's SHAs replaced by the test repository's.
func eventFile(t *testing.T, fixture, base, head string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../fixtures/webhooks/github", fixture))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	// Actions' payload is the webhook's without the App installation.
	delete(ev, "installation")
	pr := ev["pull_request"].(map[string]any)
	pr["base"].(map[string]any)["sha"] = base
	pr["head"].(map[string]any)["sha"] = head
	out, _ := json.Marshal(ev)
	p := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// githubActionsEnv sets the variables GitHub Actions sets for a pull_request run,
// in their documented shapes.
func githubActionsEnv(t *testing.T, event, eventPath, apiURL, token string) string {
	t.Helper()
	summary := filepath.Join(t.TempDir(), "step_summary.md")
	for k, v := range map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": eventPath,
		"GITHUB_API_URL": apiURL, "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/gitops",
		"GITHUB_RUN_ID": "7014392841", "GITHUB_SHA": "0000000000000000000000000000000000000000",
		"GITHUB_REF": "refs/pull/17/merge", "GITHUB_STEP_SUMMARY": summary, "GITHUB_TOKEN": token,
	} {
		t.Setenv(k, v)
	}
	return summary
}

// methodPaths lists calls as "METHOD path" (githubtest.Call and gitlabtest.Call
// are the same type).
func methodPaths(calls []githubtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method+" "+c.Path)
	}
	return out
}

func runCommentCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"comment"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestCommentGitHubActions runs `driftpreview comment` as a GitHub Actions step
// would, against the fake GitHub: the env and event payload GitHub documents, the
// GITHUB_TOKEN as a Bearer token, the sticky comment (a stale follow-up deleted)
// and the check run, the preview's exit code, and the token printed nowhere.
func TestCommentGitHubActions(t *testing.T) {
	clearCIEnv(t)
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	srv := githubtest.New(t)
	srv.BotLogin = "github-actions[bot]"
	const token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
	srv.AddToken(token, false)
	// A follow-up page left by an earlier run, a human quoting the marker, and
	// another bot's comment.
	stale := srv.AddComment("acme/gitops", 17, "github-actions[bot]", "Bot", "<!-- driftpreview:sticky v1 page 2 -->\nold")
	srv.AddComment("acme/gitops", 17, "octocat", "User", "<!-- driftpreview:sticky v1 -->\nquoted")
	srv.AddComment("acme/gitops", 17, "renovate[bot]", "Bot", "<!-- driftpreview:sticky v1 -->\nnot ours")
	summary := githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", base, head),
		strings.TrimSuffix(srv.URL(), "/"), token)
	srv.AddPull(githubtest.PullRequest{Repo: "acme/gitops", Number: 17, BaseRef: "main", BaseSHA: base, HeadRef: "feature", HeadSHA: head})

	code, stdout, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
	if code != exitFailing {
		t.Fatalf("exit %d, want %d (the pruned PVC fails the policy); stderr:\n%s", code, exitFailing, stderr)
	}
	want := []string{
		"GET /repos/acme/gitops/commits/" + head + "/check-runs",
		"POST /repos/acme/gitops/check-runs",
		"GET /repos/acme/gitops/pulls/17", // the current head, before posting
		"GET /repos/acme/gitops/issues/17/comments",
		"POST /repos/acme/gitops/issues/17/comments",
		"DELETE /repos/acme/gitops/issues/comments/" + itoa(stale),
		"GET /repos/acme/gitops/issues/17/comments",
		"GET /repos/acme/gitops/commits/" + head + "/check-runs",
		"PATCH /repos/acme/gitops/check-runs/1004",
	}
	calls := srv.Calls()
	if diff := cmp.Diff(want, methodPaths(calls)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, c := range calls {
		if got := c.Header.Get("Authorization"); got != "Bearer "+token {
			t.Errorf("%s %s: Authorization %q, want the GITHUB_TOKEN as Bearer", c.Method, c.Path, got)
		}
		if !strings.HasPrefix(c.Header.Get("Accept"), "application/vnd.github") {
			t.Errorf("%s %s: Accept %q", c.Method, c.Path, c.Header.Get("Accept"))
		}
		if c.Method == http.MethodGet && strings.HasSuffix(c.Path, "/check-runs") && c.Query != "check_name=driftpreview&filter=latest&per_page=100" {
			t.Errorf("check runs listed with %q, want by name only (the Actions App is unknown)", c.Query)
		}
	}
	var started struct {
		Name, HeadSHA, Status, DetailsURL string
	}
	_ = json.Unmarshal([]byte(calls[1].Body), &struct {
		Name       *string `json:"name"`
		HeadSHA    *string `json:"head_sha"`
		Status     *string `json:"status"`
		DetailsURL *string `json:"details_url"`
	}{&started.Name, &started.HeadSHA, &started.Status, &started.DetailsURL})
	if started.Name != "driftpreview" || started.HeadSHA != head || started.Status != "in_progress" ||
		started.DetailsURL != "https://github.com/acme/gitops/actions/runs/7014392841" {
		t.Errorf("in-progress check run body %s", calls[1].Body)
	}
	runs := srv.CheckRuns("acme/gitops", head)
	if len(runs) != 1 || runs[0].Status != "completed" || runs[0].Conclusion != "failure" || !strings.Contains(runs[0].Title, "data-loss") && !strings.Contains(runs[0].Title, "prune-stateful") {
		t.Errorf("check runs = %+v, want one completed failure naming the finding", runs)
	}
	comments := srv.Comments("acme/gitops", 17)
	if len(comments) != 3 {
		t.Fatalf("%d comments, want the human's, renovate's and one sticky", len(comments))
	}
	sticky := comments[2]
	if sticky.User != "github-actions[bot]" || !strings.HasPrefix(sticky.Body, "<!-- driftpreview:sticky v1 -->") ||
		!strings.Contains(sticky.Body, "<!-- driftpreview:head "+head+" -->") || !strings.Contains(sticky.Body, "PersistentVolumeClaim") ||
		!strings.Contains(sticky.Body, "Re-run the CI job") {
		t.Errorf("sticky comment:\n%s", sticky.Body)
	}
	if !strings.Contains(stdout, "PersistentVolumeClaim") {
		t.Errorf("stdout lacks the comment:\n%s", stdout)
	}
	if b, _ := os.ReadFile(summary); !strings.Contains(string(b), "PersistentVolumeClaim") {
		t.Errorf("job summary lacks the comment:\n%s", b)
	}
	if strings.Contains(stdout+stderr, token) {
		t.Error("the token was printed")
	}

	// The next push: the same comment is edited in place, the check run is new.
	srv.ResetCalls()
	if code, _, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off"); code != exitFailing {
		t.Fatalf("second run: exit %d; stderr:\n%s", code, stderr)
	}
	if got := len(srv.Comments("acme/gitops", 17)); got != 3 {
		t.Errorf("second run left %d comments, want 3", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestCommentGitHubEnterprise: GITHUB_API_URL of GitHub Enterprise Server is
// https://HOST/api/v3; every call goes under it.
func TestCommentGitHubEnterprise(t *testing.T) {
	clearCIEnv(t)
	repo := scenarioRepo(t, "15-clean")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	srv := githubtest.New(t)
	const token = "ghs_enterpriseToken000000000000000000"
	srv.AddToken(token, false)
	target, _ := url.Parse(srv.URL())
	var paths []string
	ghes := httptest.NewServer(http.StripPrefix("/api/v3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	})))
	t.Cleanup(ghes.Close)
	githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.opened.json", base, head), ghes.URL+"/api/v3", token)
	code, _, stderr := runCommentCmd(t, "--repo", repo)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if len(paths) == 0 || len(paths) != len(srv.Calls()) {
		t.Errorf("%d calls under /api/v3, %d at the fake", len(paths), len(srv.Calls()))
	}
	if runs := srv.CheckRuns("acme/gitops", head); len(runs) != 1 || runs[0].Conclusion != "success" {
		t.Errorf("check runs = %+v, want one success", runs)
	}
}

// TestCommentGitHubFork: a pull_request run from a fork has a read-only token.
// Nothing is written; the comment goes to the job summary with a warning that says
// how to set up pull_request_target safely; the exit code is still the preview's.
// A token refused on its first write (403) is handled the same way.
func TestCommentGitHubFork(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, tc := range []struct {
		name, fixture string
		readOnly      bool
		wantCalls     []string
	}{
		{name: "fork in the payload", fixture: "pull_request.fork.json"},
		{name: "403 on the first write", fixture: "pull_request.opened.json", readOnly: true,
			wantCalls: []string{"GET /repos/acme/gitops/commits/" + head + "/check-runs", "POST /repos/acme/gitops/check-runs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearCIEnv(t)
			srv := githubtest.New(t)
			const token = "ghs_readOnlyToken11111111111111111111"
			srv.AddToken(token, tc.readOnly)
			summary := githubActionsEnv(t, "pull_request", eventFile(t, tc.fixture, base, head), strings.TrimSuffix(srv.URL(), "/"), token)
			code, stdout, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
			if code != exitFailing {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailing, stderr)
			}
			if diff := cmp.Diff(tc.wantCalls, methodPaths(srv.Calls())); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			for _, want := range []string{"::warning title=driftpreview::", "pull_request_target", "head.sha", "persist-credentials: false"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if b, _ := os.ReadFile(summary); !strings.Contains(string(b), "PersistentVolumeClaim") {
				t.Errorf("job summary lacks the comment:\n%s", b)
			}
			if strings.Contains(stdout+stderr, token) {
				t.Error("the token was printed")
			}
		})
	}
}

// TestCommentGitHubErrors: clear errors, exit 2, nothing posted.
func TestCommentGitHubErrors(t *testing.T) {
	repo := scenarioRepo(t, "15-clean")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	for _, tc := range []struct {
		name, event, token, base, want string
	}{
		{name: "push event", event: "push", token: "t", base: base, want: `GITHUB_EVENT_NAME is "push"`},
		{name: "no token", event: "pull_request", base: base, want: "GITHUB_TOKEN is not set"},
		{name: "base not fetched", event: "pull_request", token: "t", base: "1111111111111111111111111111111111111111", want: "fetch-depth: 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearCIEnv(t)
			srv := githubtest.New(t)
			githubActionsEnv(t, tc.event, eventFile(t, "pull_request.opened.json", tc.base, head), strings.TrimSuffix(srv.URL(), "/"), tc.token)
			code, _, stderr := runCommentCmd(t, "--repo", repo)
			if code != exitError || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, tc.want)
			}
			if n := len(srv.Calls()); n != 0 {
				t.Errorf("%d calls made", n)
			}
		})
	}
	clearCIEnv(t)
	if code, _, stderr := runCommentCmd(t, "--repo", repo); code != exitError || !strings.Contains(stderr, "not in GitHub Actions") {
		t.Errorf("outside CI: exit %d, stderr %q", code, stderr)
	}
}

// gitlabCIEnv sets the predefined variables of a GitLab merge request pipeline.
func gitlabCIEnv(t *testing.T, apiRoot, base, head string) {
	t.Helper()
	for k, v := range map[string]string{
		"CI": "true", "GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event",
		"CI_API_V4_URL": apiRoot + "/api/v4", "CI_SERVER_URL": apiRoot,
		"CI_PROJECT_ID": "42", "CI_PROJECT_PATH": "acme/platform/gitops", "CI_PROJECT_URL": "https://gitlab.example.com/acme/platform/gitops",
		"CI_MERGE_REQUEST_IID": "7", "CI_MERGE_REQUEST_PROJECT_ID": "42", "CI_MERGE_REQUEST_PROJECT_PATH": "acme/platform/gitops",
		"CI_MERGE_REQUEST_PROJECT_URL": "https://gitlab.example.com/acme/platform/gitops", "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "42",
		"CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "feature",
		"CI_MERGE_REQUEST_DIFF_BASE_SHA": base, "CI_COMMIT_SHA": head, "CI_COMMIT_REF_NAME": "feature",
		"CI_JOB_URL": "https://gitlab.example.com/acme/platform/gitops/-/jobs/9001", "CI_PIPELINE_URL": "https://gitlab.example.com/acme/platform/gitops/-/pipelines/77",
		"CI_JOB_TOKEN": "glcbt-64_jobTokenThatCannotWriteNotes",
	} {
		t.Setenv(k, v)
	}
}

// TestCommentGitLabCI runs `driftpreview comment` as a GitLab merge request
// pipeline job would, against the fake GitLab: the project access token from
// DRIFTPREVIEW_GITLAB_TOKEN as PRIVATE-TOKEN (never CI_JOB_TOKEN), the sticky note
// and the commit status, the preview's exit code.
func TestCommentGitLabCI(t *testing.T) {
	clearCIEnv(t)
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	srv := gitlabtest.New(t)
	srv.AddProject(42, "acme/platform/gitops")
	gitlabCIEnv(t, srv.URL(), base, head)
	t.Setenv(GitLabTokenVar, srv.Token)
	srv.AddMergeRequest(gitlabtest.MergeRequest{ProjectID: 42, IID: 7, SourceBranch: "feature", TargetBranch: "main", SHA: head, BaseSHA: base, StartSHA: base})
	stale := srv.AddNote(42, 7, srv.BotID, "<!-- driftpreview:sticky v1 page 2 -->\nold")

	code, stdout, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off")
	if code != exitFailing {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitFailing, stderr)
	}
	want := []string{
		"POST /api/v4/projects/42/statuses/" + head,
		"GET /api/v4/projects/42/merge_requests/7", // the current head, before posting
		"GET /api/v4/user",
		"GET /api/v4/projects/42/merge_requests/7/notes",
		"POST /api/v4/projects/42/merge_requests/7/notes",
		"DELETE /api/v4/projects/42/merge_requests/7/notes/" + itoa(stale),
		"GET /api/v4/projects/42/merge_requests/7/notes",
		"POST /api/v4/projects/42/statuses/" + head,
	}
	calls := srv.Calls()
	if diff := cmp.Diff(want, methodPaths(calls)); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	for _, c := range calls {
		if got := c.Header.Get("PRIVATE-TOKEN"); got != srv.Token {
			t.Errorf("%s %s: PRIVATE-TOKEN %q, want the project access token", c.Method, c.Path, got)
		}
		if c.Header.Get("JOB-TOKEN") != "" || strings.Contains(c.Header.Get("Authorization"), "glcbt") {
			t.Errorf("%s %s sent the job token", c.Method, c.Path)
		}
	}
	var first, last map[string]any
	_ = json.Unmarshal([]byte(calls[0].Body), &first)
	_ = json.Unmarshal([]byte(calls[len(calls)-1].Body), &last)
	if first["state"] != "running" || first["name"] != "driftpreview" || first["target_url"] != "https://gitlab.example.com/acme/platform/gitops/-/jobs/9001" {
		t.Errorf("first status body %s", calls[0].Body)
	}
	if last["state"] != "failed" {
		t.Errorf("final status body %s", calls[len(calls)-1].Body)
	}
	notes := srv.Notes(42, 7)
	if len(notes) != 1 || !strings.Contains(notes[0].Body, "<!-- driftpreview:head "+head+" -->") || !strings.Contains(notes[0].Body, "PersistentVolumeClaim") {
		t.Errorf("notes = %+v", notes)
	}
	if strings.Contains(stdout+stderr, srv.Token) || strings.Contains(stdout+stderr, "glcbt-") {
		t.Error("a token was printed")
	}
}

// TestCommentGitLabNoToken: CI_JOB_TOKEN alone cannot write notes; the error names
// the variable to set and prints no token.
func TestCommentGitLabNoToken(t *testing.T) {
	clearCIEnv(t)
	repo := scenarioRepo(t, "15-clean")
	srv := gitlabtest.New(t)
	gitlabCIEnv(t, srv.URL(), revParse(t, repo, "base"), revParse(t, repo, "head"))
	code, stdout, stderr := runCommentCmd(t, "--repo", repo)
	if code != exitError || !strings.Contains(stderr, GitLabTokenVar+" is not set") || !strings.Contains(stderr, "CI_JOB_TOKEN cannot write") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stdout+stderr, "glcbt-") {
		t.Error("the job token was printed")
	}
	if n := len(srv.Calls()); n != 0 {
		t.Errorf("%d calls made", n)
	}
}
