package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// The repo config a CI job names with --config, at base: the default policy,
// under which scenario 09's selector change fails.
const ciConfigBase = `version: 1
targets:
  - name: app
    path: app
    sync: {prune: true, selfHeal: true, manager: kustomize-controller}
policy:
  fail: [immutable-field, data-loss]
`

// The same file as the PR rewrites it: the finding lowered to info, nothing fails.
const ciConfigHead = `version: 1
targets:
  - name: app
    path: app
    sync: {prune: true, selfHeal: true, manager: kustomize-controller}
policy:
  fail: []
  severity: {immutable-field: info}
`

// policyRepo is scenario 09 (a Deployment's selector changes: immutable-field)
// with ci/driftpreview.yaml at base and a PR that rewrites it to let itself pass;
// extra changes the base tree before it is committed. The working tree is head,
// as actions/checkout leaves it.
func policyRepo(t *testing.T, extra func(base string)) string {
	t.Helper()
	trees := map[string]string{}
	for side, cfg := range map[string]string{"base": ciConfigBase, "head": ciConfigHead} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("../../fixtures/scenarios/09-deployment-selector", side))); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(dir, ".driftpreview.yaml")); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, map[string]string{"ci/driftpreview.yaml": cfg})
		trees[side] = dir
	}
	repo := t.TempDir()
	if err := gitfixture.Make(repo, gitfixture.Commit{Tag: "base", Tree: os.DirFS(trees["base"])}); err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		extra(repo)
		gitfixture.Git(t, repo, "add", "-A")
		gitfixture.Git(t, repo, "commit", "-q", "--amend", "--no-edit")
		gitfixture.Git(t, repo, "tag", "-f", "base")
	}
	// Head: the PR's tree over base's (a symlink base made stays a symlink
	// unless the PR's tree replaces it).
	gitfixture.Git(t, repo, "rm", "-r", "-q", "app")
	if err := os.CopyFS(filepath.Join(repo, "app"), os.DirFS(filepath.Join(trees["head"], "app"))); err != nil {
		t.Fatal(err)
	}
	if extra == nil {
		writeFiles(t, repo, map[string]string{"ci/driftpreview.yaml": ciConfigHead})
	}
	gitfixture.Git(t, repo, "add", "-A")
	gitfixture.Git(t, repo, "commit", "-q", "-m", "head")
	gitfixture.Git(t, repo, "tag", "head")
	return repo
}

// TestCommentConfigFromBase: in CI mode a config file named with --config (the
// action's config: input, GitLab's DRIFTPREVIEW_CONFIG) is read from the base
// commit, not from the PR's working tree: a PR that lowers immutable-field to
// info and empties fail in that file still gets exit 1 "Policy blocks", whether
// the path is absolute or relative to the job's directory, on GitHub and GitLab.
// (TestRunPreviewConfigFromDisk: the local CLI reads the developer's own file.)
func TestCommentConfigFromBase(t *testing.T) {
	repo := policyRepo(t, nil)
	base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
	if b, _ := os.ReadFile(filepath.Join(repo, "ci/driftpreview.yaml")); string(b) != ciConfigHead {
		t.Fatalf("the working tree should hold the PR's config, has %q", b)
	}
	hosts := map[string]func(t *testing.T){
		"github": func(t *testing.T) {
			githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", base, head), "http://127.0.0.1:9", "ghs_x")
		},
		"gitlab": func(t *testing.T) {
			gitlabCIEnv(t, "http://127.0.0.1:9", base, head)
			t.Setenv(GitLabTokenVar, "glpat-x")
		},
	}
	for host, setEnv := range hosts {
		for _, how := range []string{"absolute", "relative"} {
			t.Run(host+"/"+how, func(t *testing.T) {
				clearCIEnv(t)
				setEnv(t)
				cfg := filepath.Join(repo, "ci", "driftpreview.yaml")
				if how == "relative" {
					t.Chdir(filepath.Join(repo, "ci"))
					cfg = "driftpreview.yaml"
				}
				code, stdout, stderr := runCommentCmd(t, "--dry-run", "--repo", repo, "--live-mode", "off", "--config", cfg)
				if code != exitFailing || !strings.Contains(stdout, "Policy blocks this merge") || !strings.Contains(stdout, "immutable-field") {
					t.Errorf("exit %d, want %d with Policy blocks; stderr:\n%s\nstdout:\n%s", code, exitFailing, stderr, stdout)
				}
			})
		}
	}
}

// TestCommentConfigSymlinkRefused: in CI mode a config that is a symlink at the
// base commit (git mode 120000), or lies under a symlinked directory, is refused
// with an error naming it, and so is a path outside the repository; nothing is
// previewed.
func TestCommentConfigSymlinkRefused(t *testing.T) {
	cases := map[string]struct {
		extra func(repo string)
		file  string
		want  string
	}{
		"symlinked file": {
			extra: func(repo string) {
				writeFiles(t, repo, map[string]string{"policy/lenient.yaml": ciConfigHead})
				os.Remove(filepath.Join(repo, "ci", "driftpreview.yaml"))
				if err := os.Symlink("../policy/lenient.yaml", filepath.Join(repo, "ci", "driftpreview.yaml")); err != nil {
					t.Fatal(err)
				}
			},
			file: "ci/driftpreview.yaml",
			want: "reading config ci/driftpreview.yaml at the base commit",
		},
		"symlinked directory": {
			extra: func(repo string) {
				if err := os.Symlink("ci", filepath.Join(repo, "conf")); err != nil {
					t.Fatal(err)
				}
			},
			file: "conf/driftpreview.yaml",
			want: "conf is a symlink",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clearCIEnv(t)
			repo := policyRepo(t, tc.extra)
			base, head := revParse(t, repo, "base"), revParse(t, repo, "head")
			if out := gitfixture.Git(t, repo, "ls-tree", base, "--", strings.Split(tc.file, "/")[0]); !strings.Contains(out, "120000") && !strings.Contains(gitfixture.Git(t, repo, "ls-tree", "-r", base, "--", tc.file), "120000") {
				t.Fatalf("fixture: no symlink at base for %s", tc.file)
			}
			githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", base, head), "http://127.0.0.1:9", "ghs_x")
			code, stdout, stderr := runCommentCmd(t, "--dry-run", "--repo", repo, "--live-mode", "off", "--config", filepath.Join(repo, tc.file))
			if code != exitError || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "symlink") {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
			}
			if stdout != "" {
				t.Errorf("previewed anyway:\n%s", stdout)
			}
		})
	}
	t.Run("outside the repository", func(t *testing.T) {
		clearCIEnv(t)
		repo := policyRepo(t, nil)
		outside := filepath.Join(t.TempDir(), "lenient.yaml")
		writeFiles(t, filepath.Dir(outside), map[string]string{"lenient.yaml": ciConfigHead})
		githubActionsEnv(t, "pull_request", eventFile(t, "pull_request.synchronize.json", revParse(t, repo, "base"), revParse(t, repo, "head")), "http://127.0.0.1:9", "ghs_x")
		code, _, stderr := runCommentCmd(t, "--dry-run", "--repo", repo, "--live-mode", "off", "--config", outside)
		if code != exitError || !strings.Contains(stderr, "is outside the repository") {
			t.Errorf("exit %d, want %d; stderr:\n%s", code, exitError, stderr)
		}
	})
}
