package preview

import "time"

// Phase is one stage of a Run, as Progress hears of it.
type Phase string

// The phases of a Run, in the order they start.
const (
	// PhaseCheckout resolves base and head and checks both out.
	PhaseCheckout Phase = "checkout"
	// PhaseTargets reads the repo config and finds the targets (discovery).
	PhaseTargets Phase = "targets"
	// PhaseCompare renders the affected targets at base and head, reads the
	// live cluster and diffs.
	PhaseCompare Phase = "compare"
)

// Progress hears what a Run is doing while it does it, for a progress line or
// a log; it never changes the report. Run calls its methods from several
// goroutines at once (one per target being compared), so an implementation
// must be safe for concurrent use, and quick: Run waits for each call.
type Progress interface {
	// PhaseStarted and PhaseEnded bracket each phase that is reached; a Run
	// that fails ends no more phases after the failure. took is the phase's
	// wall time.
	PhaseStarted(p Phase)
	PhaseEnded(p Phase, took time.Duration)
	// TargetsFound says how many targets the run has, and how many of them
	// it renders (the others are listed as not affected by the PR).
	TargetsFound(total, toRender int)
	// TargetRendered is called once per target that is rendered, when its
	// base and head renders are done (whether they succeeded or not).
	TargetRendered(target string)
	// LiveRead is called once per target whose live state was read from its
	// cluster (whether the read succeeded or not).
	LiveRead(target string)
}

// noProgress is the Progress of a Request without one.
type noProgress struct{}

func (noProgress) PhaseStarted(Phase)              {}
func (noProgress) PhaseEnded(Phase, time.Duration) {}
func (noProgress) TargetsFound(int, int)           {}
func (noProgress) TargetRendered(string)           {}
func (noProgress) LiveRead(string)                 {}
func (req Request) progress() Progress {
	if req.Progress == nil {
		return noProgress{}
	}
	return req.Progress
}

// phase starts p and returns the function that ends it.
func phase(pr Progress, p Phase) func() {
	start := time.Now()
	pr.PhaseStarted(p)
	return func() { pr.PhaseEnded(p, time.Since(start)) }
}
