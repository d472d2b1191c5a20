package remote

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"time"
)

// Mode says what a Policy lets be fetched besides its allowed prefixes.
type Mode string

// The modes. In a Go value the empty Mode is ModeAllowlist, so the zero
// Policy allows nothing; the server config's remote: block and the CLI, which
// default to DefaultMode, set it.
const (
	// ModePublic fetches what the controllers would fetch: every http://,
	// https:// and oci:// URL whose host resolves to public addresses only
	// (checked when it is dialled, redirects and DNS answers included),
	// without credentials; URLs under an allowed prefix get that prefix's
	// credentials and allowPrivate.
	ModePublic Mode = "public"
	// ModeAllowlist fetches only URLs under an allowed prefix.
	ModeAllowlist Mode = "allowlist"
	// ModeOff fetches nothing.
	ModeOff Mode = "off"
)

// DefaultMode is the mode of the server config and the CLI when they name none.
const DefaultMode = ModePublic

// Policy says what may be fetched. The zero Policy allows nothing: every fetch is
// refused until a prefix is allowed or the mode is public. It comes from the
// server config's remote: block or the CLI (--remote-mode, --offline,
// --allow-remote, --remote-config), never from the repository being previewed,
// so a pull request can add neither credentials nor a private address.
type Policy struct {
	// Mode is public, allowlist or off (see Mode); "" is allowlist.
	Mode Mode `yaml:"mode" json:"mode"`
	// Allow lists the URL prefixes that may be fetched. A URL matches a prefix
	// when scheme and host (with port) are equal and its path starts with the
	// prefix's path at a segment boundary. Redirects are checked again.
	Allow []Prefix `yaml:"allow" json:"allow"`
	// Timeout caps each download, from the request to the last byte (default 60 s).
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// MaxIndexBytes caps a Helm repository index.yaml (default 50 MiB, Flux
	// source-controller's helm.MaxIndexSize).
	MaxIndexBytes int64 `yaml:"maxIndexBytes" json:"maxIndexBytes"`
	// MaxArchiveBytes caps a downloaded archive (default 10 MiB, Flux
	// source-controller's helm.MaxChartSize).
	MaxArchiveBytes int64 `yaml:"maxArchiveBytes" json:"maxArchiveBytes"`
	// MaxUnpackedBytes, MaxUnpackedFileBytes and MaxFiles cap what an archive
	// unpacks to (defaults 100 MiB, 5 MiB and 10000: Helm's
	// loader.MaxDecompressedChartSize and MaxDecompressedFileSize, and a count
	// of entries: files and directories together, the directories a file's
	// path implies included).
	MaxUnpackedBytes     int64 `yaml:"maxUnpackedBytes" json:"maxUnpackedBytes"`
	MaxUnpackedFileBytes int64 `yaml:"maxUnpackedFileBytes" json:"maxUnpackedFileBytes"`
	MaxFiles             int   `yaml:"maxFiles" json:"maxFiles"`
	// CacheDir is the on-disk cache (under the work dir); CacheMaxBytes bounds it
	// (default 1 GiB; a directory counts as 4 KiB), least recently used entries
	// go first, and a fill that would pass the bound with entries in use is
	// refused, so the cache never holds more.
	CacheDir      string `yaml:"cacheDir" json:"cacheDir"`
	CacheMaxBytes int64  `yaml:"cacheMaxBytes" json:"cacheMaxBytes"`
	// IndexTTL is how long a fetched index.yaml is reused (default 5 minutes), so
	// the base and head of one preview resolve ranges against the same index.
	IndexTTL time.Duration `yaml:"indexTTL" json:"indexTTL"`
	// MaxConcurrentDownloads caps the downloads in flight at once, over all
	// previews (default 4); each URL has a lock of its own, so one slow
	// repository holds up only what waits for it.
	MaxConcurrentDownloads int `yaml:"maxConcurrentDownloads" json:"maxConcurrentDownloads"`
	// MaxIndexMemoBytes bounds the parsed Helm indexes kept in memory for
	// IndexTTL (default 64 MiB, estimated); least recently used go first.
	MaxIndexMemoBytes int64 `yaml:"maxIndexMemoBytes" json:"maxIndexMemoBytes"`
}

