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
}

// DefaultBudget is 5 minutes of render CPU time and 8 minutes of render wall
// time per preview: with two renders at a time, the budget is spent within
// about 4 minutes, well inside serve's default 10-minute job timeout, and a
// preview of the 200-target benchmark repository (make bench) spends about
// 20 s of it.
func DefaultBudget() Budget {
	return Budget{RenderCPU: 5 * time.Minute, RenderWall: 8 * time.Minute}
}

func (b Budget) withDefaults() Budget {
	d := DefaultBudget()
	if b.RenderCPU <= 0 {
		b.RenderCPU = d.RenderCPU
	}
	if b.RenderWall <= 0 {
		b.RenderWall = d.RenderWall
	}
	return b
}

// spending is what one preview has spent of its Budget.
type spending struct {
	limit Budget
	mu    sync.Mutex
	cpu   time.Duration
	wall  time.Duration
}

func newSpending(b Budget) *spending { return &spending{limit: b.withDefaults()} }

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
