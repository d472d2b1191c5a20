package remote

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"time"
)

// Fetcher downloads what a Policy allows, into its Cache. It is safe for
// concurrent use. Build it with NewFetcher.
type Fetcher struct {
	policy   Policy
	prefixes []*prefix
	client   *http.Client
	cache    *Cache
	// resolve looks up a host's addresses; tests may replace it.
	resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// shared is what all runs share (memo, URL locks, download slots); run
	// what this run remembers (NewRun).
	shared *shared
	run    *run
	// public is the policy's public mode: a URL no prefix covers is allowed
	// by its own publicPrefix.
	public bool
	// loopbackPublic counts loopback addresses as public: tests only
	// (PublicLoopbackForTests), so in-process servers stand in for public
	// ones; no config key or flag sets it.
	loopbackPublic bool
}

// dialTimeout caps resolving a host and connecting to it, within the
// policy's Timeout: a host that cannot be reached fails fast, and once per
// run (hostDown).
const dialTimeout = 10 * time.Second

// maxRedirects follows Go's http.Client default.
const maxRedirects = 10

type ctxKey struct{}

// NewFetcher checks p, reads its credential files and opens its cache. A policy
// with no CacheDir uses a directory under os.TempDir.
func NewFetcher(p Policy) (*Fetcher, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	f := &Fetcher{policy: p, resolve: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}, shared: newShared(p), run: &run{ttl: rootFailureTTL, failures: map[string]failure{}}, public: p.Mode == ModePublic}
	for _, a := range p.Allow {
		pr, err := parsePrefix(a.URL)
		if err != nil {
			return nil, err
		}
		pr.Prefix = a
		switch {
		case a.TokenFile != "":
			tok, err := readSecret(a.TokenFile, "token")
			if err != nil {
				return nil, fmt.Errorf("remote prefix %s: %w", Redact(a.URL), err)
			}
			pr.auth = "Bearer " + tok
		case a.UsernameFile != "":
			user, err := readSecret(a.UsernameFile, "username")
			if err != nil {
				return nil, fmt.Errorf("remote prefix %s: %w", Redact(a.URL), err)
			}
			pass, err := readSecret(a.PasswordFile, "password")
			if err != nil {
				return nil, fmt.Errorf("remote prefix %s: %w", Redact(a.URL), err)
			}
			pr.auth = "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
		}
		f.prefixes = append(f.prefixes, pr)
	}
	dir := p.CacheDir
	if dir == "" {
		dir = os.TempDir() + "/driftpreview-remote-cache"
	}
	c, err := OpenCache(dir, p.CacheMaxBytes)
	if err != nil {
		return nil, err
	}
	f.cache = c
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           f.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: p.Timeout,
	}
	f.client = &http.Client{
		Transport: &authTransport{f: f, base: tr},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errorf(Refused, req.URL.String(), "more than %d redirects", maxRedirects)
			}
			if f.match(req.URL) == nil {
				return errorf(Refused, via[0].URL.String(), "redirected to %s, which %s", Redact(req.URL.String()), f.uncovered())
			}
			return nil
		},
	}
	return f, nil
}

// Policy returns the policy with defaults applied.
func (f *Fetcher) Policy() Policy { return f.policy }

// Cache returns the fetcher's cache.
func (f *Fetcher) Cache() *Cache { return f.cache }

// Allowed says whether the policy allows raw; the error is a Refused *Error.
// raw is normalised first (normalize.go): a URL that leaves a prefix once its
// dot segments are removed is refused, and one that cannot be normalised
// safely (an encoded "/") too.
func (f *Fetcher) Allowed(raw string) error {
	_, _, err := f.allowed(raw)
	return err
}

// allowed normalises raw and returns the normalised URL, which is what is
// fetched, and the prefix allowing it.
func (f *Fetcher) allowed(raw string) (*url.URL, *prefix, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, errorf(Invalid, raw, "not a URL")
	}
	if f == nil || f.policy.Mode == ModeOff {
		return nil, nil, &Error{Reason: Refused, URL: Redact(raw), Err: errors.New(OffReason)}
	}
	n, err := normalize(u)
	if err != nil {
		return nil, nil, &Error{Reason: Refused, URL: Redact(raw), Err: fmt.Errorf("refused: %v", err)}
	}
	pr := f.lookup(n)
	if pr == nil {
		return nil, nil, &Error{Reason: Refused, URL: Redact(raw), Err: fmt.Errorf("%s%s", f.uncovered(), pathChange(raw, n))}
	}
	return n, pr, nil
}

// OffReason is why nothing is fetched with remote sources off, and how to
// turn them on.
const OffReason = "remote sources are off (--offline, --remote-mode off or remote.mode: off); set remote.mode: public to fetch them"

// uncovered says why a URL no prefix allows is refused, and what allows it.
func (f *Fetcher) uncovered() string {
	if f.public {
		return "is not an http://, https:// or oci:// URL without user info, the only ones remote.mode: public fetches"
	}
	if len(f.prefixes) == 0 {
		return "no prefix is allowed (remote.mode: allowlist with no remote.allow); add a prefix with --allow-remote PREFIX / remote.allow, or set remote.mode: public"
	}
	return "no allowed prefix covers it (remote.mode: allowlist); add a prefix with --allow-remote PREFIX / remote.allow, or set remote.mode: public"
}

