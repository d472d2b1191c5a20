package remote

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// What one Fetcher shares between its runs: the parsed-index memo (bounded in
// bytes), a lock per URL (so two targets wanting one index fetch and parse it
// once, while other URLs go on in parallel), and a limit on concurrent
// downloads.
type shared struct {
	locksMu sync.Mutex
	locks   map[string]*urlLock

	downloads chan struct{}
	// bigParse lets one large index be parsed at a time: parsing takes about
	// 16 times the file's size in memory.
	bigParse sync.Mutex

	memoMu    sync.Mutex
	memo      map[string]*memoEntry
	memoBytes int64
	memoMax   int64
}

type urlLock struct {
	mu   sync.Mutex
	refs int
}

// memoEntry is a parsed index, kept for the policy's IndexTTL.
type memoEntry struct {
	idx   *repo.IndexFile
	bytes int64
	at    time.Time
	used  time.Time
}

// bigIndexBytes is the size of index file above which parses take turns.
const bigIndexBytes = 8 << 20

// DefaultMaxConcurrentDownloads and DefaultMaxIndexMemoBytes are the defaults
// of Policy.MaxConcurrentDownloads and MaxIndexMemoBytes.
const (
	DefaultMaxConcurrentDownloads = 4
	DefaultMaxIndexMemoBytes      = 64 << 20
)

func newShared(p Policy) *shared {
	return &shared{
		locks:     map[string]*urlLock{},
		downloads: make(chan struct{}, p.MaxConcurrentDownloads),
		memo:      map[string]*memoEntry{},
		memoMax:   p.MaxIndexMemoBytes,
	}
}

// lock takes the lock of key (a normalised URL) and returns its release.
func (s *shared) lock(key string) func() {
	s.locksMu.Lock()
	l := s.locks[key]
	if l == nil {
		l = &urlLock{}
		s.locks[key] = l
	}
	l.refs++
	s.locksMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.locksMu.Lock()
		if l.refs--; l.refs == 0 {
			delete(s.locks, key)
		}
		s.locksMu.Unlock()
	}
}

