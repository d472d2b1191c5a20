package deploy_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// action is the part of action.yml's metadata syntax this project uses.
type action struct {
	Name   string `yaml:"name"`
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			Name             string            `yaml:"name"`
			Shell            string            `yaml:"shell"`
			Run              string            `yaml:"run"`
			Env              map[string]string `yaml:"env"`
			WorkingDirectory string            `yaml:"working-directory"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

func loadAction(t *testing.T) action {
	t.Helper()
	b, err := os.ReadFile("../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a action
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// fakeBin makes a directory holding an executable script name.
func fakeBin(t *testing.T, name, script string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestActionMetadata: a composite action with the documented inputs, whose steps
// pass inputs as environment variables and never interpolate them into a script.
func TestActionMetadata(t *testing.T) {
	a := loadAction(t)
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using %q, want composite", a.Runs.Using)
	}
	for _, in := range []string{"kubeconfig", "live-mode", "config", "targets", "version", "install", "token"} {
		if _, ok := a.Inputs[in]; !ok {
			t.Errorf("action.yml has no input %q", in)
		}
	}
	if d := a.Inputs["live-mode"].Default; d != "simulate" {
		t.Errorf("live-mode defaults to %q", d)
	}
	if len(a.Runs.Steps) == 0 {
		t.Fatal("no steps")
	}
	for _, s := range a.Runs.Steps {
		if s.Shell != "bash" {
			t.Errorf("step %q: shell %q (composite steps must name one)", s.Name, s.Shell)
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q interpolates an expression into its script (script injection): %s", s.Name, s.Run)
		}
		script := strings.TrimSpace(strings.Trim(strings.TrimSpace(s.Run), `"`))
		script = strings.Replace(script, "$GITHUB_ACTION_PATH/", "../", 1)
		if fi, err := os.Stat(script); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("step %q runs %s, which is not an executable file of the repository: %v", s.Name, s.Run, err)
		}
	}
}

