package render

// RenderInProcess renders without a child process, for the benchmark that
// measures what the child costs.
var RenderInProcess = renderLocal

// ProcessesStarted counts the render processes started so far.
func ProcessesStarted() int64 { return renderers.started.Load() }
