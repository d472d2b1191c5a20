package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/report"
)

// runDrift is `driftpreview drift`: one ref (default: the default branch's
// head) rendered with the preview engine and compared with live, target by
// target; exit 1 when there is drift git does not describe.
func runDrift(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("drift", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		ref = fl.String("ref", "", "ref or SHA to compare with live (default: the default branch's head: origin/HEAD, else HEAD)")
	)
	out := addOutputFlags(fl, "`format` of the report on stdout: text, markdown or json (default: text when stdout is a terminal, else markdown)",
		"text", "markdown", "json")
	format, colorMode, quiet := out.format, out.color, out.quiet
	pf := addPreviewFlags(fl)
	fl.Usage = func() {
		fmt.Fprint(stderr, driftUsage)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return exitError
	}
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "driftpreview drift: %s\n", msg)
		return exitError
	}
	allTargets := false
	fl.Visit(func(f *flag.Flag) { allTargets = allTargets || f.Name == "all-targets" })
	switch {
	case fl.NArg() > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	case allTargets:
		return usageErr("--all-targets is a preview flag: drift always compares every target (--target to choose some)")
	}
	if msg := out.check(stdout); msg != "" {
		return usageErr(msg)
	}
	req, err := pf.request()
	if err != nil {
		return usageErr(err.Error())
	}
	if req.DefaultCluster == nil {
		return usageErr("drift compares git with a live cluster: give --kubeconfig (or set $KUBECONFIG), and a --live-mode other than off")
	}
	req.Now = now()
	tuneGC()
	what := *ref
	if what == "" {
		what = "default branch"
	}
	prog := newProgress(stderr, *quiet, "drift "+what)
	if prog != nil {
		req.Progress = prog
	}
	rep, err := preview.Drift(ctx, preview.DriftRequest{Request: req, Ref: *ref})
	prog.finish(err == nil)
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview drift: %v\n", err)
		return exitError
	}
	switch *format {
	case "json":
		b, err := report.DriftJSON(rep)
		if err != nil {
			fmt.Fprintf(stderr, "driftpreview drift: %v\n", err)
			return exitError
		}
		stdout.Write(b)
	case "text":
		fmt.Fprint(stdout, report.DriftText(rep, report.TextOptions{Color: useColor(*colorMode, stdout)}))
	default:
		fmt.Fprint(stdout, report.DriftMarkdown(rep))
	}
	for _, f := range rep.Findings {
		if f.Rule == "config-error" {
			fmt.Fprintf(stderr, "driftpreview drift: %s\n", f.Message)
			return exitError
		}
	}
	if rep.Drifted {
		return exitFailing
	}
	if compared, notCompared := rep.Compared(); compared == 0 && notCompared > 0 {
		fmt.Fprintln(stderr, "driftpreview drift: no target could be compared with the live cluster (the report says why)")
		return exitError
	}
	return exitOK
}

// driftUsage heads `driftpreview drift --help`.
const driftUsage = `usage: driftpreview drift [--ref REF] --kubeconfig PATH [flags]

Renders REF (default: the default branch's head) as preview renders a head and
compares every target with the live cluster: per target, the objects and
fields that differ from git, who changed them and when (managedFields), and
what the GitOps controller does about it (self-heal reverts it, self-heal is
off so it stays, another controller fights over it, ignoreDifferences hides
it). Formats: text (a terminal's default), markdown (otherwise), json (the
contract in README.md). Exit code: 0 no drift, 1 drift git does not describe,
2 usage or internal error, or no target could be compared.

flags:
`