// Prefix is one allowed URL prefix, with the credentials sent to URLs under it.
// Credentials are read from files (mounted secrets) when the Fetcher is built,
// and never appear in errors or logs.
type Prefix struct {
	URL string `yaml:"url" json:"url"`
	// UsernameFile and PasswordFile give HTTP basic auth; TokenFile a bearer token.
	UsernameFile string `yaml:"usernameFile,omitempty" json:"usernameFile,omitempty"`
	PasswordFile string `yaml:"passwordFile,omitempty" json:"passwordFile,omitempty"`
	TokenFile    string `yaml:"tokenFile,omitempty" json:"tokenFile,omitempty"`
	// AllowPrivate lets this prefix's host resolve to loopback, link-local or
	// private addresses (an in-house chart repository). A prefix whose host is
	// such an IP literal ("http://127.0.0.1:8080/") or "localhost" allows its own
	// address without it.
	AllowPrivate bool `yaml:"allowPrivate,omitempty" json:"allowPrivate,omitempty"`
}

// Defaults applied by NewFetcher to zero fields.
const (
	DefaultTimeout              = 60 * time.Second
	DefaultMaxIndexBytes        = 50 << 20
	DefaultMaxArchiveBytes      = 10 << 20
	DefaultMaxUnpackedBytes     = 100 << 20
	DefaultMaxUnpackedFileBytes = 5 << 20
	DefaultMaxFiles             = 10000
	DefaultCacheMaxBytes        = 1 << 30
	DefaultIndexTTL             = 5 * time.Minute
)

func (p Policy) withDefaults() Policy {
	if p.Timeout <= 0 {
		p.Timeout = DefaultTimeout
	}
	if p.MaxIndexBytes <= 0 {
		p.MaxIndexBytes = DefaultMaxIndexBytes
	}
	if p.MaxArchiveBytes <= 0 {
		p.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if p.MaxUnpackedBytes <= 0 {
		p.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	}
	if p.MaxUnpackedFileBytes <= 0 {
		p.MaxUnpackedFileBytes = DefaultMaxUnpackedFileBytes
	}
	if p.MaxFiles <= 0 {
		p.MaxFiles = DefaultMaxFiles
	}
	if p.CacheMaxBytes <= 0 {
		p.CacheMaxBytes = DefaultCacheMaxBytes
	}
	if p.IndexTTL <= 0 {
		p.IndexTTL = DefaultIndexTTL
	}
	if p.MaxConcurrentDownloads <= 0 {
		p.MaxConcurrentDownloads = DefaultMaxConcurrentDownloads
	}
	if p.MaxIndexMemoBytes <= 0 {
		p.MaxIndexMemoBytes = DefaultMaxIndexMemoBytes
	}
	return p
}

// Enabled says whether the policy allows anything at all: public mode, or
// allowed prefixes in allowlist mode.
func (p Policy) Enabled() bool {
	switch p.Mode {
	case ModeOff:
		return false
	case ModePublic:
		return true
	}
	return len(p.Allow) > 0
}

// Validate checks the mode and the prefixes: absolute http(s) URLs without
// credentials, query or fragment (credentials go in files).
func (p Policy) Validate() error {
	var errs []error
	switch p.Mode {
	case "", ModePublic, ModeAllowlist, ModeOff:
	default:
		errs = append(errs, fmt.Errorf("remote.mode: %q is not public, allowlist or off", p.Mode))
	}
	for i, a := range p.Allow {
		if _, err := parsePrefix(a.URL); err != nil {
			errs = append(errs, fmt.Errorf("remote.allow[%d]: %w", i, err))
		}
		if a.TokenFile != "" && (a.UsernameFile != "" || a.PasswordFile != "") {
			errs = append(errs, fmt.Errorf("remote.allow[%d] (%s): give tokenFile or usernameFile/passwordFile, not both", i, Redact(a.URL)))
		}
		if (a.UsernameFile == "") != (a.PasswordFile == "") {
			errs = append(errs, fmt.Errorf("remote.allow[%d] (%s): usernameFile and passwordFile go together", i, Redact(a.URL)))
		}
	}
	return errors.Join(errs...)
}

type prefix struct {
	Prefix
	scheme, host, path string // host lower-case with explicit port
	auth               string // the Authorization header value, or ""
	literal            netip.Addr
	localhost          bool
	// public marks the prefix public mode makes for a URL no allowed prefix
	// covers: its host only, no credentials, public addresses only.
	public bool
}

// publicPrefix is what public mode allows u (normalised) by: its scheme and
// host, nothing else; nil for other schemes and URLs with user info.
func publicPrefix(u *url.URL) *prefix {
	switch u.Scheme {
	case "http", "https", "oci":
	default:
		return nil
	}
	if u.User != nil || u.Host == "" {
		return nil
	}
	return &prefix{scheme: u.Scheme, host: hostPort(u), public: true}
}

func parsePrefix(raw string) (*prefix, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL", Redact(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci" {
		return nil, fmt.Errorf("%q: only http://, https:// and oci:// (registries) prefixes can be allowed", Redact(raw))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", Redact(raw))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q: a prefix has no credentials, query or fragment (put credentials in usernameFile/passwordFile/tokenFile)", Redact(raw))
	}
	n, err := normalize(u)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", Redact(raw), err)
	}
	if n.EscapedPath() != u.EscapedPath() && n.EscapedPath() != u.EscapedPath()+"/" {
		return nil, fmt.Errorf("%q: write the prefix in its normalised form, %s (percent-decoded unreserved characters, no dot segments or empty segments, RFC 3986 §6.2.2): it is compared with URLs in that form", Redact(raw), Redact(n.String()))
	}
	p := &prefix{scheme: n.Scheme, host: hostPort(n), path: strings.TrimSuffix(n.EscapedPath(), "/")}
	h := strings.ToLower(u.Hostname())
	if a, err := netip.ParseAddr(h); err == nil {
		p.literal = a.Unmap()
	}
	p.localhost = h == "localhost"
	return p, nil
}

