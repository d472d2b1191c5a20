package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

func scenarioRepo(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join("../../fixtures/scenarios", name)
	return gitfixture.BaseHead(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
}

// unreachableKubeconfig points at a port nothing listens on.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	writeFiles(t, filepath.Dir(p), map[string]string{"kubeconfig": `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: prod, context: {cluster: c, user: u}}]
current-context: prod
`})
	return p
}

type jsonReport struct {
	Failing  bool `json:"failing"`
	Findings []struct {
		Rule string `json:"rule"`
	} `json:"findings"`
	Targets []struct {
		Name        string `json:"name"`
		LiveChecked bool   `json:"liveChecked"`
		Findings    []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			Key      struct {
				Kind, Name string
			} `json:"key"`
			Path    string `json:"path"`
			Manager string `json:"manager"`
			// Failing is a pointer to check that JSON always has it.
			Failing     *bool `json:"failing"`
			PreExisting bool  `json:"preExisting"`
		} `json:"findings"`
		Changes []struct {
			Action string `json:"action"`
		} `json:"changes"`
	} `json:"targets"`
}

func (r jsonReport) rules() []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Rule)
	}
	for _, t := range r.Targets {
		for _, f := range t.Findings {
			s := f.Rule + " " + f.Key.Kind + "/" + f.Key.Name
			switch {
			case f.Failing == nil:
				s += " (no failing key)"
			case *f.Failing:
				s += " failing"
			}
			if f.PreExisting {
				s += " pre-existing"
			}
			out = append(out, s)
		}
	}
	return out
}

// TestRunPreview checks the CLI contract: exit codes, formats and flags.
func TestRunPreview(t *testing.T) {
	clean := scenarioRepo(t, "15-clean")
	dataLoss := scenarioRepo(t, "04-pvc-data-loss")
	badConfig := scenarioRepo(t, "12-bad-config")
	renderFailure := scenarioRepo(t, "13-render-failure")
	preExisting := scenarioRepo(t, "16-preexisting-render-error")
	nothing := scenarioRepo(t, "17-nothing-rendered")
	unreachable := unreachableKubeconfig(t)
	t.Setenv("KUBECONFIG", "")

	tests := []struct {
		name       string
		args       []string
		code       int
		rules      []string // for --format json
		stdout     string   // substring, for markdown
		stderr     string
		liveStatus bool
	}{
		{name: "clean PR, no cluster", args: []string{"--repo", clean, "--base", "base", "--head", "head"},
			code: exitOK, stdout: "No live comparison"},
		{name: "clean PR as JSON", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--format", "json"},
			code: exitOK, rules: nil},
		{name: "pruned PVC as the HTML page", args: []string{"--repo", dataLoss, "--base", "base", "--head", "head", "--live-mode", "off", "--format", "html"},
			code: exitFailing, stdout: "<code>prune-stateful</code>"},
		{name: "pruned PVC fails the policy", args: []string{"--repo", dataLoss, "--base", "base", "--head", "head", "--live-mode", "off", "--format", "json"},
			code: exitFailing, rules: []string{"prune-stateful PersistentVolumeClaim/cache failing"}},
		// The cluster being down is not the PR's doing: reported, not failing.
		// 15-clean's PR touches no file of its target: --all-targets compares it
		// all the same, with the live cluster.
		{name: "unreachable cluster is live-unavailable", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--kubeconfig", unreachable, "--format", "json", "--all-targets"},
			code: exitOK, rules: []string{"live-unavailable / pre-existing"}},
		{name: "a render error the PR introduces fails", args: []string{"--repo", renderFailure, "--base", "base", "--head", "head", "--live-mode", "off", "--format", "json"},
			code: exitFailing, rules: []string{"render-error / failing"}},
		{name: "a render error at base and head is pre-existing", args: []string{"--repo", preExisting, "--base", "base", "--head", "head", "--live-mode", "off", "--format", "json", "--all-targets"},
			code: exitOK, rules: []string{"render-error / pre-existing"}},
		{name: "nothing rendered says so and exits 0", args: []string{"--repo", nothing, "--base", "base", "--head", "head", "--live-mode", "off"},
			code: exitOK, stdout: "nothing compared: 1 target not rendered"},
		{name: "live mode off ignores the kubeconfig", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--kubeconfig", unreachable, "--live-mode", "off", "--all-targets"},
			code: exitOK, stdout: "live mode is off"},
		{name: "bad config still prints the report, exits 2", args: []string{"--repo", badConfig, "--base", "base", "--head", "head", "--format", "json"},
			code: exitError, rules: []string{"config-error", "config-error"}, stderr: ".driftpreview.yaml:7: ignore[0].reason"},
		{name: "an untouched target is not affected", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--kubeconfig", unreachable},
			code: exitOK, stdout: "1 target not affected by this PR**: not rendered, none of the files it is rendered from changes."},
		{name: "target filter", args: []string{"--repo", dataLoss, "--base", "base", "--head", "head", "--target", "nope"},
			code: exitError, stderr: `no target named "nope"`},
		{name: "missing head", args: []string{"--repo", clean, "--base", "base"}, code: exitError, stderr: "--base and --head are required"},
		{name: "bad format", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--format", "xml"}, code: exitError, stderr: "--format must be text, markdown, json or html"},
		{name: "bad live mode", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--live-mode", "apply"}, code: exitError, stderr: "--live-mode must be"},
		{name: "unknown ref", args: []string{"--repo", clean, "--base", "nope", "--head", "head"}, code: exitError, stderr: `resolving "nope"`},
		{name: "not a repository", args: []string{"--repo", t.TempDir(), "--base", "a", "--head", "b"}, code: exitError, stderr: "not a git repository"},
		{name: "missing kubeconfig", args: []string{"--repo", clean, "--base", "base", "--head", "head", "--kubeconfig", "/nonexistent/kubeconfig"}, code: exitError, stderr: "loading kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"preview"}, tt.args...), &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d\nstderr: %s\nstdout: %.2000s", code, tt.code, stderr.String(), stdout.String())
			}
			if tt.stderr != "" && !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tt.stderr)
			}
			if tt.stdout != "" && !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout does not say %q:\n%s", tt.stdout, stdout.String())
			}
			if slices.Contains(tt.args, "json") {
				var rep jsonReport
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
					t.Fatalf("--format json is not JSON: %v\n%s", err, stdout.String())
				}
				if diff := cmp.Diff(tt.rules, rep.rules()); diff != "" {
					t.Errorf("findings (-want +got):\n%s", diff)
				}
				if rep.Failing != (tt.code == exitFailing) {
					t.Errorf("failing = %v with exit code %d", rep.Failing, code)
				}
			}
			if strings.Contains(stdout.String()+stderr.String(), "not-a-real-token") {
				t.Errorf("the kubeconfig token leaked into the output")
			}
		})
	}
}

// TestRunPreviewLeavesWorkTreeAlone checks that preview reads commits without
// touching the checkout it runs in.
func TestRunPreviewLeavesWorkTreeAlone(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	marker := filepath.Join(repo, "uncommitted.txt")
	if err := os.WriteFile(marker, []byte("work in progress"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(repo)
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off"}, &stdout, &stderr); code != exitFailing {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	after, _ := os.ReadDir(repo)
	if len(before) != len(after) {
		t.Errorf("the work tree changed: %v → %v", before, after)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "work in progress" {
		t.Errorf("uncommitted file changed: %q %v", b, err)
	}
}

// TestRunPreviewRepoURL: --repo-url tells discovery which Argo CD sources are this
// repository when the checkout has no origin remote.
func TestRunPreviewRepoURL(t *testing.T) {
	repo := gitfixture.BaseHead(t, "../../fixtures/repos/argocd", "../../fixtures/repos/argocd")
	for _, tt := range []struct {
		args     []string
		wantNote bool
	}{
		{nil, true},
		{[]string{"--repo-url", "https://github.com/example/gitops-argocd"}, false},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--format", "json"}, tt.args...)
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
			t.Fatalf("%v: exit %d: %s", tt.args, code, stderr.String())
		}
		if got := strings.Contains(stdout.String(), "no repository URL is known"); got != tt.wantNote {
			t.Errorf("%v: note about the unknown repository URL present = %v, want %v", tt.args, got, tt.wantNote)
		}
		if !strings.Contains(stdout.String(), `"name": "shop"`) {
			t.Errorf("%v: the shop Application was not discovered:\n%.3000s", tt.args, stdout.String())
		}
	}
}

// TestRunPreviewRenderCache: preview keeps renders on disk under the user cache
// dir ($XDG_CACHE_HOME/driftpreview/renders), or --cache-dir, and none with
// --cache-dir off; a second run gives the same report.
func TestRunPreviewRenderCache(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	t.Setenv("KUBECONFIG", "")
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	entries := func(dir string) int {
		es, _ := filepath.Glob(filepath.Join(dir, "objects", "*"))
		return len(es)
	}
	run := func(extra ...string) string {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--repo", repo, "--base", "base", "--head", "head", "--format", "json", "--all-targets"}, extra...)
		if code := runPreview(context.Background(), args, &stdout, &stderr); code != exitFailing {
			t.Fatalf("exit %d, want %d: %s", code, exitFailing, stderr.String())
		}
		return regexp.MustCompile(`"generatedAt": "[^"]*"`).ReplaceAllString(stdout.String(), "")
	}
	def := filepath.Join(xdg, "driftpreview", "renders")
	first := run()
	if entries(def) == 0 {
		t.Fatalf("no render kept under %s", def)
	}
	if again := run(); again != first {
		t.Errorf("the second run's report differs:\n%s\nwant\n%s", again, first)
	}
	own := filepath.Join(t.TempDir(), "renders")
	run("--cache-dir", own)
	if entries(own) == 0 {
		t.Errorf("no render kept under --cache-dir %s", own)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	run("--cache-dir", "off")
	// The remote sources' cache (--remote-cache, default driftpreview/remote)
	// is another one, opened by the default remote mode (public).
	if es, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "*", "*")); len(es) != 1 || filepath.Base(es[0]) != "remote" {
		t.Errorf("--cache-dir off wrote %v (want only the remote cache, driftpreview/remote)", es)
	}
}

