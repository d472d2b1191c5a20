package preview

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/driftpreview/driftpreview/render"
)

// Budget bounds what one preview spends in render processes, summed over all
// its renders and ApplicationSet templates (base and head, discovery and the
// targets): RenderCPU their CPU time, RenderWall their wall-clock time (two
// renders running at once count twice). Each render is bounded by its own
// limits (render.Options); the budget bounds how many such renders one PR can
// make the service run: once it is spent, every render and template that
// follows is listed as not rendered ("budget exceeded") at once, instead of
// running one after another until the job's timeout. Zero fields take
// DefaultBudget's.
type Budget struct {
	RenderCPU  time.Duration
	RenderWall time.Duration
	// FetchRequests, FetchBytes and FetchTime bound the remote fetcher's
	// requests, downloaded bytes and wall time in one preview
	// (remote.RunLimits): past them, what is left to fetch fails with "fetch
	// budget exceeded".
	FetchRequests int64
	FetchBytes    int64
	FetchTime     time.Duration
}

// DefaultBudget is 2 minutes of render CPU time and 4 minutes of render wall
// time per preview: with two renders at a time, the budget is spent within
// about 2 minutes, well inside serve's default 10-minute job timeout, so two
// renders that spin to their 60 s limits spend it (not four, or more, one after
// another). A cold preview of the 800-target benchmark repository (make
// bench) spends about 40 s of CPU, the 200-target one about 10 s. Remote
// fetching: 1,000 requests, 1 GiB downloaded and 3 minutes per preview.
func DefaultBudget() Budget {
	return Budget{RenderCPU: 2 * time.Minute, RenderWall: 4 * time.Minute, FetchRequests: 1000, FetchBytes: 1 << 30, FetchTime: 3 * time.Minute}
}

func (b Budget) withDefaults() Budget {
	d := DefaultBudget()
	if b.RenderCPU <= 0 {
		b.RenderCPU = d.RenderCPU
	}
	if b.RenderWall <= 0 {
		b.RenderWall = d.RenderWall
	}
	if b.FetchRequests <= 0 {
		b.FetchRequests = d.FetchRequests
	}
	if b.FetchBytes <= 0 {
		b.FetchBytes = d.FetchBytes
	}
	if b.FetchTime <= 0 {
		b.FetchTime = d.FetchTime
	}
	return b
}

// spending is what one preview has spent of its Budget.
type spending struct {
	limit Budget
	// renderCPU is the render CPU budget given to each render (render.Options.Budget),
	// which cuts a render's timeout to the CPU time left, so a render started
	// near the end of the budget cannot run its full limit.
	renderCPU *render.Budget
	mu        sync.Mutex
	cpu       time.Duration
	wall      time.Duration
}

func newSpending(b Budget) *spending {
	l := b.withDefaults()
	return &spending{limit: l, renderCPU: render.NewBudget(l.RenderCPU)}
}

// renderBudget is the render.Budget the preview's renders share (nil: none).
func (s *spending) renderBudget() *render.Budget {
	if s == nil {
		return nil
	}
	return s.renderCPU
}

// charge counts one render or template batch.
func (s *spending) charge(cpu, wall time.Duration) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.cpu += cpu
	s.wall += wall
	s.mu.Unlock()
}

// exceeded returns the reason the budget is spent, or "".
func (s *spending) exceeded() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cpu >= s.limit.RenderCPU:
		return fmt.Sprintf("budget exceeded: the preview's renders used %s of CPU time, the limit per preview is %s; not rendered so that the preview ends (look for targets or ApplicationSets that loop or grow until stopped)", s.cpu.Round(time.Millisecond), s.limit.RenderCPU)
	case s.wall >= s.limit.RenderWall:
		return fmt.Sprintf("budget exceeded: the preview's renders took %s in all, the limit per preview is %s; not rendered so that the preview ends (look for targets or ApplicationSets that loop or grow until stopped)", s.wall.Round(time.Millisecond), s.limit.RenderWall)
	}
	return ""
}

// budgetError is the error of a render or template batch refused because the
// budget is spent: not rendered, with the reason.
func budgetError(file, reason string) error {
	return &render.Error{File: file, Err: &render.Unavailable{Reason: reason}}
}

// templates is gitops.Options.Templates for a preview: render.ExecuteTemplates,
// counted against the budget, and refused once it is spent.
func (s *spending) templates(ctx context.Context, req render.TemplateRequest, lim render.TemplateLimits) (render.TemplateResult, error) {
	if reason := s.exceeded(); reason != "" {
		return render.TemplateResult{}, budgetError(req.Name, reason)
	}
	start := time.Now()
	res, err := render.ExecuteTemplates(ctx, req, lim)
	s.charge(res.CPUTime, time.Since(start))
	return res, err
}
