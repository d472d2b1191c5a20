package render

import "fmt"

// Error is a problem the PR author must fix in their files: it names the file and,
// where known, the line. Its text is shown verbatim in the PR comment, so it never
// carries file content beyond the offending line.
type Error struct {
	File string // relative to the checkout root
	Line int    // 1-based; 0 when unknown
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.File == "":
		return e.Err.Error()
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	default:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }
