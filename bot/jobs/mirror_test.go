package jobs_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot/jobs"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// source makes a repository with two commits and returns its file:// URL and SHAs.
func source(t *testing.T) (string, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	gitfixture.Git(t, filepath.Dir(dir), "init", "-q", "-b", "main", dir)
	gitfixture.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	a := gitfixture.Git(t, dir, "rev-parse", "HEAD")
	gitfixture.Git(t, dir, "commit", "-q", "--allow-empty", "-m", "two")
	return "file://" + dir, a, gitfixture.Git(t, dir, "rev-parse", "HEAD")
}

func TestMirrorFetch(t *testing.T) {
	url, a, b := source(t)
	m := jobs.NewMirror(t.TempDir())
	ctx := context.Background()
	var wg sync.WaitGroup
	dirs := make([]string, 3)
	errs := make([]error, 3)
	for i := range dirs { // concurrent fetches of one repository serialise
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = m.Fetch(ctx, jobs.FetchRequest{Host: "github", Repo: "acme/shop", URL: url, SHAs: []string{a, b}})
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatalf("Fetch %d: %v", i, errs[i])
		}
	}
	want, _ := m.Path("github", "acme/shop")
	if dirs[0] != want || !strings.HasSuffix(want, filepath.Join("github", "acme", "shop.git")) {
		t.Errorf("mirror at %s, want %s", dirs[0], want)
	}
	if got := gitfixture.Git(t, dirs[0], "rev-parse", "--is-bare-repository"); got != "true" {
		t.Errorf("mirror is not bare: %s", got)
	}
	for _, sha := range []string{a, b} {
		if got := gitfixture.Git(t, dirs[0], "cat-file", "-t", sha); got != "commit" {
			t.Errorf("%s is %q in the mirror", sha, got)
		}
	}
	// Nothing credential-like is written to the mirror's config.
	cfg, _ := os.ReadFile(filepath.Join(dirs[0], "config"))
	if strings.Contains(string(cfg), "extraheader") || strings.Contains(string(cfg), "url =") {
		t.Errorf("mirror config holds remote settings:\n%s", cfg)
	}
}

func TestMirrorErrors(t *testing.T) {
	url, a, _ := source(t)
	const token = "ghs_supersecrettoken1234567890"
	var mu sync.Mutex
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "denied for Bearer "+token, http.StatusForbidden)
	}))
	defer srv.Close()
	tests := []struct {
		name string
		req  jobs.FetchRequest
		want string
	}{
		{"path escape", jobs.FetchRequest{Host: "github", Repo: "../etc", URL: url, SHAs: []string{a}}, `mirror path for github/../etc: ".." is not a safe path segment`},
		{"not a sha", jobs.FetchRequest{Host: "github", Repo: "acme/shop", URL: url, SHAs: []string{"main"}}, `fetching acme/shop: "main" is not a full commit SHA`},
		{"missing commit", jobs.FetchRequest{Host: "github", Repo: "acme/shop", URL: url, SHAs: []string{strings.Repeat("d", 40)}}, "fetching dddddddddddddddddddddddddddddddddddddddd from " + url},
		{"credentials stay secret", jobs.FetchRequest{Host: "github", Repo: "acme/other", URL: srv.URL + "/acme/other.git",
			Header: http.Header{"Authorization": {"Bearer " + token}}, SHAs: []string{a}}, "fetching " + a + " from " + srv.URL + "/acme/other.git: git fetch:"},
	}
	m := jobs.NewMirror(t.TempDir())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Fetch(context.Background(), tt.req)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("Fetch error = %v, want prefix %q", err, tt.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gotAuth) == 0 || gotAuth[0] != "Bearer "+token {
		t.Errorf("server saw Authorization %q, want the header from the environment", gotAuth)
	}
}

// A git server that accepts the request and then sends nothing stalls git fetch.
// Cancelling the context must end the fetch promptly: killing git alone left its
// remote helper holding the pipes, and Wait blocked until the HTTP request ended.
// The error names the git subcommand.
func TestMirrorFetchCancelStalledServer(t *testing.T) {
	_, a, _ := source(t)
	release := make(chan struct{})
	started := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		// Answer the headers of a smart-HTTP ref advertisement, then stall.
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	m := jobs.NewMirror(t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.Fetch(ctx, jobs.FetchRequest{Host: "github", Repo: "acme/stall", URL: srv.URL + "/acme/stall.git", SHAs: []string{a}})
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Fetch returned before reaching the server: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("git never reached the stalling server")
	}
	cancel()
	// A hang guard, not a timing benchmark: git is killed at once, 10 s is generous.
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "git fetch") {
			t.Errorf("Fetch error = %v, want context.Canceled naming git fetch", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Fetch did not return within 10 s of its context being cancelled")
	}
}
