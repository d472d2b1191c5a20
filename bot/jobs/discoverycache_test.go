package jobs

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// countingTransport counts the requests that reach the cluster, by path.
type countingTransport struct {
	mu   sync.Mutex
	seen map[string]int
	next http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.seen[req.Method+" "+req.URL.Path]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

func (c *countingTransport) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.seen
	c.seen = map[string]int{}
	return out
}

// job does what the live reader of one job does on a fresh client: discovery,
// the OpenAPI v3 index and one group's document, and a LIST.
func discoveryJob(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx := context.Background()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := dc.ServerGroupsAndResources(); err != nil {
		t.Fatal(err)
	}
	paths, err := dc.OpenAPIV3WithContext(ctx).PathsWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gv, ok := paths["apis/apps/v1"]
	if !ok {
		t.Fatalf("no apps/v1 in the OpenAPI v3 index")
	}
	if _, err := gv.SchemaWithContext(ctx, "application/json"); err != nil {
		t.Fatal(err)
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoveryCacheAcrossJobs: against the real apiserver, the second job's
// discovery and OpenAPI reads are answered from the cache, its LIST is not;
// after the TTL they reach the cluster again; another cluster name shares
// nothing.
func TestDiscoveryCacheAcrossJobs(t *testing.T) {
	cl, err := testcluster.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	counter := &countingTransport{seen: map[string]int{}}
	base := cl.Config()
	base.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })

	now := time.Now()
	cache := NewDiscoveryCache(DefaultDiscoveryTTL)
	cache.now = func() time.Time { return now }
	cfg := cache.Wrap("prod", base)

	discoveryJob(t, cfg)
	first := counter.take()
	discovered := func(seen map[string]int) (n int) {
		for k, v := range seen {
			p := strings.TrimPrefix(k, "GET ")
			if isDiscovery(p) {
				n += v
			}
		}
		return n
	}
	if discovered(first) == 0 || first["GET /apis/apps/v1/namespaces/default/deployments"] != 1 {
		t.Fatalf("the first job read %v; want discovery, OpenAPI and the LIST", first)
	}
	discoveryJob(t, cfg)
	second := counter.take()
	if n := discovered(second); n != 0 {
		t.Errorf("the second job read discovery/OpenAPI %d times from the cluster: %v", n, second)
	}
	if second["GET /apis/apps/v1/namespaces/default/deployments"] != 1 {
		t.Errorf("the LIST must reach the cluster every time: %v", second)
	}

	discoveryJob(t, cache.Wrap("staging", base))
	if n := discovered(counter.take()); n == 0 {
		t.Errorf("another cluster name read nothing from the cluster: answers are shared across credentials")
	}

	now = now.Add(DefaultDiscoveryTTL)
	discoveryJob(t, cfg)
	if n := discovered(counter.take()); n == 0 {
		t.Errorf("after the TTL the job read nothing from the cluster")
	}
}

func TestIsDiscovery(t *testing.T) {
	for p, want := range map[string]bool{
		"/api": true, "/api/v1": true, "/apis": true, "/apis/apps": true, "/apis/apps/v1": true,
		"/openapi/v3": true, "/openapi/v3/apis/apps/v1": true, "/openapi/v2": true,
		"/api/v1/pods": false, "/apis/apps/v1/deployments": false, "/apis/apps/v1/namespaces/x/deployments": false,
		"/healthz": false, "/version": false,
	} {
		if got := isDiscovery(p); got != want {
			t.Errorf("isDiscovery(%q) = %v, want %v", p, got, want)
		}
	}
}
