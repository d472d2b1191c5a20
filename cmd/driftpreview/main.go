package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/driftpreview/driftpreview/render"
)

// Exit codes of the CLI contract.
const (
	exitOK      = 0 // nothing fails the policy
	exitFailing = 1 // failing findings
	exitError   = 2 // usage, config or internal error
)

// commands maps each subcommand to its entry point; each lives in its own file.
var commands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) int{
	"version": runVersion,
	"render":  runRender,
	"preview": runPreview,
	"drift":   runDrift,
	"comment": runComment,
	"serve":   runServe,
}

const usage = `usage:
  driftpreview preview [--repo DIR] --base REF --head REF [--config FILE]
                       [--kubeconfig PATH] [--context NAME] [--live-mode simulate|dry-run|off]
                       [--format text|markdown|json|html] [--color auto|always|never] [--quiet]
                       [--target NAME]...   (--format: text on a terminal, else markdown)
  driftpreview drift [--ref REF] [--repo DIR] [--kubeconfig PATH] [--context NAME]
                     [--format text|markdown|json] [--target NAME]...   (live drift of a ref)
  driftpreview comment [--host auto|github|gitlab] [--dry-run] [--repo DIR] [--config FILE]
                       [--kubeconfig PATH] [--context NAME] [--live-mode simulate|dry-run|off]
                       [--target NAME]...   (in GitHub Actions or GitLab CI: posts the preview)
  driftpreview render DIR [--helm-values FILE]... [--renderer auto|kustomize|helm|plain]
  driftpreview serve --config server.yaml
  driftpreview version
`

func main() {
	// Huge pages for this process's heap where the kernel gives them only on
	// request (render/hugeheap.go); render processes reserve their own.
	render.ReserveHeap()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	// The render processes end with this one, reaped (their CPU time is
	// this process's children's).
	render.Shutdown()
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitError
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "driftpreview: unknown command %q\n\n%s", args[0], usage)
		return exitError
	}
	return cmd(ctx, args[1:], stdout, stderr)
}
