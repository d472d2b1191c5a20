package render

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"strings"

	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/gitsrc"
)

// Render turns the target directory path (relative to the checkout root) into an
// ObjectSet sorted by key. It picks the renderer per opts.Renderer, reads only files
// inside root, and enforces opts' size, memory, CPU and time limits. The render
// runs in a child process (this same binary in its render mode, see child.go), so
// a template that exhausts memory or loops kills only that process. Problems in
// the files, and a render stopped by a limit, come back as *Error (file and line
// where known); anything else, such as a bad root or a cancelled ctx, as a plain
// error.
//
// With opts.Remote, a remote chart (opts.Helm.Chart) and unvendored chart
// dependencies are fetched first, in this process (prefetch); ObjectSet.Charts
// names the versions they resolved to.
func Render(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	set, _, err := RenderEncoded(ctx, root, target, opts)
	return set, err
}

// RenderEncoded is Render, and also returns the set as EncodeSet writes it
// when the render process's answer already holds that (nil otherwise): the
// answer itself, without its CPU time, so a cache that keeps renders encoded
// need not encode the set again. DecodeSet reads it as the set returned.
func RenderEncoded(ctx context.Context, root, target string, opts Options) (ObjectSet, []byte, error) {
	set, err := renderFetching(ctx, root, target, opts)
	body := set.encoded
	set.encoded = nil
	if err != nil || len(set.Charts) > 0 {
		body = nil
	}
	return set, body, hideLocalPaths(err, root, opts)
}

// renderFetching is Render, its errors naming local paths.
func renderFetching(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	opts = withDefaults(opts)
	checkoutRoot := root
	root, target, charts, err := prefetch(ctx, root, target, &opts)
	if err != nil {
		return ObjectSet{}, err
	}
	if root != checkoutRoot {
		// A fetched chart or artifact: not the checkout opts.Checkout names.
		opts.Checkout = ""
	}
	set, err := renderChild(ctx, root, target, opts)
	// A remote kustomize base the render asks for is fetched here (the render
	// process never touches the network) and the render runs again with it.
	// So is a helmCharts chart that is neither vendored nor fetched yet.
	for n := 0; err != nil && opts.Remote != nil; n++ {
		re, isErr := errors.AsType[*Error](err)
		if !isErr {
			break
		}
		if c, ok := ChartNeeded(err); ok {
			if n >= maxRemoteBases {
				err = &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: fmt.Sprintf("the target uses more than %d remote bases and charts, the limit per target", maxRemoteBases)}}
				break
			}
			ch, ferr := opts.Remote.HelmChart(ctx, c.Repo, c.Name, c.Version)
			if ferr != nil {
				if ctx.Err() != nil {
					return ObjectSet{}, fmt.Errorf("fetching %s: %w", c, ctx.Err())
				}
				err = &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: fmt.Sprintf("helmCharts %s: %v", c, ferr)}}
				break
			}
			kh := &opts.Kustomize.Helm
			fetched := maps.Clone(kh.Charts)
			if fetched == nil {
				fetched = map[string]FetchedChart{}
			}
			fetched[c.Key()] = FetchedChart{Dir: ch.Dir, Version: ch.Version}
			kh.Charts = fetched
			charts = append(charts, ResolvedChart{RepoURL: remote.Redact(c.Repo), Name: c.Name, Requested: c.Version, Version: ch.Version})
			set, err = renderChild(ctx, root, target, opts)
			continue
		}
		spec, ok := RemoteNeeded(err)
		if !ok {
			break
		}
		if n >= maxRemoteBases {
			err = &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: fmt.Sprintf("the target uses more than %d remote bases and charts, the limit per target", maxRemoteBases)}}
			break
		}
		b, ferr := opts.Remote.GitBase(ctx, spec)
		if ferr != nil {
			if ctx.Err() != nil {
				return ObjectSet{}, fmt.Errorf("fetching remote base %s: %w", remote.Redact(spec), ctx.Err())
			}
			name := remote.Redact(spec)
			if s, perr := gitsrc.ParseKustomize(spec); perr == nil && s.Ref != "" {
				name += " (ref " + s.Ref + ")"
			}
			err = &Error{File: re.File, Line: re.Line, Err: &Unavailable{Reason: fmt.Sprintf("remote base %s: %v", name, ferr)}}
			break
		}
		bases := maps.Clone(opts.Kustomize.RemoteBases)
		if bases == nil {
			bases = map[string]RemoteBase{}
		}
		bases[spec] = RemoteBase{Root: b.Root, Path: b.Path, Revision: b.Commit}
		opts.Kustomize.RemoteBases = bases
		charts = append(charts, ResolvedChart{RepoURL: b.RepoURL, Name: b.Path, Requested: b.Ref, Version: b.Commit, GitBase: true})
		set, err = renderChild(ctx, root, target, opts)
	}
	set.Charts = charts
	if c := opts.Helm.Chart; c != nil && err != nil && len(charts) > 0 {
		// The files are in the fetched chart, not in the checkout: name it.
		if re, ok := errors.AsType[*Error](err); ok {
			err = &Error{File: path.Join(c.Name+"-"+charts[0].Version, re.File), Line: re.Line, Err: re.Err}
		}
	}
	return set, err
}

