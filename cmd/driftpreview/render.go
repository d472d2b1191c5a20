package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftpreview/driftpreview/render"
)

const renderUsage = `usage: driftpreview render DIR [--helm-values FILE]... [--renderer auto|kustomize|helm|plain]
                           [--namespace NS] [--release-name N] [--recurse] [--root DIR]

Renders DIR the way the bot does and prints the objects as multi-document YAML in
key order, each preceded by a "# Source: <file>" comment. Secret values are hidden.

The sandbox root is the git checkout that contains DIR (the nearest parent with a
.git entry), or DIR itself outside a checkout; --root overrides it. Kustomize bases
and symlinks may reach anywhere inside the root and nowhere outside it.

--helm-values files are yours, not a pull request's: they are read relative to the
current directory (even outside the root) and merged in order, later files winning,
as with helm -f.

Exit status: 0 on success, 2 on a render or usage error (printed on stderr).

flags:
`

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// runRender implements `driftpreview render`: a local preview of one target's
// rendered objects, and the quickest way to debug a render-error finding.
func runRender(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, renderUsage)
		fs.PrintDefaults()
	}
	var values stringList
	fs.Var(&values, "helm-values", "Helm values `FILE`, relative to the current directory (repeatable)")
	renderer := fs.String("renderer", string(render.RendererAuto), "renderer: auto, kustomize, helm or plain")
	namespace := fs.String("namespace", "", "namespace for namespaced objects without one (and the Helm release namespace)")
	release := fs.String("release-name", "", "Helm release name (default: the base name of DIR)")
	recurse := fs.Bool("recurse", false, "plain renderer: also read subdirectories")
	rootFlag := fs.String("root", "", "sandbox root (default: the git checkout containing DIR)")

	// Accept flags after DIR too: `render apps/shop --namespace shop`.
	var positional []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return exitOK
			}
			return exitError
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		fmt.Fprintf(stderr, "driftpreview render: want exactly one DIR, got %d\n\n", len(positional))
		fs.Usage()
		return exitError
	}
	switch r := render.Renderer(*renderer); r {
	case render.RendererAuto, render.RendererKustomize, render.RendererHelm, render.RendererPlain:
	default:
		fmt.Fprintf(stderr, "driftpreview render: unknown renderer %q (want auto, kustomize, helm or plain)\n", r)
		return exitError
	}

	dir, err := filepath.Abs(positional[0])
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview render: %v\n", err)
		return exitError
	}
	root := *rootFlag
	if root == "" {
		root = checkoutRoot(dir)
	}
	if root, err = filepath.Abs(root); err != nil {
		fmt.Fprintf(stderr, "driftpreview render: %v\n", err)
		return exitError
	}
	target, err := filepath.Rel(root, dir)
	if err != nil || !filepath.IsLocal(target) && target != "." {
		fmt.Fprintf(stderr, "driftpreview render: %s is not inside the root %s\n", dir, root)
		return exitError
	}

	opts := render.DefaultOptions()
	opts.Renderer = render.Renderer(*renderer)
	opts.Namespace = *namespace
	opts.Helm.ReleaseName = *release
	opts.Plain.Recurse = *recurse
	if len(values) > 0 {
		merged, err := readValues(values)
		if err != nil {
			fmt.Fprintf(stderr, "driftpreview render: %v\n", err)
			return exitError
		}
		opts.Helm.Values = merged
	}

	set, err := render.Render(ctx, root, filepath.ToSlash(target), opts)
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview render: %v\n", err)
		return exitError
	}
	if err := render.WriteYAML(stdout, set.Objects); err != nil {
		fmt.Fprintf(stderr, "driftpreview render: %v\n", err)
		return exitError
	}
	for _, n := range set.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	return exitOK
}

// checkoutRoot finds the nearest directory at or above dir holding .git, or dir.
func checkoutRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// readValues reads the user's values files and merges them in order.
func readValues(files []string) (map[string]any, error) {
	merged := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading values file: %w", err)
		}
		docs, err := render.DecodeYAML(data, f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			m, ok := d.Value.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s:%d: a values file must be a YAML mapping", f, d.Line)
			}
			merged = mergeMaps(merged, m)
		}
	}
	return merged, nil
}

func mergeMaps(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
	return dst
}
