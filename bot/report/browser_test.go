package report

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

// screenshotPath is the sample report's screenshot in the README's docs, written
// by TestHTMLInBrowser under -update.
const screenshotPath = "../../docs/report.png"

// chromiumPath finds Debian's chromium (fixtures/cluster/chromium.sh installs it
// for `make test`), or another Chromium or Chrome on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH, so the report page's browser test cannot run: `make test` installs Debian's chromium package (fixtures/cluster/chromium.sh); or run `apt-get install chromium`")
	return ""
}

// offlineBrowser starts a headless Chromium with the network off: every
// connection goes to a proxy at a closed port, and every host name resolves to
// nothing, so a fetch the page tried would fail as well as be seen. It returns a
// tab whose requests (other than file: and data: URLs), console errors, CSP
// violations and uncaught exceptions are recorded in the returned log.
func offlineBrowser(t *testing.T) (context.Context, *browserLog) {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox, // the test may run as root, in a container
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // start the browser and open the tab
		t.Fatalf("starting %s: %v", exe, err)
	}
	bl := &browserLog{}
	if err := chromedp.Listen(ctx, bl.add); err != nil {
		t.Fatal(err)
	}
	return ctx, bl
}

// browserLog collects what the page must not do.
type browserLog struct {
	mu       sync.Mutex
	requests []string
	problems []string
}

func (b *browserLog) add(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if u, err := url.Parse(e.Request.URL); err != nil || (u.Scheme != "file" && u.Scheme != "data") {
			b.requests = append(b.requests, e.Request.URL)
		}
	case *log.EventEntryAdded:
		if e.Entry.Level == log.EntryLevelError || e.Entry.Source == log.EntrySourceSecurity {
			b.problems = append(b.problems, string(e.Entry.Source)+": "+e.Entry.Text)
		}
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Text)
	case *runtime.EventConsoleAPICalled:
		if e.Type == runtime.ConsoleAPICalledTypeError {
			b.problems = append(b.problems, "console.error")
		}
	}
}

func (b *browserLog) snapshot() (requests, problems []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...), append([]string(nil), b.problems...)
}

// visible counts the rows of a selector the browser lays out.
func visible(sel string) chromedp.Action[int] {
	return chromedp.Evaluate[int](`Array.from(document.querySelectorAll(` + jsString(sel) + `)).filter(e => e.checkVisibility()).length`)
}

