package preview

import (
	"runtime"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/diffing"
)

// TestTargetsInFlight: a preview works on one target per CPU, and on at
// least dryRunTargets when a cluster it reads is in dry-run mode (its targets
// wait for the apiserver); a dry-run cluster without credentials reads
// nothing and does not count.
func TestTargetsInFlight(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	cfg := &rest.Config{Host: "https://example.invalid"}
	for _, c := range []struct {
		name string
		req  Request
		want int
	}{
		{"no cluster", Request{}, 2},
		{"simulate", Request{DefaultCluster: &Cluster{Config: cfg}}, 2},
		{"live off", Request{DefaultCluster: &Cluster{Config: cfg, LiveMode: diffing.LiveOff}}, 2},
		{"dry-run", Request{DefaultCluster: &Cluster{Config: cfg, LiveMode: diffing.LiveDryRun}}, dryRunTargets},
		{"dry-run for one named cluster", Request{DefaultCluster: &Cluster{Config: cfg}, Clusters: map[string]Cluster{"prod": {Name: "prod", Config: cfg, LiveMode: diffing.LiveDryRun}}}, dryRunTargets},
		{"dry-run without credentials", Request{DefaultCluster: &Cluster{LiveMode: diffing.LiveDryRun}}, 2},
	} {
		if got := targetsInFlight(c.req); got != c.want {
			t.Errorf("%s: %d targets in flight, want %d", c.name, got, c.want)
		}
	}
	runtime.GOMAXPROCS(16)
	if got := targetsInFlight(Request{DefaultCluster: &Cluster{Config: cfg, LiveMode: diffing.LiveDryRun}}); got != 16 {
		t.Errorf("dry-run on 16 CPUs: %d targets in flight, want 16", got)
	}
}