// TestActionRun runs the action's run step with a stand-in driftpreview: the
// inputs become flags, the kubeconfig is a file only the user can read and is gone
// afterwards, and driftpreview's exit code is the step's.
func TestActionRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "args")
	bin := fakeBin(t, "driftpreview", `for a in "$@"; do echo "$a"; done > `+out+`
kc=$(echo "$@" | sed -n 's/.*--kubeconfig \([^ ]*\).*/\1/p')
stat -c %a "$kc" >> `+out+`
cat "$kc" >> `+out+`
echo "GITHUB_TOKEN=$GITHUB_TOKEN" >> `+out+`
exit 1
`)
	runner := t.TempDir()
	cmd := exec.Command("../deploy/github-action/run.sh")
	cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "RUNNER_TEMP="+runner,
		"GITHUB_TOKEN=ghs_x", "DP_KUBECONFIG=apiVersion: v1\nkind: Config", "DP_CONTEXT=prod", "DP_LIVE_MODE=dry-run",
		"DP_CONFIG=ci/driftpreview.yaml", "DP_TARGETS=apps\nweb@prod", "DP_ARGS=--check-name preview")
	b, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("run.sh: %v, want driftpreview's exit 1\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	kc := lines[slices.Index(lines, "--kubeconfig")+1]
	want := []string{"comment", "--live-mode", "dry-run", "--report-file", "driftpreview-report.html", "--kubeconfig", kc, "--context", "prod", "--config", "ci/driftpreview.yaml",
		"--target", "apps", "--target", "web@prod", "--check-name", "preview", "600", "apiVersion: v1", "kind: Config", "GITHUB_TOKEN=ghs_x"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("driftpreview saw (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(kc, runner+"/") {
		t.Errorf("kubeconfig %s is not under RUNNER_TEMP", kc)
	}
	if _, err := os.Stat(kc); !os.IsNotExist(err) {
		t.Errorf("the kubeconfig file is left behind: %v", err)
	}
	if strings.Contains(string(b), "kind: Config") {
		t.Errorf("the kubeconfig was printed:\n%s", b)
	}
}

// TestActionInstall runs the install step against a stand-in release server: the
// archive named as .goreleaser.yaml names it for the runner, checked against
// checksums.txt, installed on GITHUB_PATH; a wrong checksum fails the step.
func TestActionInstall(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	tw := tar.NewWriter(zw)
	exe := []byte("#!/bin/sh\necho 'driftpreview v0.4.0'\n")
	for name, body := range map[string][]byte{"driftpreview": exe, "README.md": []byte("readme")} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body))})
		_, _ = tw.Write(body)
	}
	_ = tw.Close()
	_ = zw.Close()
	archive := "driftpreview_0.4.0_linux_arm64.tar.gz"
	sum := sha256.Sum256(gz.Bytes())
	checksums := hex.EncodeToString(sum[:]) + "  " + archive + "\n" + strings.Repeat("0", 64) + "  driftpreview_0.4.0_darwin_amd64.tar.gz\n"
	var requested []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested = append(requested, r.URL.Path)
		switch r.URL.Path {
		case "/v0.4.0/" + archive:
			_, _ = w.Write(gz.Bytes())
		case "/v0.4.0/checksums.txt":
			_, _ = w.Write([]byte(checksums))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	install := func(extra ...string) (string, string, error) {
		runner := t.TempDir()
		path := filepath.Join(runner, "github_path")
		cmd := exec.Command("../deploy/github-action/install.sh")
		cmd.Env = append(os.Environ(), append([]string{"RUNNER_TEMP=" + runner, "GITHUB_PATH=" + path,
			"RUNNER_OS=Linux", "RUNNER_ARCH=ARM64", "DP_RELEASE_URL=" + srv.URL, "DP_ACTION_REF=main"}, extra...)...)
		out, err := cmd.CombinedOutput()
		p, _ := os.ReadFile(path)
		return string(out), string(p), err
	}
	out, ghPath, err := install("DP_VERSION=v0.4.0")
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	if !strings.Contains(out, "driftpreview v0.4.0") || !strings.HasSuffix(strings.TrimSpace(ghPath), "/driftpreview/bin") {
		t.Errorf("output %q, GITHUB_PATH %q", out, ghPath)
	}
	if !slices.Contains(requested, "/v0.4.0/"+archive) {
		t.Errorf("requested %v", requested)
	}
	// The action used at a version tag installs that version.
	if out, _, err := install("DP_ACTION_REF=v0.4.0"); err != nil {
		t.Errorf("install at @v0.4.0: %v\n%s", err, out)
	}
	checksums = strings.Repeat("f", 64) + "  " + archive + "\n"
	if out, _, err := install("DP_VERSION=v0.4.0"); err == nil || !strings.Contains(out, "checksum") {
		t.Errorf("a wrong checksum installed: %v\n%s", err, out)
	}
	var g goreleaser
	b, _ := os.ReadFile("../.goreleaser.yaml")
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if nt := g.Archives[0].NameTemplate; nt != "{{ .ProjectName }}_{{ .Version }}_{{ .Os }}_{{ .Arch }}" {
		t.Errorf("release archives are named %q; install.sh downloads driftpreview_VERSION_OS_ARCH.tar.gz", nt)
	}
}

// gitlabCI is the part of GitLab's CI/CD YAML syntax the template uses.
type gitlabCI struct {
	Variables    map[string]string `yaml:"variables"`
	Driftpreview struct {
		Stage         string `yaml:"stage"`
		Interruptible bool   `yaml:"interruptible"`
		Image         struct {
			Name       string   `yaml:"name"`
			Entrypoint []string `yaml:"entrypoint"`
		} `yaml:"image"`
		Variables map[string]string `yaml:"variables"`
		Rules     []struct {
			If string `yaml:"if"`
		} `yaml:"rules"`
		Script    []string `yaml:"script"`
		Artifacts struct {
			When     string   `yaml:"when"`
			ExposeAs string   `yaml:"expose_as"`
			Paths    []string `yaml:"paths"`
			ExpireIn string   `yaml:"expire_in"`
		} `yaml:"artifacts"`
	} `yaml:"driftpreview"`
}

