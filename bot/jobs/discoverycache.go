package jobs

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// DiscoveryCache keeps what a cluster's discovery and OpenAPI endpoints answer
// across the jobs of `serve`, for a TTL (issue 13, "pay setup once"): each job
// builds its own live reader (diffing/live), whose cache lasts that job, so
// without this every job read discovery and the OpenAPI v3 documents again.
// It sits in the cluster's HTTP transport (rest.Config.WrapTransport), so the
// reader needs no knowledge of it: GETs of /api, /apis, /api/v1, /apis/G and
// /apis/G/V (discovery) and of /openapi/v2 and /openapi/v3… are answered from
// memory while younger than the TTL; everything else (LISTs, dry-runs) goes to
// the cluster. Only 200 answers are kept. A CRD installed meanwhile is seen
// after the TTL at the latest, as within one reader (diffing/live cacheTTL).
type DiscoveryCache struct {
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*discoveryEntry
}

type discoveryEntry struct {
	at     time.Time
	status int
	header http.Header
	body   []byte
}

// DefaultDiscoveryTTL is how long serve reuses discovery and OpenAPI answers:
// what one live reader does (diffing/live cacheTTL).
const DefaultDiscoveryTTL = 10 * time.Minute

// maxDiscoveryBody bounds one kept answer; larger ones pass uncached.
const maxDiscoveryBody = 64 << 20

// NewDiscoveryCache returns an empty cache whose answers live for ttl.
func NewDiscoveryCache(ttl time.Duration) *DiscoveryCache {
	return &DiscoveryCache{ttl: ttl, now: time.Now, entries: map[string]*discoveryEntry{}}
}

// Wrap returns a copy of cfg whose discovery and OpenAPI reads go through the
// cache; cluster names the credentials, so two contexts of one server never
// share answers.
func (c *DiscoveryCache) Wrap(cluster string, cfg *rest.Config) *rest.Config {
	if cfg == nil {
		return nil
	}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &discoveryTransport{c: c, cluster: cluster, next: rt}
	})
	return out
}

type discoveryTransport struct {
	c       *DiscoveryCache
	cluster string
	next    http.RoundTripper
}

// isDiscovery says whether a GET of path reads discovery or OpenAPI documents.
func isDiscovery(path string) bool {
	if strings.HasPrefix(path, "/openapi/v2") || strings.HasPrefix(path, "/openapi/v3") {
		return true
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2 // /api, /api/v1
	case "apis":
		return len(parts) <= 3 // /apis, /apis/G, /apis/G/V
	}
	return false
}

func (t *discoveryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !isDiscovery(req.URL.Path) {
		return t.next.RoundTrip(req)
	}
	key := t.cluster + "\x00" + req.URL.Host + req.URL.RequestURI() + "\x00" + req.Header.Get("Accept")
	c := t.c
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok && c.now().Sub(e.at) >= c.ttl {
		delete(c.entries, key)
		ok = false
	}
	c.mu.Unlock()
	if ok {
		return e.response(req), nil
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBody+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	e = &discoveryEntry{at: c.now(), status: resp.StatusCode, header: resp.Header.Clone(), body: body}
	if len(body) <= maxDiscoveryBody {
		c.mu.Lock()
		c.entries[key] = e
		c.mu.Unlock()
	}
	return e.response(req), nil
}

// response is a fresh copy of the kept answer for req.
func (e *discoveryEntry) response(req *http.Request) *http.Response {
	return &http.Response{
		Status: http.StatusText(e.status), StatusCode: e.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: e.header.Clone(), Body: io.NopCloser(bytes.NewReader(e.body)), ContentLength: int64(len(e.body)),
		Request: req,
	}
}
