package report

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
	"github.com/driftpreview/driftpreview/render"
)

// summaryCounts writes a target's object counts as the comment's and the
// terminal's section summaries do: "2 modified · 1 deleted · 3 unchanged", or
// "1 object changed" when the counts are all zero.
func summaryCounts(s diffing.Summary, changed int) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{s.Created, "created"}, {s.Modified, "modified"}, {s.Deleted, "deleted"}, {s.Unchanged, "unchanged"}} {
		if p.n > 0 {
			parts = append(parts, thousands(p.n)+" "+p.what)
		}
	}
	if len(parts) == 0 {
		return plural(changed, "object changed", "objects changed")
	}
	return strings.Join(parts, " · ")
}

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

// The writers below are mdtext's, the one escaper for every string a pull request
// controls: every such string reaches the comment through one of them.

// fenced wraps content in a code fence that no line of it can close.
func fenced(content, lang string) string { return mdtext.Fence(content, lang) }

// codeSpan writes s as inline code whatever backticks it holds.
func codeSpan(s string) string { return mdtext.Code(s) }

// oneLine folds line breaks into spaces, for text that must stay on one line.
func oneLine(s string) string { return mdtext.OneLine(s) }

// text writes a name or kind as plain text: no Markdown, HTML, mention or link.
func text(s string) string { return mdtext.Text(s) }

var cellEscaper = strings.NewReplacer("|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

// cell escapes text for a GitHub-flavoured Markdown table cell: a pipe would end
// the cell (even inside a code span) and a line break would end the row.
func cell(s string) string {
	return cellEscaper.Replace(strings.TrimSpace(s))
}

// inlineMD keeps a message's code spans and emphasis, and shows everything else
// as text: no link, image, mention, reference or raw HTML from a value that
// reached the message (mdtext.Inline).
func inlineMD(s string) string { return mdtext.Inline(s) }

// esc escapes text placed inside HTML such as <summary>.
func esc(s string) string { return mdtext.HTML(s) }

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
	return text(k.Kind) + " " + codeSpan(objectName(k))
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
