package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

func runPreview(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("preview", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		base       = fl.String("base", "", "base ref or SHA (required)")
		head       = fl.String("head", "", "head ref or SHA (required)")
		maxChars   = fl.Int("max-chars", report.DefaultOptions().MaxChars, "markdown size budget in characters")
		cpuProfile = fl.String("cpuprofile", "", "write a pprof CPU profile of this process (not its render children) to FILE")
		memProfile = fl.String("memprofile", "", "write a pprof heap profile to FILE when the preview ends")
		traceFile  = fl.String("trace", "", "write Go's execution trace of this process to FILE (go tool trace)")
		renderProf = fl.String("render-cpuprofile", "", "write a pprof CPU profile of each render child process into the existing directory `DIR` (go tool pprof -top bin/driftpreview DIR/*.pprof merges them)")
	)
	out := addOutputFlags(fl, "`format` of the report on stdout: text (for a person: coloured diffs, no markup), markdown (the comment the bot posts), json, or html (one self-contained page with every target, finding and diff; default: text when stdout is a terminal, else markdown)",
		"text", "markdown", "json", "html")
	format, colorMode, quiet := out.format, out.color, out.quiet
	pf := addPreviewFlags(fl)
	fl.Usage = func() {
		fmt.Fprint(stderr, previewUsage)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return exitError
	}
	usageErr := func(msg string) int {
		fmt.Fprintf(stderr, "driftpreview preview: %s\n", msg)
		return exitError
	}
	switch {
	case fl.NArg() > 0:
		return usageErr(fmt.Sprintf("unexpected argument %q", fl.Arg(0)))
	case *base == "" || *head == "":
		return usageErr("--base and --head are required")
	}
	if msg := out.check(stdout); msg != "" {
		return usageErr(msg)
	}
	req, err := pf.request()
	if err != nil {
		return usageErr(err.Error())
	}
	if err := render.ProfileRenders(*renderProf); err != nil {
		return usageErr("--render-cpuprofile: " + err.Error())
	}
	stopProfiles, err := startProfiles(*cpuProfile, *memProfile, *traceFile)
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview preview: %v\n", err)
		return exitError
	}
	defer func() {
		if err := stopProfiles(); err != nil {
			fmt.Fprintf(stderr, "driftpreview preview: %v\n", err)
		}
	}()
	req.Base, req.Head = *base, *head
	req.Now = now()

	tuneGC()
	prog := newProgress(stderr, *quiet, *base+".."+*head)
	if prog != nil {
		req.Progress = prog
	}
	rep, err := preview.Run(ctx, req)
	prog.finish(err == nil)
	if err != nil {
		fmt.Fprintf(stderr, "driftpreview preview: %v\n", err)
		return exitError
	}
	switch *format {
	case "json":
		b, err := report.JSON(rep)
		if err != nil {
			fmt.Fprintf(stderr, "driftpreview preview: %v\n", err)
			return exitError
		}
		stdout.Write(append(b, '\n'))
	case "html":
		b, err := report.HTML(rep)
		if err != nil {
			fmt.Fprintf(stderr, "driftpreview preview: %v\n", err)
			return exitError
		}
		stdout.Write(b)
	case "text":
		fmt.Fprint(stdout, report.Text(rep, report.TextOptions{Color: useColor(*colorMode, stdout)}))
	default:
		opts := report.DefaultOptions()
		opts.MaxChars = *maxChars
		fmt.Fprint(stdout, report.Markdown(rep, opts))
	}
	return exitCode(rep, "preview", stderr)
}

// now is the preview's clock (a test's is fixed, so two runs print the same
// report).
var now = time.Now

// previewUsage heads `driftpreview preview --help`.
const previewUsage = `usage: driftpreview preview --base REF --head REF [flags]

Renders base and head, diffs them with each other and with the live cluster,
and writes the report to stdout in one of four formats:
  text      for a person at a terminal: the findings, then each changed object
            with its changed fields and a coloured diff (no HTML, no tables);
            the default when stdout is a terminal
  markdown  exactly the comment the bot posts; the default when stdout is not
            a terminal (a pipe, a file, CI), so scripts see no change
  json      the JSON contract (README.md)
  html      one self-contained page (no network fetches) with every target,
            finding and diff, filters and side-by-side diffs:
            driftpreview preview ... --format html > report.html
Progress goes to stderr (--quiet for none), never to stdout. Exit code: 0 when
nothing fails the policy, 1 with failing findings, 2 on a usage, config or
internal error.

flags:
`

