package render

// RenderInProcess renders without a child process, for the benchmark that
// measures what the child costs.
var RenderInProcess = renderLocal

// ProcessesStarted counts the render processes started so far.
func ProcessesStarted() int64 { return renderers.started.Load() }

// NewUnsharedInputFinder is a finder that shares nothing between lookups and
// looks every path up through os.Root, as FindInputs did for one target on its
// own: the reference the shared finder must agree with.
func NewUnsharedInputFinder(root string) *InputFinder {
	f := NewInputFinder(root)
	f.unshared = true
	return f
}
