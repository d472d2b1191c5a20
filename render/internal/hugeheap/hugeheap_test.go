package hugeheap

import "testing"

func TestParseMode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"always [madvise] never\n", "madvise"},
		{"[always] madvise never\n", "always"},
		{"always madvise [never]\n", "never"},
		{"always madvise never\n", ""},
		{"", ""},
		{"[]\n", ""},
	} {
		if got := parseMode(c.in); got != c.want {
			t.Errorf("parseMode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
