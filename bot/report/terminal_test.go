package report

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

// TestTextGolden: the terminal text of the reports the comment's goldens use,
// with colour and without; without colour it holds no escape sequence at all,
// and the two differ only by their colours.
func TestTextGolden(t *testing.T) {
	for _, tt := range []struct {
		name   string
		report *diffing.Report
	}{
		{"example", exampleReport()},
		{"clean", cleanReport()},
		{"render-error", renderErrorReport()},
		{"nothing-compared", nothingComparedReport()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plain := Text(tt.report, TextOptions{})
			colored := Text(tt.report, TextOptions{Color: true})
			if strings.ContainsRune(plain, 0x1b) {
				t.Errorf("colour off, but the text holds an escape sequence:\n%q", plain)
			}
			if !strings.ContainsRune(colored, 0x1b) {
				t.Errorf("colour on, but the text has no colour")
			}
			if got := sgr.ReplaceAllString(colored, ""); got != plain {
				t.Errorf("without its colours the coloured text is not the plain one:\n%s\nwant\n%s", got, plain)
			}
			for _, bad := range []string{"<details>", "<summary>", "| --- |", "|---|", "🔴", "<br>"} {
				if strings.Contains(plain, bad) {
					t.Errorf("the terminal text holds the comment's markup %q", bad)
				}
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.txt"), []byte(plain))
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.color.txt"), []byte(colored))
		})
	}
}

// sgr matches the colour sequences Text writes (Select Graphic Rendition).
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestTextEscapesControlCharacters: a pull request controls target names,
// object names, messages, notes, render errors, diffs and field values. None of
// them can write an escape sequence (a window title, a cleared screen, a
// hyperlink), a one-byte CSI, a carriage return that overwrites the line, or a
// bidi override that reorders it: each is shown escaped (a line break or carriage
// return inside one line is folded to a space), and the only escape sequences in
// the coloured text are its own colours.
func TestTextEscapesControlCharacters(t *testing.T) {
	const (
		title  = "\x1b]0;pwned\x07"
		clear  = "\x1b[2J\x1b[H"
		csi    = "\u009b31m"
		cr     = "ok\rFAKE"
		bidi   = "\u202etxt.exe"
		link   = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"
		badUTF = "\xff\x9b"
	)
	hostile := title + clear + csi + cr + bidi + link + badUTF
	k := key("apps", "Deployment"+clear, "shop", "web"+title)
	r := &diffing.Report{
		Base: "base" + csi, Head: "head", GeneratedAt: generatedAt, Failing: true,
		Targets: []diffing.TargetReport{{
			Name: "t" + hostile, Path: "apps/" + hostile, Cluster: "c" + bidi,
			LiveChecked: true, LiveMode: "simulate", Manager: "m" + title,
			Notes:   []string{"note " + hostile},
			Summary: diffing.Summary{Modified: 1},
			Changes: []diffing.Change{{
				Key: k, Action: diffing.ActionModified,
				Diff:       " data:\n-  a: " + hostile + "\n+  a: b\n",
				Fields:     []diffing.FieldChange{{Path: "data.a" + clear, Before: hostile, After: "b" + link}},
				LiveAction: diffing.ActionModified, LiveDiff: "-x: " + hostile + "\n+x: y\n",
			}},
			Findings: []diffing.Finding{{Rule: diffing.RuleLiveDrift, Severity: diffing.SeverityError, Key: k, Failing: true,
				Message: "changed by `" + hostile + "`"}},
		}, {
			Name: "broken" + title, Path: "p", Error: "render failed:\n" + hostile + "\nline 2",
		}},
	}
	for _, color := range []bool{false, true} {
		out := Text(r, TextOptions{Color: color})
		rest := sgr.ReplaceAllString(out, "")
		for _, c := range []rune{0x1b, 0x07, 0x9b, '\r', 0x202e} {
			if strings.ContainsRune(rest, c) {
				t.Errorf("colour %v: the text holds %U outside its own colours:\n%q", color, c, rest)
			}
		}
		if strings.Contains(rest, "\xff") {
			t.Errorf("colour %v: an invalid UTF-8 byte is written as it is", color)
		}
		for _, want := range []string{`\x1b]0;pwned\x07`, `\x1b[2J`, `\u009b31m`, "ok FAKE", `\u202etxt.exe`, `\xff\x9b`} {
			if !strings.Contains(rest, want) {
				t.Errorf("colour %v: the text does not show %s escaped:\n%s", color, want, rest)
			}
		}
	}
}

// TestTermSafe: what a terminal shows as it is stays as it is (text, tabs,
// accents, CJK, emoji); what it would act on is escaped.
func TestTermSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\twith a tab": "plain text\twith a tab",
		"café 日本 🔴 → ↔":          "café 日本 🔴 → ↔",
		"\x1b[31mred":            `\x1b[31mred`,
		"a\x00b\x7fc":            `a\x00b\x7fc`,
		"\u0085\u009b":           `\u0085\u009b`,
		"\u2066x\u2069\u200f":    `\u2066x\u2069\u200f`,
		"bad\xc3":                `bad\xc3`,
	} {
		if got := termSafe(in); got != want {
			t.Errorf("termSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
