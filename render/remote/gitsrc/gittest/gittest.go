// Package gittest serves real git repositories over git's smart HTTP protocol
// for tests: `git http-backend` behind net/http/cgi on an httptest server
// (loopback, plain HTTP), with repositories made by the git binary in temp dirs.
package gittest

import (
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// Server serves the bare repositories under Root.
type Server struct {
	*httptest.Server
	Root string
	// Requests counts the requests served.
	Requests atomic.Int64
	// Delay, when set, is called before each request is served (a slow server).
	Delay func()
	// Rewrite, when set, is called with each request before it is served and
	// may change it: a server that normalises paths, say, as git hosts do.
	Rewrite func(r *http.Request)
}

// Start serves an empty root until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	s := &Server{Root: t.TempDir()}
	h := &cgi.Handler{Path: backend, Stderr: io.Discard, Env: []string{"GIT_PROJECT_ROOT=" + s.Root, "GIT_HTTP_EXPORT_ALL=1"}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		if s.Delay != nil {
			s.Delay()
		}
		if s.Rewrite != nil {
			s.Rewrite(r)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Repo is a working repository whose commits Publish makes visible as
// <server>/<name>.git.
type Repo struct {
	t    testing.TB
	Dir  string
	bare string
	URL  string
}

// NewRepo creates an empty repository name.git on the server.
func (s *Server) NewRepo(t testing.TB, name string) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir(), bare: filepath.Join(s.Root, name+".git"), URL: s.URL + "/" + name + ".git"}
	r.git("init", "-q", "-b", "main", r.Dir)
	r.git("init", "-q", "--bare", "-b", "main", r.bare)
	// GitHub serves any reachable commit by id, so a ref pinned to a commit works.
	r.git("-C", r.bare, "config", "uploadpack.allowAnySHA1InWant", "true")
	return r
}

func (r *Repo) git(args ...string) string {
	r.t.Helper()
	return gitfixture.Git(r.t, "", args...)
}

// Commit replaces the files given (slash path → content; "" deletes), commits,
// tags the commit when tag is not empty, pushes to the server and returns the
// commit id.
func (r *Repo) Commit(files map[string]string, tag string) string {
	r.t.Helper()
	for p, data := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if data == "" {
			_ = os.Remove(full)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("-C", r.Dir, "add", "-A")
	r.git("-C", r.Dir, "commit", "-q", "--allow-empty", "-m", "commit")
	if tag != "" {
		r.git("-C", r.Dir, "tag", tag)
	}
	r.git("-C", r.Dir, "push", "-q", "--tags", r.bare, "main")
	return r.git("-C", r.Dir, "rev-parse", "HEAD")
}
