package report

import (
	"html"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// plural writes "1 error", "3 errors".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// thousands writes 65536 as "65,536", as the cut notes do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// longestRun is the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// fenced wraps content in a code fence longer than any backtick run inside it, so
// that a diff holding ``` cannot close the fence early.
func fenced(content, lang string) string {
	fence := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return fence + lang + "\n" + content + fence + "\n"
}

// codeSpan writes s as inline code whatever backticks it holds.
func codeSpan(s string) string {
	s = oneLine(s)
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// oneLine folds line breaks into spaces, for text that must stay on one line.
func oneLine(s string) string {
	return lineFolder.Replace(s)
}

var (
	lineFolder  = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
	cellEscaper = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")
)

// cell escapes text for a GitHub-flavoured Markdown table cell: a pipe would end
// the cell (even inside a code span) and a line break would end the row.
func cell(s string) string {
	return cellEscaper.Replace(strings.TrimSpace(s))
}

// inlineMD keeps a message's Markdown (code spans, emphasis) but escapes "<"
// outside code spans, so that a value such as <none> is shown rather than eaten
// by the host's HTML sanitizer.
func inlineMD(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch s[i] {
		case '`':
			n := runAt(s, i)
			if j := closingRun(s, i+n, n); j >= 0 {
				b.WriteString(s[i : j+n])
				i = j + n
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
		case '<':
			b.WriteString("&lt;")
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// runAt is the length of the backtick run starting at s[i].
func runAt(s string, i int) int {
	n := 0
	for i+n < len(s) && s[i+n] == '`' {
		n++
	}
	return n
}

// closingRun finds the next run of exactly n backticks at or after from.
func closingRun(s string, from, n int) int {
	for i := from; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		m := runAt(s, i)
		if m == n {
			return i
		}
		i += m
	}
	return -1
}

// esc escapes text placed inside HTML such as <summary>.
func esc(s string) string { return html.EscapeString(oneLine(s)) }

// shortRev shortens a commit SHA; a ref name such as "main" stays as it is.
func shortRev(rev string, n int) string {
	if len(rev) <= n || len(rev) < 12 {
		return rev
	}
	for i := 0; i < len(rev); i++ {
		c := rev[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return rev
		}
	}
	return rev[:n]
}

// objectName is ns/name, or name for cluster-scoped objects.
func objectName(k render.ObjectKey) string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + "/" + k.Name
}

// objectMD is an object as the table shows it: Kind `ns/name`.
func objectMD(k render.ObjectKey) string {
	return k.Kind + " " + codeSpan(objectName(k))
}

// objectHTML is an object inside a <summary>: Kind ns/name.
func objectHTML(k render.ObjectKey) string {
	return esc(k.Kind + " " + objectName(k))
}

// sevEmoji is the colour the headline and the table use for a severity.
func sevEmoji(s diffing.Severity) string {
	switch s {
	case diffing.SeverityError:
		return "🔴"
	case diffing.SeverityWarning:
		return "🟠"
	}
	return "⚪"
}

// truncateBytes cuts s to at most n bytes at a rune boundary.
func truncateBytes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
