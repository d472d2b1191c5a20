package config

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Error is one problem in .driftpreview.yaml that the repository maintainer must fix.
// The bot turns each into a config-error finding, so its text names the file, the line
// and the field, and never carries a value that looks like a secret.
type Error struct {
	File   string // as given to Parse, usually .driftpreview.yaml
	Line   int    // 1-based; 0 when unknown
	Field  string // dotted path such as targets[0].sync.prune; empty for syntax errors
	Reason string
}

// Error formats the problem as "file:line: field: reason", leaving out the parts that
// are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Errors unpacks every *Error from err, which Parse and Load build with errors.Join,
// so a caller can report each problem separately. It returns nil when err holds none.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// Display quotes a user-written value (a path, a name) for an error message the
// way config errors do, hiding anything that looks like a credential.
func Display(s string) string { return display(s) }

// display quotes a user-written value for an error message, unless it looks like a
// credential: config errors end up in PR comments, so a pasted token must not.
func display(s string) string {
	if looksSecret(s) {
		return "(value hidden: it looks like a secret)"
	}
	const max = 60
	if r := []rune(s); len(r) > max {
		return fmt.Sprintf("%q…", string(r[:max]))
	}
	return fmt.Sprintf("%q", s)
}

// secretPrefixes are the starts of well-known token formats.
var secretPrefixes = []string{
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glrt-",
	"xoxb-", "xoxp-", "xoxa-", "AKIA", "ASIA", "sk-", "eyJ", "-----BEGIN",
}

func looksSecret(s string) bool {
	for _, p := range secretPrefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	if strings.Contains(s, "-----BEGIN") || strings.Contains(s, "://") && strings.Contains(s, "@") {
		return true
	}
	if len(s) < 20 || strings.ContainsFunc(s, unicode.IsSpace) {
		return false
	}
	// A long word mixing letter cases and digits reads like a key or a token, not
	// like a name a maintainer would type.
	var lower, upper, digit bool
	for _, r := range s {
		switch {
		case unicode.IsLower(r):
			lower = true
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	return lower && upper && digit
}
