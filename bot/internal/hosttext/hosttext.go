package hosttext

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultKey is the sticky-comment key used when the caller passes "". Its marker,
// `<!-- driftpreview:sticky v1 -->`, is the one the comment renderer writes.
const DefaultKey = "driftpreview:sticky v1"

// Marker is the hidden first line of the main sticky comment for key.
func Marker(key string) string {
	return "<!-- " + keyOr(key) + " -->"
}

// PageMarker is the hidden first line of follow-up page n (2 for pages[1], ...).
func PageMarker(key string, n int) string {
	return "<!-- " + keyOr(key) + " page " + strconv.Itoa(n) + " -->"
}

// DefaultCheckName is the check run (GitHub) and commit status (GitLab) name the
// adapters use unless told otherwise; its sticky comment keeps DefaultKey.
const DefaultCheckName = "driftpreview"

// CheckKey is the sticky-comment key of the check named name, so jobs with
// different check names (one per cluster, one per directory) each keep their own
// sticky comment: "" (DefaultKey, today's marker, so comments posted before keys
// existed are still found) for DefaultCheckName or "", and otherwise DefaultKey
// followed by " check=" and the name query-escaped. Escaping keeps the marker one
// line that no name can close early ("-->") or make equal to another key's page
// marker (a name ending in " page 2").
func CheckKey(name string) string {
	if name == "" || name == DefaultCheckName {
		return ""
	}
	return DefaultKey + " check=" + url.QueryEscape(name)
}

// KeyOverhead is how many bytes longer key's markers are than the default ones the
// comment renderer writes, which PlanHead replaces: callers that size pages for a
// host's limit take it off the limit so no page gets truncated.
func KeyOverhead(key string) int {
	return len(keyOr(key)) - len(DefaultKey)
}

func keyOr(key string) string {
	if key = strings.TrimSpace(key); key == "" {
		return DefaultKey
	}
	return key
}

// Comment is an existing comment (GitHub issue comment, GitLab note) written by the
// bot, in the order the host lists them (oldest first).
type Comment struct {
	ID   int64
	Body string
}

// OpKind says what to do with one comment.
type OpKind string

// The three operations an upsert can need.
const (
	OpCreate OpKind = "create"
	OpUpdate OpKind = "update"
	OpDelete OpKind = "delete"
)

// Op is one host call of an upsert. Page is 1 for the main comment, n for follow-up n
// and 0 for deletions of duplicates.
type Op struct {
	Kind OpKind
	ID   int64 // existing comment for update and delete
	Page int
	Body string // for create and update
}

// Plan computes the calls that make the bot's comments equal pages: page 1 is the
// main sticky comment, pages[i] is follow-up i+1. Existing comments are matched by
// their first line; an unchanged comment is left alone, duplicates (from a race or a
// crash) are deleted, and follow-ups beyond len(pages) are deleted as stale. Each
// body gets its marker as first line unless it already starts with it. Bodies longer
// than limit bytes are truncated with a visible note.
func Plan(key string, existing []Comment, pages []string, limit int) ([]Op, error) {
	return PlanHead(key, "", existing, pages, limit)
}

// HeadMarker is the hidden second line of every page posted for head: the commit
// the page reports on, which Reconcile reads.
func HeadMarker(head string) string {
	return "<!-- driftpreview:head " + head + " -->"
}

var headRE = regexp.MustCompile(`^<!-- driftpreview:head ([0-9A-Za-z]+) -->$`)

// headOf returns the head commit a page was posted for, from the line after its
// marker; "" when it has none (posted before head markers existed).
func headOf(body string) string {
	lines := strings.SplitN(strings.TrimLeft(body, " \t\r\n"), "\n", 3)
	if len(lines) < 2 {
		return ""
	}
	if m := headRE.FindStringSubmatch(strings.TrimRight(lines[1], " \t\r")); m != nil {
		return m[1]
	}
	return ""
}