// defaultFormat is text for a person at a terminal, markdown for anything else.
func defaultFormat(stdout io.Writer) string {
	if isTerminal(stdout) {
		return "text"
	}
	return "markdown"
}

// useColor decides whether the text format is coloured: --color always or
// never as asked; auto colours a terminal unless NO_COLOR is set (no-color.org)
// or TERM is dumb.
func useColor(mode string, stdout io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(stdout)
}

// exitCode is the contract's exit code for a report: a config error is 2 (the
// report lists each with its line), failing findings 1, else 0.
func exitCode(rep *diffing.Report, cmd string, stderr io.Writer) int {
	for _, f := range rep.Findings {
		if f.Rule == diffing.RuleConfigError {
			// The report lists each config error with its line; the exit code is
			// the contract's "config error", not a policy verdict.
			fmt.Fprintf(stderr, "driftpreview %s: %s\n", cmd, f.Message)
			return exitError
		}
	}
	if rep.Failing {
		return exitFailing
	}
	return exitOK
}

// previewFlags are the flags `preview` and `comment` share: where the repository
// is, which config and targets, and the live cluster.
type previewFlags struct {
	repoDir, baseBranch, cfgFile  *string
	kubeconfig, kubeCtx, liveMode *string
	argoCtx                       *string
	allTargets                    *bool
	targets, repoURLs             stringList
	// allowRemote, remoteConfig, remoteMode, offline and remoteCache make
	// the remote policy.
	allowRemote                           stringList
	remoteConfig, remoteCache, remoteMode *string
	offline                               *bool
	// cacheDir is the render cache's directory ("off": none).
	cacheDir *string
	// checkoutDir is where base and head are checked out ("": chosen).
	checkoutDir *string
}

func addPreviewFlags(fl *flag.FlagSet) *previewFlags {
	p := &previewFlags{
		repoDir:    fl.String("repo", ".", "git repository holding both commits (its working tree is not touched)"),
		baseBranch: fl.String("base-branch", "", "the branch the PR merges into (default: read from --base when it is a remote-tracking branch such as origin/main, else main or master); GitOps sources of this repo at other branches are not affected by the PR"),
		cfgFile:    fl.String("config", "", "repo config `file` to use instead of .driftpreview.yaml at base (preview reads it from disk; comment reads this path of the repository from the base commit, refusing symlinks)"),
		kubeconfig: fl.String("kubeconfig", "", "kubeconfig for the live comparison (default: $KUBECONFIG; none means no live comparison)"),
		kubeCtx:    fl.String("context", "", "kubeconfig context"),
		liveMode:   fl.String("live-mode", "simulate", "simulate (read-only), dry-run (needs patch RBAC) or off"),
		argoCtx:    fl.String("argocd-context", "", "kubeconfig context of the cluster Argo CD runs in, where Applications are read (hub and spoke)"),
		allTargets: fl.Bool("all-targets", false, "render and compare every target, also those none of whose files the PR changes (listed as not affected by default)"),
	}
	fl.Var(&p.targets, "target", "only the targets of this name, or NAME@CLUSTER for one cluster's (repeatable)")
	p.remoteMode = fl.String("remote-mode", "", "what remote sources (Helm repositories, OCI registries, remote kustomize bases, chart dependencies) are fetched: public (the default: any public address, as the controllers would), allowlist (only --allow-remote / remote.allow prefixes) or off; overrides the mode of --remote-config")
	p.offline = fl.Bool("offline", false, "fetch no remote sources (--remote-mode off): targets that need one are listed as not rendered")
	fl.Var(&p.allowRemote, "allow-remote", "URL `prefix` of remote sources to fetch with its own rules (repeatable): in allowlist mode the only ones fetched; loopback, link-local and private addresses are fetched only when a prefix names them")
	p.remoteConfig = fl.String("remote-config", "", "YAML `file` with a remote: block (the server config's: mode, allow with credential files, timeout, caps, cache), e.g. server.yaml; --allow-remote adds prefixes to it")
	p.remoteCache = fl.String("remote-cache", "", "`dir` of the cache of fetched charts (default: the user cache dir's driftpreview/remote)")
	p.cacheDir = fl.String("cache-dir", "", "`dir` of the render cache, renders kept by the content of their input files so the next run takes unchanged targets from it (default: the user cache dir's driftpreview/renders, e.g. $XDG_CACHE_HOME/driftpreview/renders); off for none")
	p.checkoutDir = fl.String("checkout-dir", "", "`dir` to check out base and head under (default: /dev/shm when it is a tmpfs with room for both trees four times over, else $TMPDIR)")
	fl.Var(&p.repoURLs, "repo-url", "a URL of this repository, so Argo CD and Flux objects pointing at it are found (repeatable; the origin remote is always used)")
	return p
}

