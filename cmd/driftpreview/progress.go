package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/driftpreview/driftpreview/bot/preview"
)

// isTerminal reports whether w is a terminal (golang.org/x/term): the CLI's
// stdout and stderr are *os.File, a test's buffers are not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}

// inCI reports whether the CI variable every CI system sets (GitHub Actions,
// GitLab CI, and most others) says so.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v == "true" || v == "1"
}

// progressRefresh is how often the in-place line is redrawn (for the elapsed
// time; counts redraw it too).
const progressRefresh = 100 * time.Millisecond

// progress is preview's Progress for the CLI, written to stderr: on a terminal
// one line that is redrawn in place (a carriage return and the new line padded
// over the old one: no escape sequence needed) and a one-line summary at the
// end; elsewhere, and in CI, a few plain log lines (the start, each phase with
// its time) so a CI log shows where the time went. stdout is never written.
type progress struct {
	w     io.Writer
	tty   bool
	width func() int // the terminal's width, 0 when unknown
	start time.Time

	mu                  sync.Mutex
	phase               preview.Phase
	total, toRender     int
	rendered, liveReads int
	shown               int // the width of the line on screen (tty)
	closed              bool

	stop chan struct{}
	done chan struct{}
}

// newProgress starts the progress output on stderr; nil with --quiet. what
// names the run in the first log line.
func newProgress(stderr io.Writer, quiet bool, what string) *progress {
	if quiet {
		return nil
	}
	p := &progress{w: stderr, start: time.Now(), tty: isTerminal(stderr) && !inCI()}
	if !p.tty {
		fmt.Fprintf(p.w, "driftpreview: preview %s\n", what)
		return p
	}
	f, _ := stderr.(interface{ Fd() uintptr })
	p.width = func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil {
			return 0
		}
		return w
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	p.draw()
	go func() {
		defer close(p.done)
		tick := time.NewTicker(progressRefresh)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.draw()
			}
		}
	}()
	return p
}

// PhaseStarted implements preview.Progress.
func (p *progress) PhaseStarted(ph preview.Phase) {
	p.mu.Lock()
	p.phase = ph
	p.mu.Unlock()
	p.draw()
}

// PhaseEnded implements preview.Progress: in a log, one line per phase.
func (p *progress) PhaseEnded(ph preview.Phase, took time.Duration) {
	if p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var what string
	switch ph {
	case preview.PhaseCheckout:
		what = "checked out base and head"
	case preview.PhaseTargets:
		what = "found " + count(p.total, "target", "targets") + ", " + fmt.Sprint(p.toRender) + " to render"
	case preview.PhaseCompare:
		what = "rendered and compared " + count(p.rendered, "target", "targets") + ", " + count(p.liveReads, "live read", "live reads")
	default:
		what = string(ph)
	}
	fmt.Fprintf(p.w, "driftpreview: %s in %s\n", what, seconds(took))
}

// TargetsFound implements preview.Progress.
func (p *progress) TargetsFound(total, toRender int) {
	p.mu.Lock()
	p.total, p.toRender = total, toRender
	p.mu.Unlock()
	p.draw()
}

// TargetRendered implements preview.Progress.
func (p *progress) TargetRendered(string) {
	p.mu.Lock()
	p.rendered++
	p.mu.Unlock()
}

// LiveRead implements preview.Progress.
func (p *progress) LiveRead(string) {
	p.mu.Lock()
	p.liveReads++
	p.mu.Unlock()
}

// status is the in-place line.
func (p *progress) status() string {
	el := seconds(time.Since(p.start))
	switch p.phase {
	case "", preview.PhaseCheckout:
		return "driftpreview: checking out base and head · " + el
	case preview.PhaseTargets:
		return "driftpreview: finding targets · " + el
	}
	return fmt.Sprintf("driftpreview: %s found · rendered %d/%d · %s · %s",
		count(p.total, "target", "targets"), p.rendered, p.toRender, count(p.liveReads, "live read", "live reads"), el)
}

// draw redraws the line on a terminal: back to its start, the new text cut
// to the terminal's width (a wrapped line could not be redrawn), spaces over
// what is left of the old one.
func (p *progress) draw() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.put(p.status(), false)
}

// put writes s over the line (p.mu held), and a line break after it when end.
func (p *progress) put(s string, end bool) {
	if w := p.width(); w > 1 {
		s = cutRunes(s, w-1)
	}
	n := utf8.RuneCountInString(s)
	pad := max(p.shown-n, 0)
	fmt.Fprint(p.w, "\r"+s+strings.Repeat(" ", pad))
	if end {
		fmt.Fprint(p.w, "\n")
		n = 0
	}
	p.shown = n
}

// finish ends the progress output: on success (ok) a one-line summary; on a
// failure the line is cleared, so the error that follows starts a clean line.
func (p *progress) finish(ok bool) {
	if p == nil {
		return
	}
	if p.tty {
		close(p.stop)
		<-p.done
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	took := seconds(time.Since(p.start))
	summary := fmt.Sprintf("driftpreview: %s, %d rendered, %s in %s", count(p.total, "target", "targets"), p.rendered, count(p.liveReads, "live read", "live reads"), took)
	switch {
	case p.tty && ok:
		p.put(summary, true)
	case p.tty:
		p.put("", false)
		fmt.Fprint(p.w, "\r")
		p.shown = 0
	case ok:
		fmt.Fprintf(p.w, "driftpreview: done in %s\n", took)
	}
}

func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// seconds writes a duration as "0.4s", "12.3s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// cutRunes cuts s to at most n runes.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
