package remote

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Every URL the fetcher matches against the allowed prefixes, attaches
// credentials to, or fetches goes through normalizeURL first, and what is
// fetched is the normalised URL itself: the text matched and the request sent
// are the same, so a server that normalises paths (decodes %2e, removes dot
// segments, as web servers, CDNs and git hosts do) cannot be led outside a
// prefix by "…/allowed/../evil" or "…/allowed/%2e%2e/evil".
//
// The normalisation is RFC 3986's syntax-based one (§6.2.2):
//   - scheme and host in lower case (§6.2.2.1);
//   - percent-encoded unreserved characters (ALPHA, DIGIT, "-", ".", "_", "~")
//     decoded, other percent-encodings with upper-case hex digits (§6.2.2.1,
//     §6.2.2.2);
//   - dot segments removed (§6.2.2.3, remove_dot_segments of §5.2.4), after
//     the decoding, so "%2e%2e" and "%2E%2e" are ".." too; runs of "/" are
//     made one first, as servers that clean paths (Go's path.Clean, nginx's
//     merge_slashes) read "a//../b" as "b" and RFC 3986 as "a/b".
//
// A path that no normalisation makes unambiguous is refused: an encoded "/"
// (%2F) or "\" (%5C), a raw "\", or an encoded control character. Servers
// disagree on them (some decode %2F to a separator before routing, some treat
// "\" as "/"), so the fetcher cannot know which path a server would serve.

// normalizeURL parses raw and returns its normalised form. User information is
// kept (match refuses it); a fragment is dropped (it is never sent).
func normalizeURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	return normalize(u)
}

// normalize returns u's normalised form (u itself is not changed).
func normalize(u *url.URL) (*url.URL, error) {
	if u.Opaque != "" {
		return nil, errors.New("not a hierarchical URL (scheme://host/path)")
	}
	if u.Host == "" {
		return nil, errors.New("the URL has no host")
	}
	p, err := normalizePath(u.EscapedPath())
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString(strings.ToLower(u.Scheme))
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(u.User.String())
		b.WriteByte('@')
	}
	b.WriteString(strings.ToLower(u.Host))
	b.WriteString(p)
	if u.ForceQuery || u.RawQuery != "" {
		b.WriteByte('?')
		b.WriteString(u.RawQuery)
	}
	n, err := url.Parse(b.String())
	if err != nil {
		return nil, fmt.Errorf("not a URL once normalised: %v", err)
	}
	return n, nil
}

// normalizePath normalises an escaped path (see above); "" stays "".
func normalizePath(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if strings.Contains(p, `\`) {
		return "", errors.New(`its path holds a "\", which some servers read as "/"; write the URL with "/"`)
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(p) || !ishex(p[i+1]) || !ishex(p[i+2]) {
			return "", errors.New("its path holds a malformed percent-encoding")
		}
		v := unhex(p[i+1])<<4 | unhex(p[i+2])
		switch {
		case v == '/' || v == '\\':
			return "", fmt.Errorf("its path holds an encoded %q (%%%s), which some servers decode to a path separator before they route the request; write the URL without it", string(rune(v)), strings.ToUpper(p[i+1:i+3]))
		case v < 0x20 || v == 0x7f:
			return "", fmt.Errorf("its path holds an encoded control character (%%%s)", strings.ToUpper(p[i+1:i+3]))
		case unreserved(v):
			b.WriteByte(v)
		default:
			b.WriteByte('%')
			b.WriteString(strings.ToUpper(p[i+1 : i+3]))
		}
		i += 2
	}
	return removeDotSegments(b.String()), nil
}

// removeDotSegments is RFC 3986 §5.2.4 on a path whose empty segments are
// dropped first: "." segments go, ".." removes the segment before it (never
// above the root), and a path ending in a dot segment or "/" keeps its final
// "/". The result is absolute.
func removeDotSegments(p string) string {
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for _, s := range segs {
		trailing = false
		switch s {
		case "":
			trailing = true
		case ".":
			trailing = true
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = true
		default:
			out = append(out, s)
		}
	}
	r := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		r += "/"
	}
	return r
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// pathChange says, for an error, how normalising raw changed its path ("" when
// it did not).
func pathChange(raw string, n *url.URL) string {
	u, err := url.Parse(raw)
	if err != nil || u.EscapedPath() == n.EscapedPath() {
		return ""
	}
	return fmt.Sprintf(" (its path %s is %s once percent-decoded and without dot segments, RFC 3986 §6.2.2; that is what would be fetched)", u.EscapedPath(), n.EscapedPath())
}