// lookup returns the prefix allowing the normalised URL n: the longest
// allowed prefix covering it, else in public mode its publicPrefix; nil when
// none does.
func (f *Fetcher) lookup(n *url.URL) *prefix {
	if pr := matchNormalized(f.prefixes, n); pr != nil {
		return pr
	}
	if f.public {
		return publicPrefix(n)
	}
	return nil
}

// match is lookup for a URL as written (normalised first; one that cannot
// be normalised is allowed by nothing).
func (f *Fetcher) match(u *url.URL) *prefix {
	if pr := match(f.prefixes, u); pr != nil || !f.public || u.User != nil {
		return pr
	}
	n, err := normalize(u)
	if err != nil {
		return nil
	}
	return publicPrefix(n)
}

// dial resolves the host itself and connects only to addresses the policy
// allows, to the address it checked: DNS answers that change between check and
// connect (rebinding), hosts that resolve to private addresses, and redirects to
// them are all refused here, whatever the URL looked like.
func (f *Fetcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pr, _ := ctx.Value(ctxKey{}).(*prefix)
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		rctx, cancel := context.WithTimeout(ctx, dialTimeout)
		ips, err = f.resolve(rctx, host)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	d := net.Dialer{Timeout: dialTimeout}
	var lastErr error
	for _, ip := range ips {
		if !addressAllowed(pr, ip, f.loopbackPublic) {
			why := "that no allowed prefix names (set allowPrivate on the prefix to allow it)"
			if pr != nil && pr.public {
				why = "that no allowed prefix names, and remote.mode: public fetches from public addresses only (to fetch from it, allow a prefix for it with allowPrivate: true in remote.allow)"
			}
			lastErr = &Error{Reason: Refused, Err: fmt.Errorf("%s resolves to %s, a loopback, link-local or private address %s", host, ip.Unmap(), why)}
			continue
		}
		c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
		if err == nil {
			return c, nil
		}
		lastErr = err
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	return nil, lastErr
}

// authTransport adds the credentials of the prefix the request's URL falls
// under, checked per request, so a redirect to another prefix carries that
// prefix's credentials, or none; and it puts the prefix in the context for dial.
type authTransport struct {
	f    *Fetcher
	base http.RoundTripper
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// What is sent is what was matched: the normalised URL (a redirect's
	// Location is matched and sent normalised too).
	n, err := normalize(req.URL)
	if err != nil {
		return nil, errorf(Refused, req.URL.String(), "refused: %v", err)
	}
	pr := t.f.lookup(n)
	if pr == nil {
		return nil, errorf(Refused, req.URL.String(), "%s%s", t.f.uncovered(), pathChange(req.URL.String(), n))
	}
	r := req.Clone(context.WithValue(req.Context(), ctxKey{}, pr))
	r.URL = n
	r.Host = n.Host
	r.Header.Del("Authorization")
	if pr.auth != "" {
		r.Header.Set("Authorization", pr.auth)
	}
	return t.base.RoundTrip(r)
}

// download GETs raw and writes at most max bytes of the body to w. Every
// failure is an *Error with its reason.
func (f *Fetcher) download(ctx context.Context, raw string, max int64, w io.Writer) (int64, error) {
	norm, _, err := f.allowed(raw)
	if err != nil {
		return 0, err
	}
	if err := f.hostDown(norm.String()); err != nil {
		return 0, err
	}
	if err := f.count(raw); err != nil {
		return 0, err
	}
	release, err := f.shared.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	if err := f.hostDown(norm.String()); err != nil { // failed while we waited
		return 0, err
	}
	rctx, cancel := f.runDeadline(ctx)
	defer cancel()
	n, err := f.get(rctx, norm.String(), max, w)
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		err = errorf(TooBig, norm.String(), "fetch budget exceeded: this preview spent %s fetching remote sources", f.run.limits.MaxTime)
	}
	f.run.bytes.Add(n)
	f.noteHost(norm.String(), err)
	return n, err
}

// get is download's request, after the checks.
func (f *Fetcher) get(ctx context.Context, raw string, max int64, w io.Writer) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, f.policy.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return 0, errorf(Invalid, raw, "not a URL")
	}
	req.Header.Set("User-Agent", "driftpreview")
	resp, err := f.client.Do(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, &Error{Reason: Timeout, URL: Redact(raw), Err: fmt.Errorf("no answer within %s", f.policy.Timeout)}
		}
		return 0, classify(raw, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return 0, errorf(NotFound, raw, "HTTP %d", resp.StatusCode)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return 0, errorf(Denied, raw, "HTTP %d (credentials for this prefix go in the remote: block)", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return 0, errorf(Unreachable, raw, "HTTP %d", resp.StatusCode)
	}
	if resp.ContentLength > max {
		return 0, errorf(TooBig, raw, "%s bytes, over the limit of %d", strconv.FormatInt(resp.ContentLength, 10), max)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
	if n > max {
		return n, errorf(TooBig, raw, "more than the limit of %d bytes", max)
	}
	if err != nil {
		if ctx.Err() != nil {
			return n, &Error{Reason: Timeout, URL: Redact(raw), Err: fmt.Errorf("the download did not finish within %s", f.policy.Timeout)}
		}
		return n, classify(raw, err)
	}
	return n, nil
}
