package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// fakeHost is a hand-written host adapter. A delivery is the JSON of a bot.Event,
// authenticated by the header X-Fake-Token: good.
type fakeHost struct {
	name     string
	cloneURL string

	mu       sync.Mutex
	statuses []statusCall
	comments []commentCall
	writers  map[string]bool
	resolved bot.PR
	// failStatus makes the next n SetStatus calls fail.
	failStatus int
}

type statusCall struct {
	SHA    string
	Status bot.Status
}

type commentCall struct {
	PR    int
	SHA   string
	Key   string
	Pages []string
}

func newFakeHost(name, cloneURL string) *fakeHost {
	return &fakeHost{name: name, cloneURL: cloneURL, writers: map[string]bool{}}
}

func (f *fakeHost) ParseWebhook(h http.Header, body []byte) (bot.Event, error) {
	if h.Get("X-Fake-Token") != "good" {
		return bot.Event{}, fmt.Errorf("verifying fake webhook: %w", bot.ErrUnauthorized)
	}
	var ev bot.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return bot.Event{}, fmt.Errorf("decoding fake webhook: %w", err)
	}
	return ev, nil
}

func (f *fakeHost) ResolvePR(_ context.Context, pr bot.PR) (bot.PR, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.resolved
	out.Host, out.Repo, out.Number = pr.Host, pr.Repo, pr.Number
	return out, nil
}

func (f *fakeHost) CanRerun(_ context.Context, _ bot.PR, user string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writers[user], nil
}

func (f *fakeHost) UpsertComment(_ context.Context, pr bot.PR, key string, pages []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments = append(f.comments, commentCall{PR: pr.Number, SHA: pr.HeadSHA, Key: key, Pages: pages})
	return nil
}

func (f *fakeHost) SetStatus(_ context.Context, pr bot.PR, s bot.Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failStatus > 0 {
		f.failStatus--
		return fmt.Errorf("fake: status API down")
	}
	s.StartedAt = time.Time{}
	f.statuses = append(f.statuses, statusCall{SHA: pr.HeadSHA, Status: s})
	return nil
}

func (f *fakeHost) FetchSpec(_ context.Context, pr bot.PR) (bot.FetchSpec, error) {
	return bot.NewFetchSpec(f.cloneURL, nil, fmt.Sprintf("refs/pull/%d/head", pr.Number), pr, ""), nil
}

func (f *fakeHost) MaxCommentChars() int { return 65536 }

func (f *fakeHost) Statuses() []statusCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]statusCall(nil), f.statuses...)
}

func (f *fakeHost) Comments() []commentCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]commentCall(nil), f.comments...)
}

// states lists the status states set on sha, in order.
func (f *fakeHost) states(sha string) []bot.State {
	var out []bot.State
	for _, s := range f.Statuses() {
		if s.SHA == sha {
			out = append(out, s.Status.State)
		}
	}
	return out
}

// fakePreviewer returns a small report naming the head; a head listed in block
// waits for its channel to be closed first (ignoring cancellation when stubborn).
type fakePreviewer struct {
	mu       sync.Mutex
	block    map[string]chan struct{}
	started  chan string
	stubborn bool
	calls    []preview.Request
	failing  bool
}

func newFakePreviewer() *fakePreviewer {
	return &fakePreviewer{block: map[string]chan struct{}{}, started: make(chan string, 100)}
}

func (p *fakePreviewer) Preview(ctx context.Context, req preview.Request) (*diffing.Report, error) {
	p.mu.Lock()
	p.calls = append(p.calls, req)
	ch := p.block[req.Head]
	failing := p.failing
	p.mu.Unlock()
	p.started <- req.Head
	if ch != nil {
		if p.stubborn {
			<-ch
		} else {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	// The mirror really holds both commits.
	for _, sha := range []string{req.Base, req.Head} {
		if out, err := gitfixture.Run("", nil, "--git-dir", req.RepoDir, "cat-file", "-t", sha); err != nil || out != "commit" {
			return nil, fmt.Errorf("fake previewer: %s not in mirror %s: %v %s", sha, req.RepoDir, err, out)
		}
	}
	return &diffing.Report{
		Base: req.Base, Head: req.Head, GeneratedAt: req.Now,
		Targets: []diffing.TargetReport{{Name: "app", Path: "app", Summary: diffing.Summary{Modified: 1},
			Changes: []diffing.Change{{Action: diffing.ActionModified, Diff: "-a\n+b\n"}}}},
		Failing: failing,
	}, nil
}

// gitRepo is a bare repository with a base and a head commit, reachable as file://.
type gitRepo struct {
	URL        string
	Base, Head string
	work       string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitfixture.Git(t, root, "init", "-q", "-b", "main", work)
	r := &gitRepo{work: work}
	r.Base = r.commit(t, "cm.yaml", "a")
	r.Head = r.commit(t, "cm.yaml", "b")
	gitfixture.Git(t, root, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))
	r.URL = "file://" + filepath.Join(root, "repo.git")
	return r
}

// commit writes one file and commits it, returning the SHA; push copies it to the
// bare repository.
func (r *gitRepo) commit(t *testing.T, name, content string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.work, name), []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitfixture.Git(t, r.work, "add", name)
	gitfixture.Git(t, r.work, "commit", "-q", "-m", content)
	return gitfixture.Git(t, r.work, "rev-parse", "HEAD")
}

func (r *gitRepo) push(t *testing.T) {
	t.Helper()
	gitfixture.Git(t, r.work, "push", "-q", "--force", strings.TrimPrefix(r.URL, "file://"), "HEAD:refs/heads/main")
}