// TestGitLabTemplate checks deploy/gitlab-ci.yml and runs its script with a
// stand-in driftpreview and git: merge request pipelines only, a full clone, the
// released image the chart uses, and the variables become flags.
func TestGitLabTemplate(t *testing.T) {
	b, err := os.ReadFile("gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var ci gitlabCI
	if err := dec.Decode(&ci); err != nil {
		t.Fatalf("gitlab-ci.yml: %v", err)
	}
	j := ci.Driftpreview
	if len(j.Rules) != 1 || j.Rules[0].If != `$CI_PIPELINE_SOURCE == "merge_request_event"` {
		t.Errorf("rules %+v, want merge request pipelines", j.Rules)
	}
	if !j.Interruptible {
		t.Error("the job is not interruptible: a push would not cancel the job of the commit before it")
	}
	if j.Variables["GIT_DEPTH"] != "0" {
		t.Errorf("GIT_DEPTH %q, want 0 (base and head in the clone)", j.Variables["GIT_DEPTH"])
	}
	if !slices.Equal(j.Image.Entrypoint, []string{""}) {
		t.Errorf("entrypoint %q: the image's entrypoint is driftpreview, the job needs a shell", j.Image.Entrypoint)
	}
	var v struct {
		Image struct {
			Repository string `yaml:"repository"`
		} `yaml:"image"`
	}
	values, _ := os.ReadFile("chart/driftpreview/values.yaml")
	_ = yaml.Unmarshal(values, &v)
	if j.Image.Name != v.Image.Repository+":${DRIFTPREVIEW_VERSION}" {
		t.Errorf("image %q, want the chart's %s at DRIFTPREVIEW_VERSION", j.Image.Name, v.Image.Repository)
	}
	if len(j.Script) != 1 {
		t.Fatalf("script %q", j.Script)
	}
	out := filepath.Join(t.TempDir(), "args")
	bin := fakeBin(t, "driftpreview", `for a in "$@"; do echo "$a"; done > `+out+"\necho \"KUBECONFIG=$KUBECONFIG\" >> "+out+"\nexit 1\n")
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"git $*\" >> "+out+".git\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(env ...string) []string {
		t.Helper()
		cmd := exec.Command("sh", "-c", j.Script[0])
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "CI_PROJECT_DIR=/builds/acme/gitops", "KUBECONFIG=/home/runner/.kube/config"}
		for k, val := range ci.Variables {
			cmd.Env = append(cmd.Env, k+"="+val)
		}
		cmd.Env = append(cmd.Env, env...)
		b, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("script: %v, want driftpreview's exit 1\n%s", err, b)
		}
		got, _ := os.ReadFile(out)
		return strings.Split(strings.TrimSpace(string(got)), "\n")
	}
	// The report page the job writes is its artifact, kept when findings fail it.
	if a := j.Artifacts; a.When != "always" || !slices.Equal(a.Paths, []string{"driftpreview-report.html"}) || a.ExposeAs == "" {
		t.Errorf("artifacts %+v, want driftpreview-report.html kept always and exposed on the merge request", a)
	}
	if diff := cmp.Diff([]string{"comment", "--live-mode", "simulate", "--report-file", "driftpreview-report.html", "KUBECONFIG="}, run()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	got := run("DRIFTPREVIEW_KUBECONFIG=/builds/tmp/KUBECONFIG", "DRIFTPREVIEW_LIVE_MODE=dry-run",
		"DRIFTPREVIEW_CONFIG=ci.yaml", "DRIFTPREVIEW_TARGETS=apps web@prod", "DRIFTPREVIEW_ARGS=--check-name preview")
	want := []string{"comment", "--live-mode", "dry-run", "--report-file", "driftpreview-report.html", "--kubeconfig", "/builds/tmp/KUBECONFIG", "--config", "ci.yaml",
		"--target", "apps", "--target", "web@prod", "--check-name", "preview", "KUBECONFIG=/home/runner/.kube/config"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with variables (-want +got):\n%s", diff)
	}
	if g, _ := os.ReadFile(out + ".git"); !strings.Contains(string(g), "config --global --add safe.directory /builds/acme/gitops") {
		t.Errorf("git calls: %s", g)
	}
}

// TestREADMEWorkflowCancelsSuperseded: the README's GitHub workflow has a
// concurrency group per pull request that cancels the run in progress, so a push
// cancels the job of the commit before it.
func TestREADMEWorkflowCancelsSuperseded(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "`.github/workflows/driftpreview.yaml`:\n\n```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no .github/workflows/driftpreview.yaml block")
	}
	var wf struct {
		Concurrency struct {
			Group            string `yaml:"group"`
			CancelInProgress bool   `yaml:"cancel-in-progress"`
		} `yaml:"concurrency"`
	}
	if err := yaml.Unmarshal([]byte(block), &wf); err != nil {
		t.Fatalf("the README's workflow: %v", err)
	}
	if !wf.Concurrency.CancelInProgress || !strings.Contains(wf.Concurrency.Group, "github.event.pull_request.number") {
		t.Errorf("the README's workflow concurrency = %+v, want a group per pull request with cancel-in-progress", wf.Concurrency)
	}
}