// request checks the shared flags and builds the preview request (without base
// and head), loading the kubeconfig when there is one and live mode is not off.
func (p *previewFlags) request() (preview.Request, error) {
	mode := diffing.LiveMode(*p.liveMode)
	if !mode.Valid() {
		return preview.Request{}, fmt.Errorf("--live-mode must be simulate, dry-run or off, not %q", mode)
	}
	req := preview.Request{RepoDir: *p.repoDir, ConfigFile: *p.cfgFile, Targets: p.targets, RepoURLs: p.repoURLs, BaseBranch: *p.baseBranch, AllTargets: *p.allTargets, CheckoutDir: *p.checkoutDir}
	f, err := p.fetcher()
	if err != nil {
		return req, err
	}
	req.Remote = f
	if req.RenderCache, err = p.renderCache(); err != nil {
		return req, err
	}
	kubeconfig := *p.kubeconfig
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig != "" && mode != diffing.LiveOff {
		cl, err := kubeCluster(kubeconfig, *p.kubeCtx, mode)
		if err != nil {
			return req, err
		}
		req.DefaultCluster = cl
		if *p.argoCtx != "" {
			if req.ArgoCDCluster, err = kubeCluster(kubeconfig, *p.argoCtx, mode); err != nil {
				return req, err
			}
		}
	}
	return req, nil
}

// renderCache opens the render cache on disk: --cache-dir, else under the
// user cache dir; nil with --cache-dir off, or when there is no cache dir.
func (p *previewFlags) renderCache() (*preview.DiskCache, error) {
	dir := *p.cacheDir
	switch dir {
	case "off":
		return nil, nil
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, nil // no home, no XDG_CACHE_HOME: no cache
		}
		dir = filepath.Join(base, "driftpreview", "renders")
	}
	c, err := preview.OpenDiskCache(dir, 0)
	if err != nil && *p.cacheDir == "" {
		return nil, nil // a read-only home: run without the cache
	}
	if err != nil {
		return nil, fmt.Errorf("--cache-dir: %w", err)
	}
	return c, nil
}

// fetcher builds the remote policy from --remote-config, --remote-mode,
// --offline and --allow-remote (mode public unless one says otherwise); nil
// when it allows nothing.
func (p *previewFlags) fetcher() (*remote.Fetcher, error) {
	var pol remote.Policy
	if *p.remoteConfig != "" {
		data, err := os.ReadFile(*p.remoteConfig)
		if err != nil {
			return nil, fmt.Errorf("--remote-config: %w", err)
		}
		var file struct {
			Remote remote.Policy `yaml:"remote"`
		}
		if err := yaml.Unmarshal(data, &file); err != nil {
			return nil, fmt.Errorf("--remote-config %s: %v", *p.remoteConfig, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		pol = file.Remote
	}
	for _, a := range p.allowRemote {
		pol.Allow = append(pol.Allow, remote.Prefix{URL: a})
	}
	if *p.remoteMode != "" {
		pol.Mode = remote.Mode(*p.remoteMode)
	}
	if *p.offline {
		if pol.Mode != "" && pol.Mode != remote.ModeOff && *p.remoteMode != "" {
			return nil, fmt.Errorf("--offline and --remote-mode %s contradict each other: give one", pol.Mode)
		}
		pol.Mode = remote.ModeOff
	}
	pol.Mode = cmp.Or(pol.Mode, remote.DefaultMode)
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("--remote-mode/--allow-remote/--remote-config: %w", err)
	}
	if pol.Mode == remote.ModeOff {
		return nil, nil
	}
	if *p.remoteCache != "" {
		pol.CacheDir = *p.remoteCache
	}
	if pol.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		pol.CacheDir = filepath.Join(dir, "driftpreview", "remote")
	}
	return remote.NewFetcher(pol)
}

// kubeCluster loads one context of a kubeconfig (a path or a list like $KUBECONFIG).
func kubeCluster(kubeconfig, context string, liveMode diffing.LiveMode) (*preview.Cluster, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
	if strings.Contains(kubeconfig, string(os.PathListSeparator)) {
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: strings.Split(kubeconfig, string(os.PathListSeparator))}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	name := context
	if name == "" {
		if raw, err := cc.RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	return &preview.Cluster{Name: name, Config: rc, LiveMode: liveMode}, nil
}
