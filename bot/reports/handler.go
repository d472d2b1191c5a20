package reports

import (
	"crypto/hmac"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"time"

	"github.com/driftpreview/driftpreview/bot/report"
)

var idPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// pageCSP is the page's own policy as a header, adding what only a header can
// say: no site may frame the page.
var pageCSP = report.PageCSP + "; frame-ancestors 'none'"

// ServeHTTP serves GET /reports/{id}?exp=…&sig=…: 403 for a signature that does
// not match (a forged, altered or truncated link), 410 once exp has passed,
// 404 when the page is gone (past its retention, or replaced by nothing after a
// page over the cap). The page's own CSP (by hash) still applies; the header
// adds frame-ancestors and keeps caches and referrers out.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	q := r.URL.Query()
	exp, sig := q.Get("exp"), q.Get("sig")
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !idPattern.MatchString(id) || !hmac.Equal([]byte(sig), []byte(s.mac("report-url", id, exp))) {
		http.Error(w, "invalid report link", http.StatusForbidden)
		return
	}
	until, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || !s.opts.Now().Before(time.Unix(until, 0)) {
		http.Error(w, "this report link has expired: the pull request's comment links the latest report", http.StatusGone)
		return
	}
	f, err := os.Open(s.path(id))
	if err != nil {
		http.Error(w, "no report is kept for this link any more (reports are kept for a while, the latest per pull request)", http.StatusNotFound)
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || info.ModTime().Before(s.opts.Now().Add(-s.opts.Retention)) {
		http.Error(w, "no report is kept for this link any more (reports are kept for a while, the latest per pull request)", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	http.ServeContent(w, r, "", info.ModTime(), f)
}
