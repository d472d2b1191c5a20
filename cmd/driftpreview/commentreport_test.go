package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommentReportFile: --report-file writes the full report page and the comment
// links where a reader finds it: on GitLab the job's artifact file, on GitHub the
// run whose artifacts hold it.
func TestCommentReportFile(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	check := func(t *testing.T, page, stdout, link string) {
		t.Helper()
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatalf("the report page was not written: %v", err)
		}
		if !strings.HasPrefix(string(b), "<!DOCTYPE html>") || !strings.Contains(string(b), "PersistentVolumeClaim") || !strings.Contains(string(b), "prune-stateful") {
			t.Errorf("the report page lacks the finding:\n%.3000s", b)
		}
		if !strings.Contains(stdout, link) {
			t.Errorf("the comment does not link %q:\n%.3000s", link, stdout)
		}
	}
	t.Run("gitlab", func(t *testing.T) {
		clearCIEnv(t)
		gitlabCIEnv(t, "https://gitlab.example.com/api/v4", base, head)
		t.Setenv(GitLabTokenVar, "glpat-not-used-in-a-dry-run")
		dir := t.TempDir()
		t.Setenv("CI_PROJECT_DIR", dir)
		page := filepath.Join(dir, "out", "driftpreview report.html")
		if err := os.Mkdir(filepath.Dir(page), 0o755); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCommentCmd(t, "--repo", repo, "--live-mode", "off", "--dry-run", "--report-file", page)
		if code != exitFailing {
			t.Fatalf("exit %d; stderr:\n%s", code, stderr)
		}
		check(t, page, stdout, "📄 **[Full report](https://gitlab.example.com/acme/platform/gitops/-/jobs/9001/artifacts/file/out/driftpreview%20report.html)**")
	})
	// GitHub: the run's artifacts, or the URL --report-url names.
	for name, tc := range map[string]struct {
		extra []string
		link  string
	}{
		"github":     {nil, "download it from [this run's artifacts](https://github.com/acme/gitops/actions/runs/7014392841)"},
		"report-url": {[]string{"--report-url", "https://reports.example.com/pr-17.html"}, "📄 **[Full report](https://reports.example.com/pr-17.html)**"},
	} {
		t.Run(name, func(t *testing.T) {
			clearCIEnv(t)
			githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", base, head), "https://api.github.example", "ghs_not-used-in-a-dry-run")
			page := filepath.Join(t.TempDir(), "driftpreview-report.html")
			args := append([]string{"--repo", repo, "--live-mode", "off", "--dry-run", "--report-file", page}, tc.extra...)
			code, stdout, stderr := runCommentCmd(t, args...)
			if code != exitFailing {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			check(t, page, stdout, tc.link)
		})
	}
}

func TestReportLinkForGitLabOutsideProject(t *testing.T) {
	env := map[string]string{"CI_JOB_URL": "https://gitlab.example.com/g/p/-/jobs/1", "CI_PROJECT_DIR": "/builds/g/p"}
	for path, want := range map[string]string{
		"/builds/g/p/report.html": "https://gitlab.example.com/g/p/-/jobs/1/artifacts/file/report.html",
		"report.html":             "https://gitlab.example.com/g/p/-/jobs/1/artifacts/file/report.html",
		"/tmp/report.html":        "", // GitLab keeps no artifact from outside the project dir
		"../report.html":          "",
	} {
		got, _ := reportLinkFor(&ciEnv{host: "gitlab"}, path, func(k string) string { return env[k] })
		if got != want {
			t.Errorf("reportLinkFor(%q) = %q, want %q", path, got, want)
		}
	}
}
