package preview

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
)

// TestPrefetchDiscoveryErrorReportedOnce previews against a cluster whose
// discovery fails: the discovery read while the checkouts are made
// (prefetchDiscovery) is the one the target reports, with the message and at
// the place of a read without the prefetch, and the cluster is asked once, not
// once more by the target.
func TestPrefetchDiscoveryErrorReportedOnce(t *testing.T) {
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api" {
			asked.Add(1)
		}
		http.Error(w, "forbidden by the test", http.StatusForbidden)
	}))
	defer srv.Close()
	dir := "../../fixtures/scenarios/14-cluster-unreachable"
	repoDir := gitRepo(t, dir+"/base", dir+"/head")
	rep, err := Run(t.Context(), Request{
		RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow, AllTargets: true,
		DefaultCluster: &Cluster{Name: "test", Config: &rest.Config{Host: srv.URL, Timeout: 5 * time.Second}, LiveMode: "simulate"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 1 {
		t.Fatalf("%d targets, want 1", len(rep.Targets))
	}
	var msgs []string
	for _, f := range rep.Targets[0].Findings {
		if f.Rule == diffing.RuleLiveUnavailable {
			msgs = append(msgs, f.Message)
		}
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], "reading cluster test: discovering API resources: ") {
		t.Fatalf("live-unavailable findings %q, want one naming \"reading cluster test: discovering API resources: ...\"", msgs)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("discovery was asked %d times, want 1 (the prefetch's error is the target's)", n)
	}
}
