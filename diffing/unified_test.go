package diffing

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func lines(n int, f func(i int) string) string {
	var sb strings.Builder
	for i := 1; i <= n; i++ {
		sb.WriteString(f(i))
		sb.WriteByte('\n')
	}
	return sb.String()
}

func TestUnified(t *testing.T) {
	plain := func(i int) string { return "line" + itoa(i) }
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{name: "equal", a: "a\nb\n", b: "a\nb\n", want: ""},
		{
			name: "one change keeps three lines of context",
			a:    lines(10, plain),
			b: lines(10, func(i int) string {
				if i == 5 {
					return "CHANGED"
				}
				return plain(i)
			}),
			want: "@@ -2,7 +2,7 @@\n line2\n line3\n line4\n-line5\n+CHANGED\n line6\n line7\n line8\n",
		},
		{
			name: "distant changes make two hunks",
			a:    lines(20, plain),
			b: lines(20, func(i int) string {
				switch i {
				case 2:
					return "TWO"
				case 18:
					return "EIGHTEEN"
				}
				return plain(i)
			}),
			want: "@@ -1,5 +1,5 @@\n line1\n-line2\n+TWO\n line3\n line4\n line5\n" +
				"@@ -15,6 +15,6 @@\n line15\n line16\n line17\n-line18\n+EIGHTEEN\n line19\n line20\n",
		},
		{
			name: "close changes share one hunk",
			a:    lines(12, plain),
			b: lines(12, func(i int) string {
				switch i {
				case 3, 8:
					return "X" + itoa(i)
				}
				return plain(i)
			}),
			want: "@@ -1,11 +1,11 @@\n line1\n line2\n-line3\n+X3\n line4\n line5\n line6\n line7\n-line8\n+X8\n line9\n line10\n line11\n",
		},
		{
			name: "created object",
			a:    "",
			b:    "kind: ConfigMap\nname: x\n",
			want: "@@ -0,0 +1,2 @@\n+kind: ConfigMap\n+name: x\n",
		},
		{
			name: "deleted object",
			a:    "kind: ConfigMap\n",
			b:    "",
			want: "@@ -1 +0,0 @@\n-kind: ConfigMap\n",
		},
		{
			name: "insertion",
			a:    "a\nb\nc\n",
			b:    "a\nb\nnew\nc\n",
			want: "@@ -1,3 +1,4 @@\n a\n b\n+new\n c\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, unified(tt.a, tt.b)); diff != "" {
				t.Errorf("unified (-want +got):\n%s", diff)
			}
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestSimilarity(t *testing.T) {
	if got := similarity("a\nb\nc\nd\n", "a\nb\nc\nd\n"); got != 1 {
		t.Errorf("identical texts: similarity %v, want 1", got)
	}
	if got := similarity("a\nb\nc\nd\n", "w\nx\ny\nz\n"); got != 0 {
		t.Errorf("disjoint texts: similarity %v, want 0", got)
	}
	if got := similarity("a\nb\nc\nd\n", "a\nb\nc\nX\n"); got != 0.75 {
		t.Errorf("one of four lines changed: similarity %v, want 0.75", got)
	}
}