// maxRemoteBases caps the remote kustomize bases one render fetches.
const maxRemoteBases = 16

// renderLocal renders in this process: what the child process runs. The timeout
// here is a second line behind the parent's, which kills the child.
func renderLocal(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	set, _, err := renderLocalStatus(ctx, root, target, opts)
	return set, err
}

// renderLocalStatus is renderLocal, and also reports whether the render was
// abandoned (a timeout, or a panic recovered): a render process must not take
// more work after that, since what it left behind may still run or be broken.
func renderLocalStatus(ctx context.Context, root, target string, opts Options) (ObjectSet, bool, error) {
	opts = withDefaults(opts)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	type result struct {
		set      ObjectSet
		err      error
		panicked bool
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				// The stack goes to nobody: it may hold file content. Keep the
				// value, which names what broke.
				done <- result{err: &Error{File: target, Err: fmt.Errorf("rendering crashed (a bug in driftpreview or a library it uses): %v", r)}, panicked: true}
			}
		}()
		set, err := render(ctx, root, target, opts)
		done <- result{set: set, err: err}
	}()
	select {
	case r := <-done:
		return r.set, r.panicked, r.err
	case <-ctx.Done():
		if parent.Err() == nil {
			return ObjectSet{}, true, &Error{File: target, Err: fmt.Errorf("rendering took longer than %s and was stopped; look for templates or kustomizations that loop or grow without bound", opts.Timeout)}
		}
		return ObjectSet{}, true, fmt.Errorf("rendering %s: %w", target, ctx.Err())
	}
}

func withDefaults(opts Options) Options {
	d := DefaultOptions()
	if opts.Renderer == "" {
		opts.Renderer = d.Renderer
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = d.MaxFileBytes
	}
	if opts.MaxTotalBytes <= 0 {
		opts.MaxTotalBytes = d.MaxTotalBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = d.MaxOutputBytes
	}
	if opts.MaxMemoryBytes <= 0 {
		opts.MaxMemoryBytes = d.MaxMemoryBytes
	}
	if opts.MaxCPUTime <= 0 {
		opts.MaxCPUTime = d.MaxCPUTime
	}
	if opts.Helm.KubeVersion == "" {
		opts.Helm.KubeVersion = d.Helm.KubeVersion
	}
	return opts
}

