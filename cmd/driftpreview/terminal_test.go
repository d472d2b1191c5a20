package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/report"
)

// terminal is a pseudo-terminal (github.com/creack/pty): the CLI writes to tty
// as it would to a person's terminal, and the test reads what the terminal got.
type terminal struct {
	ptmx, tty *os.File
	buf       bytes.Buffer
	done      chan struct{}
}

func openTerminal(t *testing.T) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal on this machine: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	term := &terminal{ptmx: ptmx, tty: tty, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		_, err := io.Copy(&term.buf, ptmx)
		if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the tty side is closed
			t.Errorf("reading the terminal: %v", err)
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
	})
	return term
}

// output closes the terminal and returns what it was sent, with the line
// discipline's "\r\n" for each "\n" turned back into "\n".
func (term *terminal) output() string {
	term.tty.Close()
	<-term.done
	return strings.ReplaceAll(term.buf.String(), "\r\n", "\n")
}

// fixedNow stops the preview's clock, so two runs write the same report.
func fixedNow(t *testing.T) {
	old := now
	now = func() time.Time { return time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC) }
	t.Cleanup(func() { now = old })
}

// previewArgs is a preview of 04-pvc-data-loss without a cluster and without
// the render cache (so its target is rendered every time).
func previewArgs(t *testing.T, extra ...string) []string {
	t.Helper()
	repo := scenarioRepo(t, "04-pvc-data-loss")
	t.Setenv("KUBECONFIG", "")
	return append([]string{"preview", "--repo", repo, "--base", "base", "--head", "head", "--live-mode", "off", "--cache-dir", "off"}, extra...)
}

// stdoutFile is a file for stdout: an *os.File that is not a terminal, as a
// pipe or a redirect is.
func stdoutFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func contents(t *testing.T, f *os.File) string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// progressLine matches what the progress output writes.
var progressLine = regexp.MustCompile(`(?m)^\r?driftpreview: (checking out|finding targets|preview |checked out|found |rendered |done in|\d+ targets?,)`)

// TestProgressOnTerminal: with stderr a terminal, progress is one line redrawn
// in place (carriage returns, no line feed until the summary) and a one-line
// summary, on stderr only; in CI (CI=true) or when stderr is not a terminal it
// is a few plain log lines; --quiet writes none. stdout gets the same bytes in
// every case.
func TestProgressOnTerminal(t *testing.T) {
	fixedNow(t)
	args := previewArgs(t)
	t.Setenv("CI", "")

	// stderr a terminal: the line in place, then the summary.
	term := openTerminal(t)
	out := stdoutFile(t)
	if code := run(context.Background(), args, out, term.tty); code != exitFailing {
		t.Fatalf("exit %d, want %d: %s", code, exitFailing, term.output())
	}
	onTerm := term.output()
	want := contents(t, out)
	if !strings.HasPrefix(want, report.DefaultMarker+"\n") {
		t.Fatalf("stdout is not a terminal, yet the report is not the Markdown comment:\n%.500s", want)
	}
	if !strings.HasPrefix(onTerm, "\rdriftpreview: checking out base and head") {
		t.Errorf("the progress line does not start in place:\n%q", onTerm)
	}
	if n := strings.Count(onTerm, "\n"); n != 1 || !strings.HasSuffix(onTerm, "\n") {
		t.Errorf("the terminal got %d line breaks, want one, after the summary:\n%q", n, onTerm)
	}
	last := onTerm[strings.LastIndex(onTerm, "\r")+1:]
	if !regexp.MustCompile(`^driftpreview: 1 target, 1 rendered, 0 live reads in \d+\.\ds *\n$`).MatchString(last) {
		t.Errorf("the summary line is %q", last)
	}
	if progressLine.MatchString(want) || strings.ContainsRune(want, '\r') {
		t.Errorf("progress went to stdout:\n%s", want)
	}

	// --quiet: nothing on the terminal, the same stdout.
	term = openTerminal(t)
	out = stdoutFile(t)
	run(context.Background(), append(args, "--quiet"), out, term.tty)
	if got := term.output(); got != "" {
		t.Errorf("--quiet, yet stderr got %q", got)
	}
	if diff := cmp.Diff(want, contents(t, out)); diff != "" {
		t.Errorf("stdout with --quiet differs from stdout with progress (-with +quiet):\n%s", diff)
	}

	// CI=true on a terminal, and stderr not a terminal: log lines, no \r.
	for _, ci := range []bool{true, false} {
		var stderr bytes.Buffer
		var errOut io.Writer = &stderr
		if ci {
			t.Setenv("CI", "true")
			term = openTerminal(t)
			errOut = term.tty
		}
		out = stdoutFile(t)
		run(context.Background(), args, out, errOut)
		log := stderr.String()
		if ci {
			log = term.output()
		}
		lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
		if strings.ContainsRune(log, '\r') || len(lines) != 5 {
			t.Errorf("CI=%v: want 5 plain log lines, got:\n%q", ci, log)
		}
		for _, w := range []string{"driftpreview: preview base..head\n", "driftpreview: checked out base and head in ", "driftpreview: found 1 target, 1 to render in ", "driftpreview: rendered and compared 1 target, 0 live reads in ", "driftpreview: done in "} {
			if !strings.Contains(log, w) {
				t.Errorf("CI=%v: the log does not say %q:\n%s", ci, w, log)
			}
		}
		if diff := cmp.Diff(want, contents(t, out)); diff != "" {
			t.Errorf("CI=%v: stdout differs from stdout with the progress line (-line +log):\n%s", ci, diff)
		}
	}
}

