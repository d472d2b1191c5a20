package report

import (
	"net/url"
	"strings"
)

// reportLink is the comment's line that links the full report page (HTML), or
// "" when there is none or its URL is not an absolute http(s) URL. The URL is
// the caller's (server config, CI variables), never the PR's; it is still
// written so no character of it can end the link early.
func reportLink(o Options) string {
	u, err := url.Parse(o.ReportURL)
	if o.ReportURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return ""
	}
	href := strings.NewReplacer("(", "%28", ")", "%29", " ", "%20", "<", "%3C", ">", "%3E").Replace(u.String())
	if o.ReportArtifact {
		return "\n📄 **Full report** (every target, finding and diff, with filters): download it from [this run's artifacts](" + href + ").\n"
	}
	return "\n📄 **[Full report](" + href + ")**: every target, finding and diff, with filters and side-by-side diffs.\n"
}
