package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/driftpreview/driftpreview/render/remote/gitsrc"
)

// GitBase is a remote kustomize base fetched by GitBase.
type GitBase struct {
	// Spec is the reference as the kustomization wrote it; RepoURL the
	// repository (redacted), Ref the ref asked for and Commit what it was.
	Spec    string
	RepoURL string
	Ref     string
	Commit  string
	// Root is the repository's checkout in the cache, Path the base in it.
	Root string
	Path string
}

// gitMemo keeps what each unpinned ref (a tag, a branch) resolved to for the
// policy's IndexTTL, so the base and head of one preview see the same commit
// and fetch it once.
type gitMemo struct {
	mu sync.Mutex
	m  map[string]gitMemoEntry
}

type gitMemoEntry struct {
	base GitBase
	at   time.Time
}

var gitMemos sync.Map // *Fetcher → *gitMemo

// GitBase fetches a remote kustomize base or component (https://host/org/repo//path?ref=…,
// git::https://…, github.com/org/repo/path?ref=…) with git, as kustomize would
// (gitsrc.ParseKustomize), if the policy allows its repository URL: git's
// only way out is a proxy that dials through this fetcher's address checks.
// The checkout is stored in the cache by repository and commit, and sized
// before it is written (MaxFiles, MaxUnpackedBytes); the download is capped at
// MaxUnpackedBytes and the whole fetch at the policy's Timeout.
func (f *Fetcher) GitBase(ctx context.Context, spec string) (*GitBase, error) {
	s, err := gitsrc.ParseKustomize(spec)
	if err != nil {
		return nil, &Error{Reason: Unsupported, Err: err}
	}
	// git fetches the normalised URL, the one the prefix was matched
	// against (git's curl would remove dot segments itself, after our check).
	n, pr, err := f.allowed(s.RepoURL)
	if err != nil {
		return nil, err
	}
	s.RepoURL = n.String()
	if err := f.hostDown(s.RepoURL); err != nil {
		return nil, err
	}
	memoKey := s.RepoURL + "\x00" + s.Ref
	mv, _ := gitMemos.LoadOrStore(f, &gitMemo{m: map[string]gitMemoEntry{}})
	memo := mv.(*gitMemo)
	if !s.Pinned() {
		memo.mu.Lock()
		e, ok := memo.m[memoKey]
		memo.mu.Unlock()
		if ok && time.Since(e.at) < f.policy.IndexTTL {
			if _, err := os.Stat(e.base.Root); err == nil {
				b := e.base
				b.Spec, b.Path = spec, s.Path
				return &b, nil
			}
		}
	}
	fetch := func(dir string) (gitsrc.Result, error) {
		g := &gitsrc.Fetcher{
			Dir:     dir,
			Allowed: func(string) error { return nil }, // checked above
			Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return f.dial(context.WithValue(ctx, ctxKey{}, pr), network, addr)
			},
			MaxTransferBytes: f.policy.MaxUnpackedBytes,
			MaxTreeBytes:     f.policy.MaxUnpackedBytes,
			MaxFiles:         int64(f.policy.MaxFiles),
			Timeout:          f.policy.Timeout,
		}
		if err := f.count(s.RepoURL); err != nil {
			return gitsrc.Result{}, err
		}
		release, err := f.shared.acquire(ctx)
		if err != nil {
			return gitsrc.Result{}, err
		}
		defer release()
		res, err := g.Fetch(ctx, s)
		if err != nil {
			err = gitError(s.RepoURL, err)
			f.noteHost(s.RepoURL, err)
			return res, err
		}
		return res, nil
	}
	base := &GitBase{Spec: spec, RepoURL: Redact(s.RepoURL), Ref: s.Ref, Path: s.Path}
	if s.Pinned() {
		// A commit never changes: fetched into the cache once.
		root, err := f.cache.Tree(Key("git-base", s.RepoURL, s.Ref), func(dir string) error {
			res, err := fetch(filepath.Join(dir, "work"))
			if err != nil {
				return err
			}
			return os.Rename(res.Root, filepath.Join(dir, "tree"))
		})
		if err != nil {
			return nil, err
		}
		base.Root, base.Commit = filepath.Join(root, "tree"), s.Ref
		return base, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(f.cache.Dir(), "tmp"), "git-")
	if err != nil {
		return nil, fmt.Errorf("remote cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	res, err := fetch(tmp)
	if err != nil {
		return nil, err
	}
	root, err := f.cache.Tree(Key("git-base", s.RepoURL, res.Commit), func(dir string) error {
		return os.Rename(res.Root, filepath.Join(dir, "tree"))
	})
	if err != nil {
		return nil, err
	}
	base.Root, base.Commit = filepath.Join(root, "tree"), res.Commit
	memo.mu.Lock()
	memo.m[memoKey] = gitMemoEntry{base: *base, at: time.Now()}
	memo.mu.Unlock()
	return base, nil
}

// gitError gives a gitsrc failure its reason.
func gitError(repoURL string, err error) error {
	var ge *gitsrc.Error
	if !errors.As(err, &ge) {
		return &Error{Reason: Unreachable, URL: Redact(repoURL), Err: err}
	}
	r := Unreachable
	switch ge.Kind {
	case gitsrc.KindRefused:
		r = Refused
	case gitsrc.KindNotFound:
		r = NotFound
	case gitsrc.KindTooBig:
		r = TooBig
	case gitsrc.KindTimeout:
		r = Timeout
	}
	return &Error{Reason: r, Err: errors.New(ge.Msg)}
}