func render(ctx context.Context, root, target string, opts Options) (ObjectSet, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: resolving root %s: %w", target, root, err)
	}
	target = filepath.ToSlash(target)
	if target == "" {
		target = "."
	}
	t, err := cleanRel(target)
	if err != nil {
		return ObjectSet{}, &Error{File: target, Err: err}
	}
	sb, err := openSandbox(absRoot, opts)
	if err != nil {
		return ObjectSet{}, fmt.Errorf("rendering %s: %w", target, err)
	}
	defer sb.Close()
	fi, err := sb.stat(t)
	if err != nil {
		return ObjectSet{}, err
	}
	if !fi.IsDir() {
		return ObjectSet{}, &Error{File: t, Err: errors.New("target is not a directory")}
	}

	renderer := opts.Renderer
	if renderer == RendererAuto {
		renderer = detect(sb, t)
	}
	var set ObjectSet
	switch renderer {
	case RendererPlain:
		set, err = renderPlain(ctx, sb, t, opts)
	case RendererKustomize:
		set, err = renderKustomize(ctx, sb, t, opts)
	case RendererHelm:
		name := opts.Helm.ReleaseName
		if name == "" {
			name = path.Base(filepath.ToSlash(filepath.Join(absRoot, t)))
		}
		set, err = renderHelm(ctx, sb, t, name, opts)
	default:
		return ObjectSet{}, fmt.Errorf("rendering %s: unknown renderer %q (want auto, kustomize, helm or plain)", t, opts.Renderer)
	}
	if err != nil {
		return ObjectSet{}, sb.scrub(err, opts, t)
	}
	if err := ctx.Err(); err != nil {
		return ObjectSet{}, err
	}
	if opts.ArgoCDHooks {
		dropHooks(&set, isArgoHook, "Argo CD")
	}
	defaultNamespace(set.Objects, opts.Namespace)
	set.Sort()
	if len(opts.Substitute) > 0 || opts.SubstituteAlways {
		return substitute(set, opts.Substitute, !opts.SubstituteLenient, opts.MaxOutputBytes)
	}
	return set, nil
}

// KustomizationNames are the file names kustomize accepts, in its order
// (konfig.RecognizedKustomizationFileNames).
var KustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

var kustomizationNames = KustomizationNames

// detect picks the renderer from the files in the target directory.
func detect(sb *sandbox, dir string) Renderer { return Detect(sb.stat, dir) }

// Detect picks the renderer for the directory dir the way Argo CD and Flux do: a
// kustomization (any of KustomizationNames) means kustomize, a Chart.yaml helm,
// anything else plain manifests. stat looks a path up (os.Stat, or a sandbox's).
func Detect(stat func(name string) (fs.FileInfo, error), dir string) Renderer {
	for _, n := range KustomizationNames {
		if fi, err := stat(path.Join(dir, n)); err == nil && !fi.IsDir() {
			return RendererKustomize
		}
	}
	if fi, err := stat(path.Join(dir, "Chart.yaml")); err == nil && !fi.IsDir() {
		return RendererHelm
	}
	return RendererPlain
}

// addAll appends objs to set unless two of them share a key, which is an *Error
// naming both sources: the last step of the plain and helm renderers.
func addAll(set *ObjectSet, objs []parsedObject) error {
	if err := duplicates(objs); err != nil {
		return err
	}
	for _, o := range objs {
		set.Objects = append(set.Objects, o.Object)
	}
	return nil
}

// duplicates returns an *Error naming both sources when two objects share a key.
func duplicates(objs []parsedObject) error {
	seen := make(map[ObjectKey]parsedObject, len(objs))
	for _, o := range objs {
		if first, ok := seen[o.Key]; ok {
			return &Error{File: o.Source, Line: o.Line, Err: fmt.Errorf("%s is defined twice: here and in %s", o.Key, at(first.Source, first.Line))}
		}
		seen[o.Key] = o
	}
	return nil
}

func at(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// hasExt reports whether name is a manifest file by its extension.
func hasExt(name string, exts ...string) bool {
	ext := strings.ToLower(path.Ext(name))
	for _, e := range exts {
		if ext == e {
			return true
		}
	}
	return false
}