// acquire waits for a download slot.
func (s *shared) acquire(ctx context.Context) (func(), error) {
	select {
	case s.downloads <- struct{}{}:
		return func() { <-s.downloads }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// memoGet returns the parsed index of key when it is younger than ttl; expired
// entries are dropped as they are met.
func (s *shared) memoGet(key string, ttl time.Duration) *repo.IndexFile {
	s.memoMu.Lock()
	defer s.memoMu.Unlock()
	now := time.Now()
	for k, e := range s.memo {
		if now.Sub(e.at) >= ttl {
			s.memoBytes -= e.bytes
			delete(s.memo, k)
		}
	}
	e := s.memo[key]
	if e == nil {
		return nil
	}
	e.used = now
	return e.idx
}

// memoPut keeps idx (of about size bytes in memory) under key, dropping the
// least recently used entries to stay under the memo's bound; an index larger
// than the whole bound is not kept.
func (s *shared) memoPut(key string, idx *repo.IndexFile, size int64) {
	s.memoMu.Lock()
	defer s.memoMu.Unlock()
	if old := s.memo[key]; old != nil {
		s.memoBytes -= old.bytes
		delete(s.memo, key)
	}
	if size > s.memoMax {
		return
	}
	for s.memoBytes+size > s.memoMax {
		var lru string
		var at time.Time
		for k, e := range s.memo {
			if lru == "" || e.used.Before(at) {
				lru, at = k, e.used
			}
		}
		s.memoBytes -= s.memo[lru].bytes
		delete(s.memo, lru)
	}
	now := time.Now()
	s.memo[key] = &memoEntry{idx: idx, bytes: size, at: now, used: now}
	s.memoBytes += size
}

// MemoBytes is what the parsed-index memo holds, in (estimated) bytes.
func (f *Fetcher) MemoBytes() int64 {
	f.shared.memoMu.Lock()
	defer f.shared.memoMu.Unlock()
	return f.shared.memoBytes
}

// slimIndex keeps of a parsed index only what ResolveVersion and HelmChart
// read (name, version, URLs, digest, created), and returns its size in bytes,
// estimated: a memo entry then costs what resolving versions needs, not the
// descriptions, annotations and maintainers of every version.
func slimIndex(idx *repo.IndexFile) int64 {
	size := int64(256)
	for name, cvs := range idx.Entries {
		size += int64(len(name)) + 64
		for i, cv := range cvs {
			if cv == nil {
				continue
			}
			md := cv.Metadata
			slim := &repo.ChartVersion{URLs: cv.URLs, Created: cv.Created, Digest: cv.Digest, Removed: cv.Removed}
			if md != nil {
				slim.Metadata = &chart.Metadata{Name: md.Name, Version: md.Version, APIVersion: md.APIVersion, Type: md.Type}
			}
			cvs[i] = slim
			size += 160 + int64(len(slim.Digest))
			for _, u := range slim.URLs {
				size += int64(len(u)) + 16
			}
			if md != nil {
				size += int64(len(md.Name) + len(md.Version) + len(md.APIVersion) + len(md.Type))
			}
		}
	}
	return size
}

// run is what a Fetcher remembers for one run (a preview, or a CLI process):
// the failures, so a host that cannot be reached costs one timeout per run
// and not one per chart, and what was fetched, against the run's limits.
type run struct {
	ttl time.Duration // 0: for the run's whole life

	mu       sync.Mutex
	failures map[string]failure

	requests atomic.Int64
	bytes    atomic.Int64
	limits   RunLimits
	start    time.Time
}

type failure struct {
	err *Error
	at  time.Time
}

// RunLimits bound what one run may fetch; zero fields are unlimited.
// MaxTime is the wall time from the run's start within which its fetches
// must start and end: a server that answers each request just inside the
// policy's Timeout cannot hold a preview for MaxRequests of them.
type RunLimits struct {
	MaxRequests int64
	MaxBytes    int64
	MaxTime     time.Duration
}

// rootFailureTTL is how long a Fetcher not made by NewRun (a server's, shared
// by its previews) remembers a failure.
const rootFailureTTL = time.Minute

// NewRun returns a Fetcher sharing f's policy, cache, memo and download slots
// that remembers failures and counts requests and bytes for one run (a
// preview): a host that did not answer is not asked again during the run, and
// the run's fetching stops with a TooBig *Error ("fetch budget exceeded") at
// its limits.
func (f *Fetcher) NewRun(l RunLimits) *Fetcher {
	g := *f
	g.run = &run{failures: map[string]failure{}, limits: l, start: time.Now()}
	return &g
}

// Fetched reports the requests made and bytes downloaded in f's run.
func (f *Fetcher) Fetched() (requests, bytes int64) {
	return f.run.requests.Load(), f.run.bytes.Load()
}

// failed returns the failure remembered for key, or nil.
func (r *run) failed(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fl, ok := r.failures[key]
	if !ok {
		return nil
	}
	if r.ttl > 0 && time.Since(fl.at) >= r.ttl {
		delete(r.failures, key)
		return nil
	}
	// The same error as the first time, so base and head of a preview
	// report one reason.
	return fl.err
}

// remember keeps err under key when it is a failure of the outside world
// (not a refusal of the policy, not a cancellation).
func (r *run) remember(key string, err error) {
	e, ok := errors.AsType[*Error](err)
	if !ok {
		return
	}
	switch e.Reason {
	case Refused, Unsupported:
		return
	}
	r.mu.Lock()
	r.failures[key] = failure{err: e, at: time.Now()}
	r.mu.Unlock()
}

// hostKey is the failure key of raw's host ("" when it has none).
func hostKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return "host " + u.Scheme + "://" + hostPort(u)
}

// hostDown says whether raw's host failed to answer earlier in the run.
func (f *Fetcher) hostDown(raw string) error {
	if k := hostKey(raw); k != "" {
		return f.run.failed(k)
	}
	return nil
}

// noteHost remembers a failure of raw's host that says the host cannot be
// reached or does not answer in time.
func (f *Fetcher) noteHost(raw string, err error) {
	switch ReasonOf(err) {
	case Unreachable, Timeout:
		if ctxErr := errors.Unwrap(err); ctxErr != nil && errors.Is(ctxErr, context.Canceled) {
			return
		}
		if k := hostKey(raw); k != "" {
			f.run.remember(k, err)
		}
	}
}

// count charges one request against the run's limits.
func (f *Fetcher) count(raw string) error {
	n := f.run.requests.Add(1)
	if l := f.run.limits.MaxRequests; l > 0 && n > l {
		return errorf(TooBig, raw, "fetch budget exceeded: this preview made more than %d requests to remote sources", l)
	}
	if l := f.run.limits.MaxBytes; l > 0 && f.run.bytes.Load() > l {
		return errorf(TooBig, raw, "fetch budget exceeded: this preview downloaded more than %d MiB from remote sources", l>>20)
	}
	if l := f.run.limits.MaxTime; l > 0 && time.Since(f.run.start) >= l {
		return errorf(TooBig, raw, "fetch budget exceeded: this preview spent %s fetching remote sources", l)
	}
	return nil
}

// runDeadline cuts ctx at the end of the run's MaxTime, if it has one.
func (f *Fetcher) runDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if l := f.run.limits.MaxTime; l > 0 {
		return context.WithDeadline(ctx, f.run.start.Add(l))
	}
	return ctx, func() {}
}
