package report

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// hijack is what a hostile pull request writes wherever the comment shows its
// text (issue 20): backticks to end a code span early, a link, an image, a team
// mention, an issue reference, raw HTML, a bare URL and a www link.
// The first ends a single-backtick code span; the second has no backticks, so no
// code span of the input can swallow it.
var hijacks = map[string]string{
	"backticks": "x` ``` [Approve](https://evil.example/approve) ![x](https://evil.example/x.png) @acme/admins #1 <img src=x> <details> https://evil.example/raw www.evil.example `",
	"plain":     "[Approve](https://evil.example/approve) ![x](https://evil.example/x.png) @acme/admins #1 <img src=x> <details> https://evil.example/raw www.evil.example",
}

// obj is a rendered object as the renderers produce them.
func obj(t *testing.T, yaml string) render.Object {
	t.Helper()
	objs, _, err := render.Parse([]byte(yaml), "app/objects.yaml")
	if err != nil || len(objs) != 1 {
		t.Fatalf("parsing fixture object: %v (%d objects)", err, len(objs))
	}
	return objs[0]
}

// edit returns a copy of o changed by f, keyed again.
func edit(o render.Object, f func(u *unstructured.Unstructured)) render.Object {
	u := o.Obj.DeepCopy()
	f(u)
	return render.Object{Key: render.KeyOf(u), Obj: u, Source: o.Source}
}

func set(v any, path ...string) func(u *unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) { _ = unstructured.SetNestedField(u.Object, v, path...) }
}

func objs(o ...render.Object) render.ObjectSet { return render.ObjectSet{Objects: o} }

// diffTarget runs the real differ on one target and returns its report.
func diffTarget(in diffing.Input) diffing.TargetReport {
	opts := diffing.DefaultOptions()
	opts.Prune = true
	return diffing.Diff(in, opts)
}

func report(targets ...diffing.TargetReport) *diffing.Report {
	r := &diffing.Report{Base: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Head: "e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3",
		GeneratedAt: generatedAt, Targets: targets}
	diffing.Finish(r, diffing.DefaultPolicy())
	return r
}

// plainTarget is a second, harmless target with a finding, so the findings table
// gets its target column.
func plainTarget(t *testing.T) diffing.TargetReport {
	base := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: other}\nspec: {storageClassName: fast}\n")
	return diffTarget(diffing.Input{Name: "other", Path: "other", Base: objs(base), Head: objs(edit(base, set("slow", "spec", "storageClassName")))})
}

