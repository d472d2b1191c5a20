package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

// imagesReport is cleanReport with the images a chart bump changes: a changed
// tag in a container and an init container of two Deployments (one line), a
// changed digest, an added and a removed container, and a hostile image and
// container name from the PR.
func imagesReport() *diffing.Report {
	r := cleanReport()
	web, worker := deployWeb, key("apps", "Deployment", "shop", "worker")
	cache := key("apps", "StatefulSet", "shop", "cache")
	r.Targets[0].Images = []diffing.ImageChange{
		{Object: web, List: "initContainers", Container: "migrate", Before: "ghcr.io/acme/web:1.4.0", After: "ghcr.io/acme/web:1.5.0"},
		{Object: web, List: "containers", Container: "app", Before: "ghcr.io/acme/web:1.4.0", After: "ghcr.io/acme/web:1.5.0"},
		{Object: web, List: "containers", Container: "old", Before: "busybox:1.36"},
		{Object: worker, List: "containers", Container: "app", Before: "ghcr.io/acme/web:1.4.0", After: "ghcr.io/acme/web:1.5.0"},
		{Object: worker, List: "containers", Container: "pg", Before: "registry:5000/pg@sha256:aaa", After: "registry:5000/pg@sha256:bbb"},
		{Object: cache, List: "containers", Container: "redis", After: "redis:7.2"},
		{Object: cache, List: "containers", Container: "x`<img src=x>`", After: "evil.io/`a`/@team<script>:[x](http://e)"},
	}
	return r
}

// TestImagesSummary: the comment and the terminal text list the images the
// PR changes right after the headline, grouped per target and change, every
// name escaped (issue 23).
func TestImagesSummary(t *testing.T) {
	r := imagesReport()
	md := Markdown(r, DefaultOptions())
	golden.Check(t, filepath.Join("testdata", "images.golden.md"), []byte(md))
	golden.Check(t, filepath.Join("testdata", "images.golden.txt"), []byte(Text(r, TextOptions{})))
	head, _, _ := strings.Cut(md, "\n<details>")
	for _, want := range []string{
		"- `shop-prod`: `ghcr.io/acme/web` `1.4.0` → `1.5.0` (Deployment `shop/web`, init container `migrate`; Deployment `shop/web`, container `app`; Deployment `shop/worker`, container `app`)\n",
		"- `shop-prod`: + `redis:7.2` (StatefulSet `shop/cache`, container `redis`)\n",
		"- `shop-prod`: − `busybox:1.36` (Deployment `shop/web`, container `old`)\n",
		"- `shop-prod`: `registry:5000/pg` `sha256:aaa` → `sha256:bbb`",
	} {
		if !strings.Contains(head, want) {
			t.Errorf("images summary lacks %q:\n%s", want, head)
		}
	}
	if strings.Index(md, "**Images**") > strings.Index(md, "<details>") {
		t.Errorf("images summary is not before the targets:\n%s", md)
	}
	assertInert(t, "comment", md)
}

// TestImagesSummaryCap: past maxImageLines lines the summary says how many
// more there are.
func TestImagesSummaryCap(t *testing.T) {
	r := cleanReport()
	for i := range maxImageLines + 5 {
		r.Targets[0].Images = append(r.Targets[0].Images, diffing.ImageChange{Object: deployWeb, List: "containers",
			Container: fmt.Sprint("c", i), After: fmt.Sprintf("img%d:1", i)})
	}
	md := Markdown(r, DefaultOptions())
	if n := strings.Count(md, "- `shop-prod`: + "); n != maxImageLines {
		t.Errorf("%d image lines, want %d", n, maxImageLines)
	}
	if !strings.Contains(md, "- and 5 more image changes\n") {
		t.Errorf("no count of the lines left out:\n%s", md)
	}
}
