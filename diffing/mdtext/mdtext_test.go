package mdtext

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// render converts md as a host does: CommonMark with GFM, raw HTML passed.
func render(t *testing.T, md string) string {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

var codeRE = regexp.MustCompile(`(?s)^<p><code>(.*)</code></p>\n$`)

// TestCode: a code span shows its value exactly, whatever backticks and spaces
// it holds (CommonMark 6.1), as one code element.
func TestCode(t *testing.T) {
	for _, v := range []string{"plain", "a`b", "`x", "x`", "``", "a ``` b", " padded ", " ", "`", "<img src=x> @acme/admins [a](b)", "tab\there"} {
		md := Code(v)
		m := codeRE.FindStringSubmatch(render(t, md))
		if m == nil {
			t.Errorf("Code(%q) = %q does not render as one code span: %s", v, md, render(t, md))
			continue
		}
		if got := html.UnescapeString(m[1]); got != v {
			t.Errorf("Code(%q) = %q shows %q", v, md, got)
		}
	}
	if got := Code("line\nbreak"); got != "`line break`" {
		t.Errorf("Code folds lines: %q", got)
	}
}

// TestFence: no line of the content closes the fence.
func TestFence(t *testing.T) {
	content := "a\n```\n<img src=x>\n````\nb"
	got := render(t, Fence(content, "diff"))
	if !strings.HasPrefix(got, `<pre><code class="language-diff">`) || strings.Count(got, "<pre>") != 1 || strings.Contains(got, "<img") {
		t.Errorf("fence broken: %s", got)
	}
}

func TestEscapers(t *testing.T) {
	const zwj = "\u200d"
	tests := []struct {
		name, got, want string
	}{
		{"text link", Text("[Approve](https://e.example/a)"), `\[Approve\]\(https:` + zwj + `//e.example/a\)`},
		{"text image", Text("![x](y)"), `\!\[x\]\(y\)`},
		{"text html", Text("<img src=x>"), "&lt;img src=x&gt;"},
		{"text mention", Text("@acme/admins and #12"), "@" + zwj + "acme/admins and #" + zwj + "12"},
		{"text gitlab refs", Text("!3 ~bug %m1 &5 $7"), `\!` + zwj + "3 " + `\~` + zwj + "bug %" + zwj + "m1 &" + zwj + `5 \$` + zwj + "7"},
		{"text entity", Text("&#64;acme"), "&#" + zwj + "64;acme"},
		{"text www", Text("see www.e.example"), "see www" + zwj + ".e.example"},
		{"text emphasis", Text("a_b*c"), `a\_b\*c`},
		{"text name@cluster", Text("tenant@production"), "tenant@production"},
		{"text email", Text("ops@example.com"), "ops@" + zwj + "example.com"},
		{"text newline", Text("a\nb"), "a b"},
		{"html", HTML(`<b>"x"</b> @acme`), "&lt;b&gt;&#34;x&#34;&lt;/b&gt; @" + zwj + "acme"},
		{"line", Line("failed: @acme/admins\n#1\x00"), "failed: @" + zwj + "acme/admins #" + zwj + "1"},
		{"inline keeps code", Inline("`<img>` and *emphasis*"), "`<img>` and *emphasis*"},
		{"inline link", Inline(`fail "[Approve](https://e.example) @acme/admins"`), `fail "\[Approve\](https:` + zwj + `//e.example) @` + zwj + `acme/admins"`},
		{"inline unmatched", Inline("a ` b"), "a \\` b"},
		{"inline backslash", Inline(`\[x](y)`), `\\\[x\](y)`},
		{"inline html", Inline("<details>"), "&lt;details>"},
		{"inline newline", Inline("a\nb"), "a<br>b"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// TestEscapersRenderInert renders each writer's output of hostile input and
// finds no link, image or HTML element in it.
func TestEscapersRenderInert(t *testing.T) {
	const in = "x` [Approve](https://e.example/a) ![i](https://e.example/i.png) <img src=x> <details> https://e.example www.e.example ops@e.example `"
	for name, md := range map[string]string{
		"Text": Text(in), "Inline": Inline(in), "Code": Code(in), "Inline with code": Inline("value " + Code(in) + " and " + in),
		"HTML": "<details><summary>" + HTML(in) + "</summary>\n\nx\n</details>",
	} {
		out := render(t, md)
		for _, bad := range []string{"<a ", "<img", "<details>\n<summary", "<details> "} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: rendered %q holds %q:\n%s", name, md, bad, out)
			}
		}
	}
}