// TestDefaultFormatFollowsTerminal: with stdout a terminal the report is the
// text format, coloured unless NO_COLOR or --color never says otherwise; with
// stdout a file it is the Markdown comment, byte for byte what --format
// markdown writes to the terminal.
func TestDefaultFormatFollowsTerminal(t *testing.T) {
	fixedNow(t)
	args := previewArgs(t, "--quiet")
	t.Setenv("TERM", "xterm-256color")
	t.Setenv("NO_COLOR", "")
	onTerminal := func(extra ...string) string {
		t.Helper()
		term := openTerminal(t)
		var stderr bytes.Buffer
		if code := run(context.Background(), append(args, extra...), term.tty, &stderr); code != exitFailing {
			t.Fatalf("%v: exit %d: %s", extra, code, stderr.String())
		}
		return term.output()
	}
	text := onTerminal()
	if !strings.HasPrefix(text, "\x1b[1mdriftpreview: ") || strings.Contains(text, "<details>") {
		t.Errorf("stdout is a terminal, yet the report is not the coloured text:\n%.500q", text)
	}
	plain := onTerminal("--color", "never")
	if strings.ContainsRune(plain, 0x1b) || !strings.HasPrefix(plain, "driftpreview: 1 target · 1 error") {
		t.Errorf("--color never: %.300q", plain)
	}
	t.Setenv("NO_COLOR", "1")
	if got := onTerminal(); got != plain {
		t.Errorf("NO_COLOR=1 gives other text than --color never (-never +NO_COLOR):\n%s", cmp.Diff(plain, got))
	}
	if got := onTerminal("--color", "always"); got != text {
		t.Errorf("--color always does not override NO_COLOR (-auto +always):\n%s", cmp.Diff(text, got))
	}
	if !strings.Contains(plain, "PersistentVolumeClaim s04/cache: deleted") {
		t.Errorf("the text does not list the deleted claim:\n%s", plain)
	}

	out := stdoutFile(t)
	var stderr bytes.Buffer
	run(context.Background(), args, out, &stderr)
	md := contents(t, out)
	if !strings.HasPrefix(md, report.DefaultMarker+"\n") {
		t.Fatalf("stdout is a file, yet the report is not the Markdown comment:\n%.500s", md)
	}
	if got := onTerminal("--format", "markdown"); got != md {
		t.Errorf("--format markdown on a terminal differs from the default on a file (-file +terminal):\n%s", cmp.Diff(md, got))
	}
	out = stdoutFile(t)
	run(context.Background(), append(args, "--format", "text"), out, &stderr)
	if got := contents(t, out); got != plain {
		t.Errorf("--format text to a file (no colour by auto) differs from --color never on a terminal:\n%s", cmp.Diff(plain, got))
	}
}
