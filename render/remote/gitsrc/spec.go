package gitsrc

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Spec is a remote kustomize base: the repository to clone, the directory in it,
// and the ref to check out ("" means the remote's HEAD, as kustomize does).
type Spec struct {
	// Raw is the reference as the kustomization wrote it.
	Raw string
	// RepoURL is scheme://host[:port]/path of the repository, without user.
	RepoURL string
	// Path is the base's directory inside the repository ("" for its root).
	Path string
	Ref  string
}

// Pinned reports whether the ref names a commit (40 or 64 hex digits): the
// only kind of ref whose content cannot move between base and head.
func (s Spec) Pinned() bool { return commitRE.MatchString(s.Ref) }

var commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

var userRE = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9-]*)@`)

// ParseKustomize reads a kustomize remote reference as kustomize's
// NewRepoSpecFromURL does, for the forms this package fetches (https, http and
// the scheme-less github.com/… form, which kustomize fetches over https).
// Other forms (ssh://, git@host:…, file://) are an error saying why they are
// not fetched.
func ParseKustomize(raw string) (Spec, error) {
	s := Spec{Raw: raw}
	n, query, _ := strings.Cut(raw, "?")
	if q, err := url.ParseQuery(query); err == nil {
		// kustomize: ref wins over version; timeout and submodules are ignored
		// here (our own timeout applies, and submodules are never fetched).
		s.Ref = q.Get("version")
		if r := q.Get("ref"); r != "" {
			s.Ref = r
		}
	}
	if strings.HasPrefix(strings.ToLower(n), "git::") {
		n = n[len("git::"):] // kustomize strips the forced-git prefix too
	}
	lower := strings.ToLower(n)
	var scheme string
	switch {
	case strings.HasPrefix(lower, "https://"):
		scheme, n = "https://", n[len("https://"):]
	case strings.HasPrefix(lower, "http://"):
		scheme, n = "http://", n[len("http://"):]
	case strings.HasPrefix(lower, "ssh://"), userRE.MatchString(n) && !strings.Contains(n, "://"):
		return s, fmt.Errorf("remote base %q is fetched over ssh, which driftpreview does not do (it holds no ssh keys); use an https:// URL the remote policy allows", raw)
	case strings.HasPrefix(lower, "file://"):
		return s, fmt.Errorf("remote base %q is a file:// URL, which is never fetched; refer to the directory by a relative path", raw)
	case strings.HasPrefix(lower, "github.com/"):
		// kustomize normalises the scheme-less github.com form to https.
		scheme = "https://"
	case strings.Contains(n, "://"):
		return s, fmt.Errorf("remote base %q has an unsupported scheme (want https://)", raw)
	default:
		return s, fmt.Errorf("remote base %q names no scheme; kustomize cannot fetch it either (want https://host/org/repo//path?ref=…)", raw)
	}
	if u := userRE.FindString(n); u != "" {
		n = n[len(u):] // a user name is never sent; credentials come from the config
	}
	host, rest, ok := strings.Cut(n, "/")
	if !ok || host == "" {
		return s, fmt.Errorf("remote base %q: no repository path after the host", raw)
	}
	repoPath, sub, ok := splitRepo(rest)
	if !ok || repoPath == "" {
		return s, fmt.Errorf("remote base %q: cannot tell the repository from the path in it (mark the end of the repository with // as in https://host/org/repo//path)", raw)
	}
	sub = strings.Trim(sub, "/")
	if sub != "" {
		c := path.Clean(sub)
		if c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(sub, "/") {
			return s, fmt.Errorf("remote base %q: the path leaves the repository", raw)
		}
		sub = c
		if sub == "." {
			sub = ""
		}
	}
	s.RepoURL, s.Path = scheme+strings.ToLower(host)+"/"+repoPath, sub
	if strings.HasPrefix(s.Ref, "-") {
		return s, fmt.Errorf("remote base %q: ref %q is not a ref", raw, s.Ref)
	}
	return s, nil
}

// splitRepo is kustomize's parsePathParts: "_git/" (Azure), "//" or ".git"
// mark the end of the repository; else it is the first two segments.
func splitRepo(n string) (repo, sub string, ok bool) {
	if i := strings.Index(n, "_git/"); i >= 0 {
		segs := strings.Split(n[i+len("_git/"):], "/")
		return n[:i+len("_git/")] + segs[0], strings.Join(segs[1:], "/"), true
	}
	if i := strings.Index(n, "//"); i >= 0 {
		return n[:i], n[i+2:], true
	}
	if i := strings.Index(n, ".git"); i >= 0 {
		return n[:i+len(".git")], n[i+len(".git"):], true
	}
	segs := strings.Split(n, "/")
	if len(segs) < 2 {
		return "", "", false
	}
	return strings.Join(segs[:2], "/"), strings.Join(segs[2:], "/"), true
}
