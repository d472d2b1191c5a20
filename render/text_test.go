package render

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short enough", 20, "short enough"},
		{"exactly ten", 11, "exactly ten"},
		// The limit falls inside "template": the cut goes back to the space.
		{"error calling include: template not found", 30, "error calling include…"},
		// The limit falls right after a word.
		{"one two three", 10, "one two…"},
		// Multi-byte runes are never split.
		{"ünïcödé wörds hérè", 16, "ünïcödé…"},
		// One long word: cut inside it, on a rune boundary.
		{strings.Repeat("é", 10), 8, "éé…"},
	}
	for _, tt := range tests {
		got := Shorten(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if len(got) > tt.max || !utf8.ValidString(got) {
			t.Errorf("Shorten(%q, %d) = %q: %d bytes or invalid UTF-8", tt.in, tt.max, got, len(got))
		}
	}
}
