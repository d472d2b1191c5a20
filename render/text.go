package render

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends a text that Shorten cut.
const Ellipsis = "…"

// Shorten caps s at max bytes for a message (a render or API error quoted in a PR
// comment). A longer s is cut at the last space before the limit and ends with
// Ellipsis, so no word and no UTF-8 character is split; only text with no space at
// all before the limit is cut inside its one word, still on a rune boundary. The
// result is at most max bytes.
func Shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(Ellipsis)
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	cut := s[:n]
	if r, _ := utf8.DecodeRuneInString(s[n:]); !unicode.IsSpace(r) {
		// The limit falls inside a word: end at the space before it.
		if i := strings.LastIndexFunc(cut, unicode.IsSpace); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimRightFunc(cut, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' || r == ':' }) + Ellipsis
}
