// Package gitops discovers preview targets from the GitOps controller objects a
// repository already holds, so `driftpreview preview` needs no .driftpreview.yaml on a
// real Argo CD or Flux repo.
//
// It sits at the start of the pipeline, in the bot: when the repo config has no
// targets, bot/discover calls Discover on the base and the head checkout and gets
// config.Targets as if a maintainer had written them. Discover reads Argo CD Applications and
// ApplicationSets, and Flux GitRepositories, Kustomizations and HelmReleases, from the
// repository's YAML files and from what other targets render to (app-of-apps, a Flux
// cluster directory that applies further Kustomizations), up to a fixed point.
//
// Each controller object whose source is this repository becomes a Target carrying
// how the controller renders it (Kustomize overrides, Helm values, directory options),
// how it syncs (prune, self-heal, replace, field manager) and the differences it
// ignores. Objects whose source cannot be seen (another repository, a Helm repository
// chart that is not vendored, an unsupported ApplicationSet generator) are listed as
// not rendered with the reason, never dropped silently.
//
// Flux objects are kept per cluster (the clusters/<name>/ directory they are declared
// in, or the cluster of the target that renders them), so clusters/staging and
// clusters/production each get their own targets. A Flux GitRepository of this
// repository at another branch, tag or commit is not affected by a pull request and
// is listed so; an ExternalArtifact that an ArtifactGenerator copies from this
// repository is mapped back onto the directory it mirrors.
//
// Flux postBuild substitution is applied after rendering by Substitute, which the
// pipeline calls with Target.Substitute.
package gitops
