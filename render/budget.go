package render

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Budget is the render CPU time one preview may spend over all its renders
// (Options.Budget): each render's wall-clock timeout is cut to what is left,
// and what the render process used (the CPU time it reports for the render;
// the wall time when it gave no answer) is charged when the render ends. Once it
// is spent, renders end at once with a *BudgetExceeded inside an *Error, so
// four jsonnet evaluations that spin cost the budget once, not four times the
// per-render limit one after another. It is safe for concurrent use: renders
// running in parallel each may run until the budget is spent, so it can be
// passed by at most the parallel renders' share.
type Budget struct {
	mu    sync.Mutex
	total time.Duration
	used  time.Duration
}

// NewBudget returns a budget of total CPU time.
func NewBudget(total time.Duration) *Budget { return &Budget{total: total} }

// Left is the CPU time left (never negative).
func (b *Budget) Left() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.total-b.used)
}

// Used is the CPU time charged so far.
func (b *Budget) Used() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

func (b *Budget) charge(d time.Duration) {
	b.mu.Lock()
	b.used += max(0, d)
	b.mu.Unlock()
}

// BudgetExceeded is why a render was not run, or stopped: the preview's
// render budget is spent.
type BudgetExceeded struct {
	Total time.Duration
}

func (e *BudgetExceeded) Error() string {
	return fmt.Sprintf("render budget exceeded: this preview's renders used their %s of CPU time; the targets left are not rendered (look for templates, jsonnet or kustomizations that loop)", e.Total)
}

// IsBudgetExceeded reports whether err is a render stopped by its budget.
func IsBudgetExceeded(err error) bool {
	_, ok := errors.AsType[*BudgetExceeded](err)
	return ok
}
