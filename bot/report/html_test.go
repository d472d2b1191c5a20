package report

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

// TestHTMLGolden: the report page of the comment goldens' reports, byte for byte,
// the same for the same report whatever the order of its findings and changes.
func TestHTMLGolden(t *testing.T) {
	tests := []struct {
		name   string
		report *diffing.Report
	}{
		{"example", exampleReport()},
		{"render-error", renderErrorReport()},
		{"no-targets", &diffing.Report{Base: "main", Head: "dev", GeneratedAt: generatedAt}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := HTML(tt.report)
			if err != nil {
				t.Fatal(err)
			}
			cp := *tt.report
			cp.Targets = slices.Clone(cp.Targets)
			for i := range cp.Targets {
				cp.Targets[i].Findings = slices.Clone(cp.Targets[i].Findings)
				cp.Targets[i].Changes = slices.Clone(cp.Targets[i].Changes)
				slices.Reverse(cp.Targets[i].Findings)
				slices.Reverse(cp.Targets[i].Changes)
			}
			again, err := HTML(&cp)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, again) {
				t.Errorf("HTML depends on input order (-first +reordered):\n%s", cmp.Diff(string(got), string(again)))
			}
			assertPageInert(t, tt.name, got)
			// The embedded style and script stand in the golden by name: they are
			// checked where they run (TestHTMLInBrowser), not copied into each golden.
			got = bytes.Replace(got, []byte(pageCSS), []byte("/* page/report.css */"), 1)
			got = bytes.Replace(got, []byte(pageJS), []byte("/* page/report.js */"), 1)
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.html"), got)
		})
	}
}

// TestHTMLHasEverything: the page holds every finding and every changed object
// of every target, with its diff in both views, where the comment cuts them.
func TestHTMLHasEverything(t *testing.T) {
	r := bigReport(60)
	md := Markdown(r, Options{MaxChars: 4000})
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	doc := parsePage(t, page)
	changes := 0
	for i := range r.Targets {
		for _, c := range r.Targets[i].Changes {
			if c.Diff != "" || c.LiveDiff != "" || c.Action != diffing.ActionUnchanged {
				changes++
			}
		}
	}
	if got := countElems(doc, func(n *html.Node) bool { return n.DataAtom == atom.Details && hasAttr(n, "data-filter") }); got != changes {
		t.Errorf("page has %d changed objects, the report %d", got, changes)
	}
	if got := countElems(doc, func(n *html.Node) bool { return n.DataAtom == atom.Table && attr(n, "class") == "diff split" }); got < changes {
		t.Errorf("page has %d side-by-side diffs for %d changed objects", got, changes)
	}
	if strings.Contains(string(page), "cut to fit") || !strings.Contains(md, "cut") {
		t.Errorf("the comment should be cut at 4,000 characters and the page not")
	}
}

