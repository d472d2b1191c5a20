package render

import (
	"errors"
	"path/filepath"
	"strings"
)

// Paths on this machine mean nothing in a PR comment and tell the PR's author
// where the service keeps its files, yet os errors name them ("open
// /home/…/.cache/driftpreview/remote/tmp/k-…: no space left on device"). So
// before an error leaves Render, the remote cache's directory and the
// checkout's are replaced by these names.
const (
	remoteCacheName = "(remote cache)"
	checkoutName    = "(checkout)"
)

// hideLocalPaths returns err with the local directories of this render named
// symbolically; *Error keeps its file and line, *Unavailable its remote base,
// and other errors still unwrap to what they wrap.
func hideLocalPaths(err error, root string, opts Options) error {
	if err == nil {
		return nil
	}
	type dir struct{ path, name string }
	var dirs []dir
	if opts.Remote != nil && opts.Remote.Cache() != nil {
		dirs = append(dirs, dir{opts.Remote.Cache().Dir(), remoteCacheName})
	}
	for _, r := range []string{root, opts.Checkout} {
		if r == "" {
			continue
		}
		if abs, aerr := filepath.Abs(r); aerr == nil {
			dirs = append(dirs, dir{abs, checkoutName})
		}
		dirs = append(dirs, dir{r, checkoutName})
	}
	hide := func(msg string) string {
		for _, d := range dirs {
			if len(d.path) > 1 {
				msg = strings.ReplaceAll(msg, d.path, d.name)
			}
		}
		return msg
	}
	if re, ok := err.(*Error); ok {
		msg := hide(re.Err.Error())
		if msg == re.Err.Error() {
			return err
		}
		if u, ok := errors.AsType[*Unavailable](re.Err); ok {
			return &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: msg, Remote: u.Remote}}
		}
		return &Error{File: re.File, Line: re.Line, Err: stringError(msg)}
	}
	if msg := hide(err.Error()); msg != err.Error() {
		return &pathsHidden{msg: msg, err: err}
	}
	return err
}

// pathsHidden is an error with local paths taken out of its text, which still
// unwraps to the original (for errors.Is with context errors).
type pathsHidden struct {
	msg string
	err error
}

func (e *pathsHidden) Error() string { return e.msg }
func (e *pathsHidden) Unwrap() error { return e.err }
