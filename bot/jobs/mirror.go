package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/driftpreview/driftpreview/bot/internal/keylock"
)

// Mirror keeps one bare git repository per host repository under Dir and fetches
// the commits a job needs into it. Fetches of one repository are serialised, within
// the process by a mutex and across processes sharing Dir by a file lock.
// Credentials reach git only through the environment (GIT_CONFIG_* http.extraHeader),
// never a URL, a file on disk, a log line or an error.
type Mirror struct {
	dir string
	per keylock.Locks
}

// NewMirror returns a Mirror rooted at dir (created on first use).
func NewMirror(dir string) *Mirror {
	return &Mirror{dir: dir}
}

// FetchRequest says what to fetch into which mirror.
type FetchRequest struct {
	// Host and Repo name the mirror: Dir/Host/Repo.git.
	Host, Repo string
	URL        string
	// Header is sent with every request (Authorization); its values are secrets.
	Header http.Header
	// SHAs must all be present afterwards.
	SHAs []string
	// Refs are fetched when fetching the SHAs directly fails (a server that refuses
	// wants of unadvertised commits): the PR's head ref and its base branch.
	Refs []string
}

var segment = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
var shaRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Path is the bare repository of host/repo, or an error for a name that could
// escape Dir.
func (m *Mirror) Path(host, repo string) (string, error) {
	parts := append([]string{host}, strings.Split(repo, "/")...)
	for _, p := range parts {
		if !segment.MatchString(p) {
			return "", fmt.Errorf("mirror path for %s/%s: %q is not a safe path segment", host, repo, p)
		}
	}
	parts[len(parts)-1] += ".git"
	return filepath.Join(append([]string{m.dir}, parts...)...), nil
}

// Fetch makes sure every SHA of req is in the mirror and returns the mirror's path.
func (m *Mirror) Fetch(ctx context.Context, req FetchRequest) (string, error) {
	repoDir, err := m.Path(req.Host, req.Repo)
	if err != nil {
		return "", err
	}
	for _, s := range req.SHAs {
		if !shaRE.MatchString(s) {
			return "", fmt.Errorf("fetching %s: %q is not a full commit SHA", req.Repo, s)
		}
	}
	unlock, err := m.lock(repoDir)
	if err != nil {
		return "", err
	}
	defer unlock()

	g := gitRunner{dir: repoDir, header: req.Header}
	if err := g.init(ctx, req.Repo); err != nil {
		return "", err
	}
	missing := g.missing(ctx, req.SHAs)
	if len(missing) == 0 {
		return repoDir, nil
	}
	safeURL := redactURL(req.URL)
	args := append([]string{"-c", "gc.auto=0", "fetch", "--no-tags", "--quiet", "--", req.URL}, missing...)
	_, shaErr := g.run(ctx, args...)
	if shaErr != nil && len(req.Refs) > 0 {
		refspecs := make([]string, 0, len(req.Refs))
		for _, r := range req.Refs {
			refspecs = append(refspecs, "+"+r+":refs/driftpreview/"+strings.TrimPrefix(r, "refs/"))
		}
		args := append([]string{"-c", "gc.auto=0", "fetch", "--no-tags", "--quiet", "--", req.URL}, refspecs...)
		if _, err := g.run(ctx, args...); err != nil {
			return "", fmt.Errorf("fetching %s from %s: %w", strings.Join(req.Refs, ", "), safeURL, errors.Join(shaErr, err))
		}
	}
	if still := g.missing(ctx, req.SHAs); len(still) > 0 {
		if shaErr != nil {
			return "", fmt.Errorf("fetching %s from %s: %w", strings.Join(still, ", "), safeURL, shaErr)
		}
		return "", fmt.Errorf("fetching from %s: commits %s not found after fetch", safeURL, strings.Join(still, ", "))
	}
	return repoDir, nil
}

// lock takes the in-process and the cross-process lock of one mirror.
func (m *Mirror) lock(repoDir string) (func(), error) {
	mu := m.per.For(repoDir)
	mu.Lock()
	if err := os.MkdirAll(filepath.Dir(repoDir), 0o750); err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("creating mirror directory: %w", err)
	}
	f, err := os.OpenFile(repoDir+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("locking mirror: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		mu.Unlock()
		return nil, fmt.Errorf("locking mirror: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
		mu.Unlock()
	}, nil
}

// init creates the bare mirror of repo when it does not exist yet.
func (g gitRunner) init(ctx context.Context, repo string) error {
	if _, err := os.Stat(filepath.Join(g.dir, "HEAD")); err == nil {
		return nil
	}
	if _, err := g.run(ctx, "init", "--bare", "--quiet", g.dir); err != nil {
		return fmt.Errorf("creating mirror of %s: %w", repo, err)
	}
	return nil
}

// gitRunner runs git with credentials in the environment only.
type gitRunner struct {
	dir    string
	header http.Header
}

func (g gitRunner) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_CONFIG_") || strings.HasPrefix(kv, "GIT_TERMINAL_PROMPT=") || strings.HasPrefix(kv, "GIT_ASKPASS=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "GIT_CONFIG_NOSYSTEM=1")
	n := 0
	for _, name := range slices.Sorted(mapKeys(g.header)) {
		for _, v := range g.header[name] {
			env = append(env,
				"GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=http.extraHeader",
				"GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+name+": "+v)
			n++
		}
	}
	// Disable credential helpers so git never prompts or stores anything.
	env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"=credential.helper", "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"=")
	n++
	return append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
}

// Bounds on a git command that stops making progress. git's own low-speed limit
// (http.lowSpeedLimit/lowSpeedTime, curl's CURLOPT_LOW_SPEED_*) ends a transfer
// slower than lowSpeedLimit bytes/s for lowSpeedTime seconds; waitDelay bounds how
// long Wait waits for git's pipes after git was killed.
const (
	lowSpeedLimit = "1000"
	lowSpeedTime  = "30"
	waitDelay     = 5 * time.Second
)

func (g gitRunner) run(ctx context.Context, args ...string) ([]byte, error) {
	full := args
	if args[0] != "init" {
		full = append([]string{"--git-dir", g.dir}, args...)
	}
	full = append([]string{"-c", "http.lowSpeedLimit=" + lowSpeedLimit, "-c", "http.lowSpeedTime=" + lowSpeedTime}, full...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = g.env()
	// git fetch runs its transport (git-remote-http) as a child that holds the
	// output pipes: killing only git would leave Wait blocked until the transfer
	// ends. git runs in a process group of its own, and cancelling kills the group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := g.redact(strings.TrimSpace(stderr.String()))
		if len(msg) > 2000 {
			msg = msg[:2000] + "…"
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", firstArgs(args), ctx.Err())
		}
		return nil, fmt.Errorf("git %s: %s (%v)", firstArgs(args), msg, err)
	}
	return stdout.Bytes(), nil
}

// firstArgs names a git command without its URL or refs.
func firstArgs(args []string) string {
	for i, a := range args {
		if a == "-c" {
			continue
		}
		if i > 0 && args[i-1] == "-c" {
			continue
		}
		return a
	}
	return ""
}

// redact removes header values and URL user info from git's output.
func (g gitRunner) redact(s string) string {
	for _, vs := range g.header {
		for _, v := range vs {
			for _, part := range strings.Fields(v) {
				if len(part) >= 8 {
					s = strings.ReplaceAll(s, part, "[redacted]")
				}
			}
		}
	}
	return userinfo.ReplaceAllString(s, "${1}[redacted]@")
}

var userinfo = regexp.MustCompile(`([a-z][a-z0-9+.-]*://)[^/@\s]+@`)

// missing returns the SHAs not yet in the mirror as commits.
func (g gitRunner) missing(ctx context.Context, shas []string) []string {
	var out []string
	for _, s := range shas {
		if _, err := g.run(ctx, "cat-file", "-e", s+"^{commit}"); err != nil {
			out = append(out, s)
		}
	}
	return out
}

// redactURL drops user info and query from a URL for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	u.RawQuery = ""
	return u.String()
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