// TestRunPreviewCheckoutDir: --checkout-dir is where base and head are checked
// out: a directory there is used (and left empty), a path that cannot hold a
// directory fails the run naming it.
func TestRunPreviewCheckoutDir(t *testing.T) {
	repo := scenarioRepo(t, "04-pvc-data-loss")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	run := func(dir string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := []string{"--repo", repo, "--base", "base", "--head", "head", "--format", "json", "--checkout-dir", dir}
		return runPreview(context.Background(), args, &stdout, &stderr), stderr.String()
	}
	own := t.TempDir()
	if code, stderr := run(own); code != exitFailing {
		t.Fatalf("exit %d, want %d: %s", code, exitFailing, stderr)
	}
	if es, _ := os.ReadDir(own); len(es) != 0 {
		t.Errorf("left behind under --checkout-dir: %v", es)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stderr := run(file); code != exitError || !strings.Contains(stderr, file) {
		t.Errorf("--checkout-dir FILE: exit %d, %s; want %d and an error naming %s", code, stderr, exitError, file)
	}
}

// TestRunPreviewConfigFromDisk: the local preview CLI reads --config from disk,
// the developer's own file (here the working tree's, which lets the change pass),
// unlike CI mode (TestCommentConfigFromBase). It sits after gc_test.go's
// TestTuneGC, which needs to be the first to tune the GC.
func TestRunPreviewConfigFromDisk(t *testing.T) {
	repo := policyRepo(t, nil)
	var stdout, stderr strings.Builder
	code := run(t.Context(), []string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off",
		"--cache-dir", "off", "--config", filepath.Join(repo, "ci", "driftpreview.yaml")}, &stdout, &stderr)
	if code != exitOK || !strings.Contains(stdout.String(), "Safe to merge") {
		t.Errorf("exit %d, want %d (the developer's own file); stderr:\n%s", code, exitOK, stderr.String())
	}
}
