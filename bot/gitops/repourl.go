package gitops

import "strings"

// NormalizeRepoURL reduces the many spellings of one git remote to a single form,
// host/owner/repo in lower case, so that an Application's
// "https://github.com/acme/deploy.git", a Flux GitRepository's
// "ssh://git@github.com/acme/deploy" and an origin remote "git@github.com:acme/deploy"
// are recognised as the same repository.
func NormalizeRepoURL(u string) string {
	s := strings.ToLower(strings.TrimSpace(u))
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	} else if colon := strings.IndexByte(s, ':'); colon >= 0 {
		// scp-like git@host:owner/repo.
		if slash := strings.IndexByte(s, '/'); slash < 0 || colon < slash {
			s = s[:colon] + "/" + s[colon+1:]
		}
	}
	slash := strings.IndexByte(s, '/')
	if slash < 0 {
		slash = len(s)
	}
	host, rest := s[:slash], s[slash:]
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if colon := strings.IndexByte(host, ':'); colon >= 0 {
		host = host[:colon]
	}
	rest = strings.TrimRight(rest, "/")
	rest = strings.TrimSuffix(rest, ".git")
	rest = strings.TrimRight(rest, "/")
	return host + rest
}

// repoMatcher answers whether a URL names this repository.
type repoMatcher map[string]bool

func newRepoMatcher(urls []string) repoMatcher {
	m := repoMatcher{}
	for _, u := range urls {
		if n := NormalizeRepoURL(u); n != "" {
			m[n] = true
		}
	}
	return m
}

func (m repoMatcher) matches(u string) bool { return u != "" && m[NormalizeRepoURL(u)] }