// TestHostileTextIsEscaped renders a report carrying the payload in every place a
// PR controls, through the real differ, and parses the comment as GitHub does
// (CommonMark, GFM tables and autolinks, raw HTML passed through): no link, image,
// mention, reference or HTML element of the PR's survives, in one comment or in
// pages, and the check title is plain. Every case fails on the writers before
// issue 20 (single backticks, raw kinds and names, notes keeping their Markdown).
func TestHostileTextIsEscaped(t *testing.T) {
	renderErr := &render.Error{File: "charts/app/templates/secret.yaml", Line: 3, Err: errors.New(
		`execution error at (app/templates/secret.yaml:3:4): fail "[Approve](https://evil.example/approve) @acme/admins" <img src=x>`)}
	cases := map[string]func(t *testing.T, hijack string) *diffing.Report{
		"object kind": func(t *testing.T, hijack string) *diffing.Report {
			base := edit(obj(t, "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: app}\n"),
				func(u *unstructured.Unstructured) { u.SetKind("Widget" + hijack) })
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base)}), plainTarget(t))
		},
		"object name": func(t *testing.T, hijack string) *diffing.Report {
			base := edit(obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: n, namespace: app}\nspec: {storageClassName: fast}\n"),
				func(u *unstructured.Unstructured) { u.SetName(hijack) })
			head := edit(base, set("slow", "spec", "storageClassName"))
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base), Head: objs(head)}), plainTarget(t))
		},
		"target name": func(t *testing.T, hijack string) *diffing.Report {
			tr := plainTarget(t)
			tr.Name, tr.Path = hijack, hijack
			return report(tr, plainTarget(t))
		},
		"Application name": func(t *testing.T, hijack string) *diffing.Report {
			tr := plainTarget(t)
			tr.Name = hijack
			tr.Controller = &diffing.Controller{Kind: "Application" + hijack, Name: hijack, Namespace: "argocd", Source: "apps/" + hijack + ".yaml", AutoSync: true}
			return report(tr, plainTarget(t))
		},
		"Secret key": func(t *testing.T, hijack string) *diffing.Report {
			base := obj(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: app}\ndata: {a: YQ==}\n")
			head := edit(base, set("c2VjcmV0", "data", hijack))
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base), Head: objs(head)}), plainTarget(t))
		},
		"value": func(t *testing.T, hijack string) *diffing.Report {
			base := obj(t, "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: app}\nspec: {storageClassName: fast}\n")
			head := edit(base, set(hijack, "spec", "storageClassName"))
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base), Head: objs(head)}), plainTarget(t))
		},
		"container image": func(t *testing.T, hijack string) *diffing.Report {
			base := obj(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: app}\nspec: {template: {spec: {containers: [{name: app, image: 'web:1'}]}}}\n")
			head := edit(base, set([]any{map[string]any{"name": "app" + hijack, "image": "web:1" + hijack}}, "spec", "template", "spec", "containers"))
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", Base: objs(base), Head: objs(head)}), plainTarget(t))
		},
		"render error": func(t *testing.T, hijack string) *diffing.Report {
			return report(diffTarget(diffing.Input{Name: "app", Path: "app", HeadErr: renderErr}), plainTarget(t))
		},
		"note": func(t *testing.T, hijack string) *diffing.Report {
			tr := plainTarget(t)
			tr.Notes = append(tr.Notes, "Skipped "+hijack+": not a Kubernetes object.")
			tr.NotAffected = hijack
			return report(tr, plainTarget(t))
		},
		"not rendered": func(t *testing.T, hijack string) *diffing.Report {
			tr := diffing.TargetReport{Name: "app", Path: "app", Skipped: "ApplicationSet " + hijack + " could not be expanded"}
			return report(tr, plainTarget(t))
		},
	}
	for name, build := range cases {
		for pname, hijack := range hijacks {
			t.Run(name+"/"+pname, func(t *testing.T) {
				r := build(t, hijack)
				md := Markdown(r, DefaultOptions())
				if !strings.Contains(md, "evil.example") {
					t.Fatalf("the payload is not in the comment at all:\n%s", md)
				}
				assertInert(t, "comment", md)
				opts := DefaultOptions()
				opts.MaxChars = 1500
				for i, p := range Pages(r, opts) {
					assertInert(t, "page "+itoa(i+1), p)
				}
				page, err := HTML(r)
				if err != nil || !bytes.Contains(page, []byte("evil.example")) {
					t.Fatalf("the payload is not in the report page at all (%v)", err)
				}
				assertPageInert(t, "report page", page)
				if title := Title(r); strings.ContainsAny(title, "<[`@") {
					t.Errorf("title carries the payload: %q", title)
				}
			})
		}
	}
}

var (
	// mention and reference patterns GitHub and GitLab link in text nodes.
	liveMention = regexp.MustCompile(`(?:^|[^\w])(?:@[A-Za-z0-9]|#[0-9]|![0-9]|~[A-Za-z]|https?://|www\.)`)
	// the elements driftpreview itself writes
	ours = map[atom.Atom]bool{atom.Html: true, atom.Head: true, atom.Body: true, atom.P: true, atom.H3: true, atom.Table: true,
		atom.Thead: true, atom.Tbody: true, atom.Tr: true, atom.Th: true, atom.Td: true, atom.Details: true, atom.Summary: true,
		atom.B: true, atom.Code: true, atom.Pre: true, atom.Sub: true, atom.Br: true, atom.Em: true, atom.Strong: true,
		atom.Ul: true, atom.Li: true, atom.Blockquote: true}
)

// assertInert renders md as a host renders a comment and fails on any link,
// image, element driftpreview does not write, live mention or reference, and
// on a <details> the layout did not open.
func assertInert(t *testing.T, what, md string) {
	t.Helper()
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&out)
	if err != nil {
		t.Fatal(err)
	}
	details := 0
	var walk func(n *html.Node, inCode bool)
	walk = func(n *html.Node, inCode bool) {
		switch n.Type {
		case html.ElementNode:
			if !ours[n.DataAtom] {
				t.Errorf("%s: element <%s> in the rendered comment (a link, image or raw HTML of the PR's)\nmarkdown:\n%s", what, n.Data, md)
			}
			inCode = inCode || n.DataAtom == atom.Code || n.DataAtom == atom.Pre
			if n.DataAtom == atom.Details {
				details++
			}
		case html.TextNode:
			if !inCode {
				if m := liveMention.FindString(n.Data); m != "" {
					t.Errorf("%s: live mention, reference or URL %q in text %q", what, m, n.Data)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inCode)
		}
	}
	walk(doc, false)
	if m := strings.Count(md, "<details><summary>"); details != m {
		t.Errorf("%s: %d <details> elements of which only %d are the layout's", what, details, m)
	}
}
