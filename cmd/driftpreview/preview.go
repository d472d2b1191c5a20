package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/driftpreview/driftpreview/bot/preview"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
)

func runPreview(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("preview", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var (
		repoDir    = fl.String("repo", ".", "git repository holding both commits (its working tree is not touched)")
		base       = fl.String("base", "", "base ref or SHA (required)")
		baseBranch = fl.String("base-branch", "", "the branch the PR merges into (default: read from --base when it is a remote-tracking branch such as origin/main, else main or master); GitOps sources of this repo at other branches are not affected by the PR")
		head       = fl.String("head", "", "head ref or SHA (required)")
		cfgFile    = fl.String("config", "", "repo config to use instead of .driftpreview.yaml at base")
		kubeconfig = fl.String("kubeconfig", "", "kubeconfig for the live comparison (default: $KUBECONFIG; none means no live comparison)")
		kubeCtx    = fl.String("context", "", "kubeconfig context")
		liveMode   = fl.String("live-mode", "simulate", "simulate (read-only), dry-run (needs patch RBAC) or off")
		format     = fl.String("format", "markdown", "markdown or json")
		maxChars   = fl.Int("max-chars", report.DefaultOptions().MaxChars, "markdown size budget in characters")
		targets    stringList
		repoURLs   stringList
		argoCtx    = fl.String("argocd-context", "", "kubeconfig context of the cluster Argo CD runs in, where Applications are read (hub and spoke)")
	)
	fl.Var(&targets, "target", "only the targets of this name, or NAME@CLUSTER for one cluster's (repeatable)")
	fl.Var(&repoURLs, "repo-url", "a URL of this repository, so Argo CD and Flux objects pointing at it are found (repeatable; the origin remote is always used)")
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
	case *format != "markdown" && *format != "json":
		return usageErr(fmt.Sprintf("--format must be markdown or json, not %q", *format))
	case *liveMode != "simulate" && *liveMode != "dry-run" && *liveMode != "off":
		return usageErr(fmt.Sprintf("--live-mode must be simulate, dry-run or off, not %q", *liveMode))
	}

	req := preview.Request{RepoDir: *repoDir, Base: *base, Head: *head, ConfigFile: *cfgFile, Targets: targets, RepoURLs: repoURLs, BaseBranch: *baseBranch}
	if *kubeconfig == "" {
		*kubeconfig = os.Getenv("KUBECONFIG")
	}
	if *kubeconfig != "" && *liveMode != "off" {
		cl, err := kubeCluster(*kubeconfig, *kubeCtx, *liveMode)
		if err != nil {
			return usageErr(err.Error())
		}
		req.DefaultCluster = cl
		if *argoCtx != "" {
			if req.ArgoCDCluster, err = kubeCluster(*kubeconfig, *argoCtx, *liveMode); err != nil {
				return usageErr(err.Error())
			}
		}
	}

	rep, err := preview.Run(ctx, req)
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
	default:
		opts := report.DefaultOptions()
		opts.MaxChars = *maxChars
		fmt.Fprint(stdout, report.Markdown(rep, opts))
	}
	for _, f := range rep.Findings {
		if f.Rule == diffing.RuleConfigError {
			// The report above lists each config error with its line; the exit code
			// is the contract's "config error", not a policy verdict.
			fmt.Fprintf(stderr, "driftpreview preview: %s\n", f.Message)
			return exitError
		}
	}
	if rep.Failing {
		return exitFailing
	}
	return exitOK
}

// kubeCluster loads one context of a kubeconfig (a path or a list like $KUBECONFIG).
func kubeCluster(kubeconfig, context, liveMode string) (*preview.Cluster, error) {
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
