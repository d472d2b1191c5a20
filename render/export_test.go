package render

// RenderInProcess renders without a child process, for the benchmark that
// measures what the child costs.
var RenderInProcess = renderLocal