// Reconcile returns the deletions that leave exactly one sticky comment of key,
// the one posted for head, with only head's follow-up pages: the adapters list the
// comments again after posting and apply it, so a comment of an older head whose
// POST was already in flight when its job was cancelled (and landed after this
// run listed the comments) does not stay next to the new one. Nothing is deleted
// when head has no main sticky comment among existing (the post did not land).
func Reconcile(key, head string, existing []Comment) []Op {
	if head == "" {
		return nil
	}
	kept := map[int]bool{}
	for _, c := range existing {
		if pageOf(key, c.Body) == 1 && headOf(c.Body) == head {
			kept[0] = true
		}
	}
	if !kept[0] {
		return nil
	}
	var ops []Op
	for _, c := range existing {
		n := pageOf(key, c.Body)
		if n == 0 {
			continue
		}
		if headOf(c.Body) == head && !kept[n] {
			kept[n] = true
			continue
		}
		ops = append(ops, Op{Kind: OpDelete, ID: c.ID, Page: n})
	}
	return ops
}

// PlanHead is Plan for the pages of head: each body gets HeadMarker(head) as its
// second line (none when head is ""), so Reconcile can tell pages of older heads.
func PlanHead(key, head string, existing []Comment, pages []string, limit int) ([]Op, error) {
	if len(pages) == 0 {
		return nil, fmt.Errorf("planning sticky comment %q: no pages to post", keyOr(key))
	}
	byPage := map[int]Comment{}
	var dups []Op
	for _, c := range existing {
		n := pageOf(key, c.Body)
		if n == 0 {
			continue
		}
		if _, seen := byPage[n]; seen {
			dups = append(dups, Op{Kind: OpDelete, ID: c.ID})
			continue
		}
		byPage[n] = c
	}
	var ops []Op
	for i, p := range pages {
		n := i + 1
		marker := Marker(key)
		if n > 1 {
			marker = PageMarker(key, n)
		}
		body := p
		// The renderer starts each page with the default key's marker; any sticky
		// marker line is replaced by this key's.
		if first := firstLine(body); first == marker || pageOf("", body) > 0 {
			_, body, _ = strings.Cut(strings.TrimLeft(body, " \t\r\n"), "\n")
		}
		if head != "" {
			body = HeadMarker(head) + "\n" + body
		}
		body = marker + "\n" + body
		body = Truncate(body, limit)
		c, ok := byPage[n]
		switch {
		case !ok:
			ops = append(ops, Op{Kind: OpCreate, Page: n, Body: body})
		case c.Body != body:
			ops = append(ops, Op{Kind: OpUpdate, ID: c.ID, Page: n, Body: body})
		}
		delete(byPage, n)
	}
	// Whatever is left are follow-ups the new run no longer needs, highest first so
	// the thread never shows a gap.
	stale := make([]int, 0, len(byPage))
	for n := range byPage {
		stale = append(stale, n)
	}
	slices.Sort(stale)
	slices.Reverse(stale)
	for _, n := range stale {
		ops = append(ops, Op{Kind: OpDelete, ID: byPage[n].ID, Page: n})
	}
	return append(ops, dups...), nil
}

var pageRE = regexp.MustCompile(`^<!-- (.+) page ([0-9]+) -->$`)

// pageOf returns 1 for the main comment of key, n for follow-up n, 0 otherwise.
func pageOf(key string, body string) int {
	line := firstLine(body)
	if line == Marker(key) {
		return 1
	}
	m := pageRE.FindStringSubmatch(line)
	if m == nil || m[1] != keyOr(key) {
		return 0
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 2 {
		return 0
	}
	return n
}

func firstLine(s string) string {
	s = strings.TrimLeft(s, " \t\r\n")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \t\r")
}

// TruncatedNote ends a truncated text so a reader knows something is missing.
const TruncatedNote = "\n\n… truncated"

// Truncate cuts s to at most max bytes on a rune boundary, ending with
// TruncatedNote when it cut anything. Bytes are counted, not runes, because that is
// never more than any host's character count. max ≤ 0 means no limit.
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	note := TruncatedNote
	if max <= len(note) {
		note = ""
	}
	return cutRunes(s, max-len(note)) + note
}

// TruncateLine is Truncate for one-line fields (titles, descriptions): it ends with
// "…" instead of a paragraph.
func TruncateLine(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	const ell = "…"
	if max <= len(ell) {
		return cutRunes(s, max)
	}
	return cutRunes(s, max-len(ell)) + ell
}

func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// FirstLine returns the first non-empty line of s, trimmed; the adapters use it to
// read commands such as "/driftpreview rerun" from a comment.
func FirstLine(s string) string { return firstLine(s) }