// hostPort is the URL's host, lower-case, with the scheme's default port made
// explicit, so https://x and https://x:443 match.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// match returns the longest prefix allowing u, or nil. u is normalised first
// (normalize), so "…/allowed/../evil" and "…/allowed/%2e%2e/evil" are compared
// as "…/evil"; a URL that cannot be normalised matches nothing. Callers fetch
// the normalised URL (normalize), never u as written.
func match(prefixes []*prefix, u *url.URL) *prefix {
	if u.User != nil {
		return nil
	}
	n, err := normalize(u)
	if err != nil {
		return nil
	}
	return matchNormalized(prefixes, n)
}

// matchNormalized is match for a URL normalize returned.
func matchNormalized(prefixes []*prefix, u *url.URL) *prefix {
	if u.User != nil {
		return nil
	}
	var best *prefix
	host := hostPort(u)
	p := u.EscapedPath()
	for _, pr := range prefixes {
		if pr.scheme != u.Scheme || pr.host != host {
			continue
		}
		if pr.path != "" && p != pr.path && !strings.HasPrefix(p, pr.path+"/") {
			continue
		}
		if best == nil || len(pr.path) > len(best.path) {
			best = pr
		}
	}
	return best
}

// addressAllowed says whether the fetcher may connect to ip for a URL allowed by
// pr: public addresses always; loopback, link-local, private, unspecified,
// multicast and other special ranges only when pr names them (AllowPrivate, the
// address as the prefix's host, or localhost for a loopback address), never
// for public mode's prefixes. loopbackPublic (tests only, see
// export_test.go and remotetest) counts loopback addresses as public.
func addressAllowed(pr *prefix, ip netip.Addr, loopbackPublic bool) bool {
	ip = ip.Unmap()
	if publicAddr(ip) || loopbackPublic && ip.IsLoopback() {
		return true
	}
	switch {
	case pr == nil || pr.public:
		return false
	case pr.AllowPrivate:
		return true
	case pr.literal.IsValid() && pr.literal == ip:
		return true
	case pr.localhost && ip.IsLoopback():
		return true
	}
	return false
}

// special lists ranges that are not public although Go's predicates do not
// name them: carrier-grade NAT, benchmarking, documentation, IPv4/IPv6
// translation and the like.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
}

func publicAddr(ip netip.Addr) bool {
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, s := range special {
		if s.Contains(ip) {
			return false
		}
	}
	return true
}

// readSecret reads a credential file, trimmed of surrounding white space.
func readSecret(file, what string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		// The path is configuration, not a secret; the content never appears.
		return "", fmt.Errorf("reading the %s file %s: %w", what, file, errors.Unwrap(err))
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return "", fmt.Errorf("the %s file %s is empty", what, file)
	}
	return s, nil
}
