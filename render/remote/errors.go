package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
)

// Reason is why a remote source could not be used. Each reason is a limit or a
// state of the outside world, not a problem of the pull request: callers list the
// target as "not rendered: <reason>" instead of failing the check.
type Reason string

// The reasons a fetch fails.
const (
	// Refused: the policy does not allow the URL (no prefix allows it, an address
	// in a private range, a redirect to either, remote fetching not enabled).
	Refused Reason = "refused by policy"
	// Unreachable: DNS, connection or TLS failure, or a server error.
	Unreachable Reason = "unreachable"
	// NotFound: the server answered 404/410, the chart or version is not in the
	// index, or no version matches the range.
	NotFound Reason = "not found"
	// Denied: the server answered 401/403 (credentials missing or wrong).
	Denied Reason = "access denied"
	// TooBig: a download, or an archive unpacked, is over a size or count cap.
	TooBig Reason = "too big"
	// Timeout: a download took longer than the policy's timeout.
	Timeout Reason = "timeout"
	// Invalid: what was fetched is not what it should be (bad index, digest
	// mismatch, an archive entry leaving its directory, a symlink).
	Invalid Reason = "invalid content"
	// Unsupported: a kind of source this fetcher does not handle.
	Unsupported Reason = "not supported"
)

// Error is every failure of this package: a Reason, the URL concerned (without
// credentials or query) and the detail.
type Error struct {
	Reason Reason
	URL    string
	Err    error
}

func (e *Error) Error() string {
	s := string(e.Reason)
	if e.URL != "" {
		s += ": " + e.URL
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of an *Error inside err, or "" when err is not one.
func ReasonOf(err error) Reason {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return ""
}

func errorf(r Reason, u string, format string, args ...any) *Error {
	return &Error{Reason: r, URL: Redact(u), Err: fmt.Errorf(format, args...)}
}

// Redact strips user information, query and fragment from a URL so it can be
// shown: query strings carry tokens (signed URLs) as often as userinfo does.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL: show at most its first part, never what follows an '@'.
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			raw = raw[i+1:]
		}
		if i := strings.IndexAny(raw, "?#"); i >= 0 {
			raw = raw[:i]
		}
		return raw
	}
	u.User = nil
	u.RawQuery = ""
	u.Fragment = ""
	u.RawFragment = ""
	return u.String()
}

// classify turns an error of the HTTP client into an *Error with its reason.
func classify(u string, err error) *Error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return &Error{Reason: Timeout, URL: Redact(u), Err: errors.New("the server did not answer in time")}
	case errors.As(err, &dnsErr):
		return &Error{Reason: Unreachable, URL: Redact(u), Err: fmt.Errorf("resolving %s: %s", dnsErr.Name, dnsErr.Err)}
	case errors.As(err, &certErr), errors.As(err, &recErr):
		return &Error{Reason: Unreachable, URL: Redact(u), Err: fmt.Errorf("TLS: %v", cleanURLErr(err))}
	case errors.As(err, &opErr):
		return &Error{Reason: Unreachable, URL: Redact(u), Err: fmt.Errorf("%s %s: %v", opErr.Op, opErr.Net, opErr.Err)}
	}
	return &Error{Reason: Unreachable, URL: Redact(u), Err: cleanURLErr(err)}
}

// cleanURLErr drops the *url.Error wrapper, which repeats the full URL (with
// its query) in the message.
func cleanURLErr(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}