// TestHTMLMasksSecrets runs a Secret change through the real differ (data,
// stringData and the last-applied annotation carrying the values) and looks for
// the values, plain and base64, anywhere in the page: the page shows what every
// output shows, "(hidden …)", because masking happens in diffing before any
// writer.
func TestHTMLMasksSecrets(t *testing.T) {
	const before, after = "hunter2-before-value", "s3cr3t-after-value"
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	base := obj(t, "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: app\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: '{\"data\":{\"password\":\""+b64(before)+"\"}}'\ndata:\n  password: "+b64(before)+"\nstringData:\n  token: "+before+"\n")
	head := edit(base, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, b64(after), "data", "password")
		_ = unstructured.SetNestedField(u.Object, after, "stringData", "token")
		u.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"data":{"password":"` + b64(after) + `"}}`})
	})
	r := report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base), Head: objs(head)}))
	page, err := HTML(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{before, after, b64(before), b64(after)} {
		if bytes.Contains(page, []byte(v)) {
			t.Errorf("the page holds the Secret value %q", v)
		}
	}
	if !bytes.Contains(page, []byte("Secret app/db-creds")) || !bytes.Contains(page, []byte("(hidden")) {
		t.Errorf("the page does not show the Secret's change with hidden values:\n%s", page)
	}
}

func TestMessageSpans(t *testing.T) {
	tests := []struct {
		in   string
		want []htmlSpan
	}{
		{"plain", []htmlSpan{{Text: "plain"}}},
		{"`/spec/replicas` is owned by `kcm`.", []htmlSpan{{Text: "/spec/replicas", Code: true}, {Text: " is owned by "}, {Text: "kcm", Code: true}, {Text: "."}}},
		{"has ``a`b`` here", []htmlSpan{{Text: "has "}, {Text: "a`b", Code: true}, {Text: " here"}}},
		{"`` `x` ``", []htmlSpan{{Text: "`x`", Code: true}}},
		{"reclaimPolicy **Delete**, so", []htmlSpan{{Text: "reclaimPolicy "}, {Text: "Delete", Bold: true}, {Text: ", so"}}},
		{"unclosed ` tick", []htmlSpan{{Text: "unclosed `"}, {Text: " tick"}}},
		{"odd ** star", []htmlSpan{{Text: "odd ** star"}}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, messageSpans(tt.in)); diff != "" {
			t.Errorf("messageSpans(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseDiffSideBySide(t *testing.T) {
	d := parseDiff("@@ -4,4 +4,5 @@\n spec:\n-  replicas: 2\n-  paused: true\n+  replicas: 3\n   template:\n+    x: y\n")
	var got []string
	for _, r := range d.Rows {
		side := func(l *diffLine) string {
			if l == nil {
				return "_"
			}
			return l.Op + l.Old + l.New + ":" + strings.TrimSpace(l.Text)
		}
		if r.Hunk != "" {
			got = append(got, "hunk")
			continue
		}
		got = append(got, side(r.Old)+" | "+side(r.New))
	}
	want := []string{"hunk", "ctx44:spec: | ctx44:spec:", "del5:replicas: 2 | add5:replicas: 3", "del6:paused: true | _", "ctx76:template: | ctx76:template:", "_ | add7:x: y"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

func parsePage(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func countElems(n *html.Node, match func(*html.Node) bool) int {
	c := 0
	if n.Type == html.ElementNode && match(n) {
		c++
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c += countElems(ch, match)
	}
	return c
}

func hasAttr(n *html.Node, key string) bool {
	return slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return a.Key == key })
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// pageElems are the elements and attributes the page's template writes; a PR's
// text that turned into any other (a link, an image, an event handler, a second
// script) fails assertPageInert.
var pageElems = map[atom.Atom][]string{
	atom.Html: {"lang"}, atom.Head: nil, atom.Meta: {"charset", "name", "content", "http-equiv"}, atom.Title: nil,
	atom.Style: nil, atom.Script: nil, atom.Body: {"data-view"}, atom.Header: nil, atom.H1: nil, atom.H2: nil, atom.H3: nil,
	atom.H4: nil, atom.P: {"class"}, atom.Code: {"class"}, atom.Span: {"class", "title"}, atom.Ul: {"class"}, atom.Li: nil,
	atom.Form: {"id", "class", "autocomplete"}, atom.Label: nil, atom.Select: {"id", "data-key"}, atom.Option: {"value"},
	atom.Input: {"type", "name", "value", "checked"}, atom.Button: {"type", "id"}, atom.Output: {"id", "aria-live"},
	atom.Main: nil, atom.Section: {"id", "class", "data-target"}, atom.Table: {"class"}, atom.Thead: nil, atom.Tbody: nil,
	atom.Tr: {"class", "data-filter", "data-target", "data-kind", "data-rules", "data-action"}, atom.Th: nil,
	atom.Td: {"class", "colspan"}, atom.I: nil, atom.B: nil, atom.Div: {"class"}, atom.Pre: nil,
	atom.Details: {"class", "data-filter", "data-target", "data-kind", "data-rules", "data-action", "open"},
	atom.Summary: nil, atom.Footer: nil,
}

// assertPageInert parses the page as a browser does and fails on an element or
// attribute the template does not write, on a script other than the page's own,
// and on a Content-Security-Policy that allows anything from the network.
func assertPageInert(t *testing.T, what string, page []byte) {
	t.Helper()
	doc := parsePage(t, page)
	scripts := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			allowed, ok := pageElems[n.DataAtom]
			if !ok {
				t.Errorf("%s: element <%s> the template does not write", what, n.Data)
			}
			for _, a := range n.Attr {
				if !slices.Contains(allowed, a.Key) {
					t.Errorf("%s: attribute %s=%q on <%s> the template does not write", what, a.Key, a.Val, n.Data)
				}
			}
			if n.DataAtom == atom.Script {
				scripts++
				if n.FirstChild == nil || n.FirstChild.Data != pageJS {
					t.Errorf("%s: a script that is not the page's own", what)
				}
			}
			if n.DataAtom == atom.Meta && attr(n, "http-equiv") == "Content-Security-Policy" && !strings.HasPrefix(attr(n, "content"), "default-src 'none';") {
				t.Errorf("%s: CSP %q does not start from default-src 'none'", what, attr(n, "content"))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if scripts != 1 {
		t.Errorf("%s: %d scripts, want the page's one", what, scripts)
	}
}

// TestReportLink: the comment links the report page under the headline, on its
// first page, with a URL no character of which can end the link; a URL that is
// not http(s) is not linked.
func TestReportLink(t *testing.T) {
	opts := DefaultOptions()
	opts.ReportURL = "https://bot.example.com/reports/abc?exp=1&sig=x)y"
	md := Markdown(exampleReport(), opts)
	if !strings.Contains(md, "📄 **[Full report](https://bot.example.com/reports/abc?exp=1&sig=x%29y)**") {
		t.Errorf("no report link:\n%.600s", md)
	}
	opts.MaxChars = 1500
	if p := Pages(exampleReport(), opts); !strings.Contains(p[0], "Full report") {
		t.Errorf("the first page lacks the report link:\n%s", p[0])
	}
	opts.ReportArtifact = true
	if md := Markdown(exampleReport(), opts); !strings.Contains(md, "download it from [this run's artifacts](https://bot.example.com/") {
		t.Errorf("no artifact link:\n%.600s", md)
	}
	for _, bad := range []string{"javascript:alert(1)", "file:///etc/passwd", "/relative", "https://"} {
		opts.ReportURL = bad
		if md := Markdown(exampleReport(), opts); strings.Contains(md, "Full report") {
			t.Errorf("%q is linked", bad)
		}
	}
}
