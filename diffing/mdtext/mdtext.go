package mdtext

import (
	"html"
	"strings"
)

// zwj is the zero-width joiner put after "@", "#" and the other reference
// sigils, and inside "://": invisible, and no host's mention, reference or
// autolink pattern matches across it.
const zwj = "\u200d"

// OneLine folds line breaks into spaces, for text that must stay on one line.
func OneLine(s string) string { return lineFolder.Replace(s) }

var lineFolder = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

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

// Code writes s as an inline code span whatever it holds: delimited by one more
// backtick than the longest run inside, and padded with a space on each side when
// s starts or ends with a backtick, or starts and ends with a space (which
// CommonMark would strip), so the span shows s exactly. Line breaks become
// spaces. Nothing inside a code span is a link, mention or HTML.
func Code(s string) string {
	s = OneLine(s)
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	pad := strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") ||
		(len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "")
	if pad {
		return ticks + " " + s + " " + ticks
	}
	return ticks + s + ticks
}

// Fence wraps content in a fenced code block whose fence is longer than any
// backtick run inside, so no line of content can close it early.
func Fence(content, lang string) string {
	fence := strings.Repeat("`", max(3, longestRun(content, '`')+1))
	if !strings.HasSuffix(content, "\n") {
		content += "\n"
	}
	return fence + lang + "\n" + content + fence + "\n"
}

// sigil reports whether c starts a mention or reference on GitHub or GitLab when
// a name or number follows it: @user, #1, !1 (merge request), ~label, &epic,
// $snippet, %milestone, ^alert. "&" also starts an entity (&#64; is "@").
func sigil(c byte) bool {
	switch c {
	case '@', '#', '!', '~', '&', '$', '%', '^':
		return true
	}
	return false
}

// nameStart reports whether c may follow a sigil in a mention or reference.
func nameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '"' || c == '_' || c == '-' || c == '.' || c >= 0x80
}

// neutral writes s[i] and, when it starts a mention, reference, entity or
// autolink, the zero-width joiner that breaks it. It returns how many bytes of s
// it consumed.
func neutral(b *strings.Builder, s string, i int) int {
	c := s[i]
	switch {
	case c == '@' && i > 0 && isWord(s[i-1]) && !emailDomain(s[i+1:]):
		// name@cluster: not a mention (hosts need a non-word character
		// before "@") nor an email autolink (no dot in what follows).
		b.WriteByte(c)
		return 1
	case sigil(c) && i+1 < len(s) && nameStart(s[i+1]):
		b.WriteByte(c)
		b.WriteString(zwj)
		return 1
	case c == ':' && strings.HasPrefix(s[i:], "://"):
		b.WriteString(":" + zwj + "//")
		return 3
	case (c == 'w' || c == 'W') && len(s)-i >= 4 && strings.EqualFold(s[i:i+4], "www.") && (i == 0 || !isWord(s[i-1])):
		b.WriteString(s[i:i+3] + zwj + ".")
		return 4
	}
	b.WriteByte(c)
	return 1
}

// emailDomain reports whether s starts like the domain of an email address that
// GFM's extended autolinks would link: letters, digits, "-", "_" and at least
// one "." followed by more of them.
func emailDomain(s string) bool {
	dot := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case isWord(c) || c == '-':
		case c == '.' && i > 0 && i+1 < len(s) && (isWord(s[i+1]) || s[i+1] == '-'):
			dot = true
		default:
			return dot
		}
	}
	return dot
}

func isWord(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// mdPunct are the characters Text backslash-escapes: everything that can start
// Markdown inline syntax (emphasis, code, links, images, strikethrough, math,
// HTML, autolinks) and the backslash itself. "|" is left to the table writer,
// which escapes it in cells.
const mdPunct = "\\`*_[]()<>!~$"

// Text writes s as plain text in Markdown: no character of it starts Markdown
// syntax, raw HTML, a mention, a reference or an autolink. Line breaks become
// spaces.
func Text(s string) string {
	s = OneLine(s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '<':
			b.WriteString("&lt;")
			i++
			continue
		case c == '>':
			b.WriteString("&gt;")
			i++
			continue
		case strings.IndexByte(mdPunct, c) >= 0:
			b.WriteByte('\\')
		}
		i += neutral(&b, s, i)
	}
	return b.String()
}

// HTML writes s as text inside an HTML element of the comment (such as
// <summary>): HTML-escaped, on one line, with mentions, references and
// autolinks broken as in Text (hosts link mentions in HTML text too).
func HTML(s string) string {
	s = html.EscapeString(OneLine(s))
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		if s[i] == '&' {
			// An entity html.EscapeString wrote: keep it whole.
			if j := strings.IndexByte(s[i:], ';'); j > 0 && j <= 6 {
				b.WriteString(s[i : i+j+1])
				i += j + 1
				continue
			}
		}
		i += neutral(&b, s, i)
	}
	return b.String()
}

// Line makes s safe as a one-line plain-text field a host shows but does not
// render as Markdown (a check run title, a commit status description): line
// breaks folded, control characters dropped, mentions and references broken.
func Line(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20 || r == 0x7f:
			return -1
		}
		return r
	}, s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		i += neutral(&b, s, i)
	}
	return b.String()
}

// Inline makes a message driftpreview composed (sentences around code spans
// written with Code) safe to place in the comment: code spans are kept as they
// are (a backtick string and the next one of the same length, as CommonMark
// pairs them) and so is emphasis with "*" and "_"; everything else is treated
// as Text treats it, so a PR value that reached the message outside a code
// span, or a code span that a value ended early, shows as text and cannot link,
// embed, mention or write HTML. Line breaks become <br>, so no line of s can
// start a block (a fence, a heading, an HTML block) and a table row stays one row.
func Inline(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			n := runAt(s, i)
			if j := closingRun(s, i+n, n); j >= 0 {
				b.WriteString(s[i : j+n])
				i = j + n
				continue
			}
			// An unmatched run is literal text: escaped, so nothing later
			// pairs with it.
			for range n {
				b.WriteString("\\`")
			}
			i += n
			continue
		case c == '*' || c == '_':
			b.WriteByte(c)
			i++
			continue
		case c == '\r' || c == '\n':
			b.WriteString("<br>")
			if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
			i++
			continue
		case c == '<':
			b.WriteString("&lt;")
			i++
			continue
		case strings.IndexByte(inlinePunct, c) >= 0:
			b.WriteByte('\\')
		}
		i += neutral(&b, s, i)
	}
	return b.String()
}

// inlinePunct are the characters Inline backslash-escapes outside code spans:
// those that make links and images ("[", "]"), math ("$"), and the backslash,
// so that an escape in the input cannot undo one of Inline's. The rest of a
// message's punctuation (parentheses, "!", "~") cannot start a link, image,
// mention or HTML once these are escaped, and stays as written.
const inlinePunct = "\\[]$"

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