// choose picks value in the filter select id as a person does: the select's
// value changes and the form hears its change event.
func choose(id, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById(` + jsString(id) + `); s.value = ` + jsString(value) +
		`; if (s.value !== ` + jsString(value) + `) throw new Error("no option " + ` + jsString(value) + `); s.dispatchEvent(new Event("change", {bubbles: true})); })()`)
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(tctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// TestHTMLInBrowser loads the example report's page from a file in a headless
// Chromium with the network off and uses its filters and views as a reader
// does: the rule, target, kind and action filters hide and show the finding
// rows and the changed objects, the side-by-side view replaces the unified one,
// and the page asks for nothing from the network, breaks no CSP rule and throws
// nothing. A page with an image from the network, loaded the same way, proves
// the request check sees a fetch. Under -update it writes docs/report.png.
func TestHTMLInBrowser(t *testing.T) {
	ctx, bl := offlineBrowser(t)
	page, err := HTML(exampleReport())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "loading the page", chromedp.Steps(
		chromedp.Navigate("file://"+file),
		chromedp.WaitReady(chromedp.CSS("#f-count")),
	))

	const findings, objects, sections = "tr.finding", "details.change", "section.target"
	r := exampleReport()
	nFindings, nObjects := 0, 0
	for _, tr := range r.Targets {
		nFindings += len(tr.Findings)
		for _, c := range tr.Changes {
			if c.Diff != "" || c.LiveDiff != "" || c.Action != diffing.ActionUnchanged {
				nObjects++ // the page lists changed objects only
			}
		}
	}
	type counts struct{ findings, objects, sections int }
	look := func(what string) counts {
		return counts{run(t, ctx, what, visible(findings)), run(t, ctx, what, visible(objects)), run(t, ctx, what, visible(sections))}
	}
	all := counts{nFindings, nObjects, len(r.Targets)}
	if got := look("counting rows"); got != all {
		t.Fatalf("unfiltered page shows %+v, want %+v", got, all)
	}
	steps := []struct {
		name          string
		id, value     string
		want          counts
		wantCountText string
	}{
		// example: shop-prod (target 0) has the seven findings and seven changed
		// objects; one prune finding, on ConfigMap shop/legacy-flags (deleted);
		// one created object, Service shop/web-canary, without findings.
		// payments-prod (target 1) changes nothing.
		{"rule prune", "f-rule", "prune", counts{1, 1, 1}, "2 of"},
		{"and action created (nothing is both)", "f-action", "created", counts{0, 0, 0}, "0 of"},
		{"rule back to all", "f-rule", "", counts{0, 1, 1}, "1 of"},
		{"action back to all", "f-action", "", all, ""},
		{"kind ConfigMap", "f-kind", "ConfigMap", counts{2, 2, 1}, "4 of"},
		{"kind back to all", "f-kind", "", all, ""},
		{"target payments-prod", "f-target", "1", counts{0, 0, 1}, "0 of"},
	}
	for _, s := range steps {
		run(t, ctx, s.name, choose(s.id, s.value))
		if got := look(s.name); got != s.want {
			t.Errorf("%s: shows %+v (findings, objects, target sections), want %+v", s.name, got, s.want)
		}
		text := run(t, ctx, s.name, chromedp.Evaluate[string](`document.getElementById("f-count").textContent`))
		if !strings.HasPrefix(text, s.wantCountText) {
			t.Errorf("%s: count says %q, want it to start with %q", s.name, text, s.wantCountText)
		}
	}
	run(t, ctx, "show all", chromedp.Click(chromedp.CSS("#f-reset")))
	run(t, ctx, "waiting for the reset", chromedp.Poll[bool](`document.getElementById("f-count").textContent === ""`))
	if got := look("after reset"); got != all {
		t.Errorf("after Show all the page shows %+v, want %+v", got, all)
	}

	// Views: unified by default, side by side on the radio button.
	unified := run(t, ctx, "unified tables", visible("table.diff.unified"))
	split := run(t, ctx, "split tables", visible("table.diff.split"))
	if unified == 0 || split != 0 {
		t.Errorf("default view: %d unified and %d side-by-side diffs visible, want only unified", unified, split)
	}
	run(t, ctx, "side by side", chromedp.Click(chromedp.CSS(`input[name=view][value=split]`)))
	if u, s := run(t, ctx, "unified tables", visible("table.diff.unified")), run(t, ctx, "split tables", visible("table.diff.split")); u != 0 || s != unified {
		t.Errorf("side-by-side view: %d unified and %d side-by-side diffs visible, want 0 and %d", u, s, unified)
	}
	run(t, ctx, "unified", chromedp.Click(chromedp.CSS(`input[name=view][value=unified]`)))

	if golden.Update() {
		run(t, ctx, "viewport", chromedp.EmulateViewport(1280, 1400))
		png := run(t, ctx, "screenshot", chromedp.CaptureScreenshot())
		if err := os.WriteFile(screenshotPath, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	requests, problems := bl.snapshot()
	if len(requests) > 0 {
		t.Errorf("the page asked the network for %q", requests)
	}
	if len(problems) > 0 {
		t.Errorf("the page logged errors (a CSP violation blocks the page's own script or style): %q", problems)
	}

	// The check above can fail: a page with a network image is caught.
	canary := filepath.Join(dir, "canary.html")
	if err := os.WriteFile(canary, []byte(`<!DOCTYPE html><title>canary</title><img src="http://canary.driftpreview.invalid/x.png">`), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "loading the canary", chromedp.Steps(chromedp.Navigate("file://"+canary), chromedp.WaitReady(chromedp.CSS("img"))))
	run(t, ctx, "waiting for the canary's request", chromedp.Poll[bool](`performance.getEntriesByType("resource").length > 0 || document.querySelector("img").complete`))
	if requests, _ := bl.snapshot(); len(requests) == 0 {
		t.Errorf("the request check missed the canary page's network image")
	}
}
