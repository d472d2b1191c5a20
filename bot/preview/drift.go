package preview

import (
	"context"
	"errors"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
)

// DriftRequest is one drift check: a commit of a repository (by default the
// head of its default branch) against the live clusters.
type DriftRequest struct {
	// Request says where the repository, the clusters and the config are, as
	// for a preview (RepoDir, GitEnv, Config/ConfigFile, Clusters,
	// DefaultCluster, ArgoCDCluster, Targets, RepoURLs, Remote, RenderCache,
	// Progress, Budget…). Its Base, Head and AllTargets are not used: Drift
	// renders Ref as both and compares every target.
	Request
	// Ref is the commit to compare with live. Empty: the default branch's
	// head, origin's default branch (refs/remotes/origin/HEAD) when the
	// repository has one, else the repository's HEAD (in a bare mirror, the
	// default branch).
	Ref string
}

// Drift renders Ref with the preview engine and compares every target with
// its live cluster, the way a preview compares its head: no base↔head diff,
// only what the next sync would change live. The report lists per target the
// live objects that differ from git, each field with the field manager that
// changed it and when (managedFields), classified as the engine's findings
// classify them (live-drift for a person, field-conflict for another
// controller such as an HPA through the scale subresource), and what the
// GitOps controller does about it (diffing.DriftOutcome: Argo CD self-heal
// reverts it, self-heal is off so it stays, Flux reverts it at its next
// reconcile, a suspended object keeps it, ignoreDifferences hides it).
//
// What callers read:
//   - rep.Drifted: some target has drift git does not describe (the CLI exits 1);
//   - rep.Counts(): per compared target and cluster, the number of objects with
//     such drift (the gauge driftpreview_drift_objects{repo,target,cluster});
//     targets that could not be compared are left out, rep.Compared() counts them;
//   - report.DriftMarkdown(rep) (bot/report): the Markdown an issue or comment
//     shows, report.DriftText for a terminal, report.DriftJSON the JSON contract.
//
// Errors are only for what is outside the repository's control (git, a ref
// that does not exist, no cluster to compare with, a cancelled ctx); render
// errors and unreadable clusters are in the report (DriftTarget.NotCompared).
func Drift(ctx context.Context, req DriftRequest) (*diffing.DriftReport, error) {
	if req.DefaultCluster == nil && len(req.Clusters) == 0 {
		return nil, errors.New("drift needs a live cluster to compare with: give a kubeconfig (--kubeconfig or $KUBECONFIG) or configure clusters")
	}
	ref := req.Ref
	if ref == "" {
		r, err := openRepo(ctx, req.RepoDir, req.GitEnv)
		if err != nil {
			return nil, err
		}
		var branch string
		ref, branch = r.defaultBranch(ctx)
		if req.BaseBranch == "" {
			req.BaseBranch = branch
		}
	}
	pr := req.Request
	pr.Base, pr.Head, pr.AllTargets, pr.drift = ref, ref, true, true
	rep, err := Run(ctx, pr)
	if err != nil {
		return nil, err
	}
	return diffing.NewDriftReport(rep, ref), nil
}

// defaultBranch is the ref of the repository's default branch and its name:
// origin/HEAD's target when it is set (a clone), else HEAD (a bare mirror's
// HEAD is the default branch) with the branch it names, if any.
func (r repo) defaultBranch(ctx context.Context) (ref, branch string) {
	if out, err := r.git(ctx, nil, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil {
		full := strings.TrimSpace(string(out))
		if b, ok := strings.CutPrefix(full, "refs/remotes/origin/"); ok && b != "" {
			return "origin/" + b, b
		}
	}
	if out, err := r.git(ctx, nil, "symbolic-ref", "--quiet", "HEAD"); err == nil {
		if b, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "refs/heads/"); ok {
			return "HEAD", b
		}
	}
	return "HEAD", ""
}

// driftController is the controller a drift report judges by: the live
// object's sync policy when it was read (what the controller does now, even
// when someone changed it by hand), else git's; for a target no controller
// object deploys, the repo config's sync.selfHeal when it is on.
func driftController(c *diffing.Controller, st *controller.State, opts diffing.Options) *diffing.Controller {
	if c == nil {
		if !opts.SelfHeal {
			return nil
		}
		return &diffing.Controller{AutoSync: true, SelfHeal: true, Prune: opts.Prune}
	}
	if st == nil || !st.Exists {
		return c
	}
	out := *c
	out.AutoSync, out.SelfHeal, out.Prune = st.AutoSync, st.SelfHeal, st.Prune
	out.Suspended = c.Suspended || st.Suspended
	if out.Suspended {
		out.AutoSync, out.SelfHeal = false, false
	}
	if c.Kind == diffing.FluxHelmRelease.Kind {
		out.DriftDetection = st.DriftDetection
	}
	return &out
}
