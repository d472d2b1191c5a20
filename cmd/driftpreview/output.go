package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// outputFlags are the flags of how a command shows its report (--format,
// --color, --quiet), shared by preview and drift.
type outputFlags struct {
	format, color *string
	quiet         *bool
	formats       []string
}

// addOutputFlags registers the output flags on fl; formats are the values
// --format takes, formatUsage its help text.
func addOutputFlags(fl *flag.FlagSet, formatUsage string, formats ...string) *outputFlags {
	return &outputFlags{
		format:  fl.String("format", "", formatUsage),
		color:   fl.String("color", "auto", "colour the text format: auto (when stdout is a terminal and NO_COLOR is not set), always or never"),
		quiet:   fl.Bool("quiet", false, "no progress on stderr (by default: a line updated in place when stderr is a terminal, else a few log lines)"),
		formats: formats,
	}
}

// check returns what is wrong with the flags' values ("" when nothing), and
// sets an empty --format to the default for stdout.
func (o *outputFlags) check(stdout io.Writer) string {
	switch {
	case *o.format != "" && !slices.Contains(o.formats, *o.format):
		return fmt.Sprintf("--format must be %s or %s, not %q", strings.Join(o.formats[:len(o.formats)-1], ", "), o.formats[len(o.formats)-1], *o.format)
	case *o.color != "auto" && *o.color != "always" && *o.color != "never":
		return fmt.Sprintf("--color must be auto, always or never, not %q", *o.color)
	}
	if *o.format == "" {
		*o.format = defaultFormat(stdout)
	}
	return ""
}
