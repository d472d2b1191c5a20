package preview

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/diffing"
)

// recorder is a Progress that writes down every event, as a progress line would
// hear them (from several goroutines).
type recorder struct {
	mu              sync.Mutex
	phases          []string
	total, toRender int
	found           int
	rendered, live  []string
}

func (r *recorder) PhaseStarted(p Phase) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.phases = append(r.phases, "start "+string(p))
}

func (r *recorder) PhaseEnded(p Phase, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if took < 0 {
		r.phases = append(r.phases, "negative time "+string(p))
	}
	r.phases = append(r.phases, "end "+string(p))
}

func (r *recorder) TargetsFound(total, toRender int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.found++
	r.total, r.toRender = total, toRender
}

func (r *recorder) TargetRendered(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rendered = append(r.rendered, target)
}

func (r *recorder) LiveRead(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = append(r.live, target)
}

// TestProgress: a Run with a Progress reports its phases in order, the targets
// it found and renders, each rendered target once and each live read once, and
// returns the same report as a Run without one. 02-kubectl-edit-configmap reads
// the live cluster; 15-clean's PR touches no file of its target, which is found
// but not rendered (and read) unless --all-targets asks for it.
func TestProgress(t *testing.T) {
	for _, tt := range []struct {
		scenario   string
		all        bool
		wantRender int
	}{
		{"02-kubectl-edit-configmap", false, 1},
		{"15-clean", false, 0},
		{"15-clean", true, 1},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			dir := filepath.Join("../../fixtures/scenarios", tt.scenario)
			repoDir := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
			createNamespaces(t.Context(), t, dir)
			for _, s := range readSteps(t, dir) {
				seed(t.Context(), t, dir, s)
			}
			run := func(p Progress) []byte {
				t.Helper()
				rep, err := Run(t.Context(), Request{
					RepoDir: repoDir, Base: "base", Head: "head", Now: scenarioNow, AllTargets: tt.all,
					DefaultCluster: &Cluster{Name: "test", Config: cluster.Config(), LiveMode: diffing.LiveSimulate},
					Progress:       p,
				})
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.MarshalIndent(rep, "", " ")
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			rec := &recorder{}
			with := run(rec)
			if diff := cmp.Diff(string(run(nil)), string(with)); diff != "" {
				t.Errorf("the report with a Progress differs from the one without (-without +with):\n%s", diff)
			}
			var rep diffing.Report
			if err := json.Unmarshal(with, &rep); err != nil {
				t.Fatal(err)
			}
			wantPhases := []string{"start checkout", "end checkout", "start targets", "end targets", "start compare", "end compare"}
			if diff := cmp.Diff(wantPhases, rec.phases); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
			var wantRendered, wantLive []string
			for _, tr := range rep.Targets {
				if tr.NotAffected == "" {
					wantRendered = append(wantRendered, tr.Name)
					wantLive = append(wantLive, tr.Name)
				}
			}
			if len(wantRendered) != tt.wantRender {
				t.Fatalf("the report renders %d targets, the scenario %d", len(wantRendered), tt.wantRender)
			}
			if rec.found != 1 || rec.total != len(rep.Targets) || rec.toRender != tt.wantRender {
				t.Errorf("TargetsFound called %d times, last (%d, %d); want once with (%d, %d)", rec.found, rec.total, rec.toRender, len(rep.Targets), tt.wantRender)
			}
			slices.Sort(rec.rendered)
			slices.Sort(rec.live)
			if diff := cmp.Diff(wantRendered, rec.rendered); diff != "" {
				t.Errorf("TargetRendered (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantLive, rec.live); diff != "" {
				t.Errorf("LiveRead (-want +got):\n%s", diff)
			}
		})
	}
}
