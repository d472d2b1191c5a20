// Package discover decides which targets the bot previews when the repository's
// .driftpreview.yaml names none (or there is no such file). It runs after checkout
// and before render, on both the base and the head checkout:
//
//   - FromControllers reads the GitOps controller objects the repository declares
//     (Argo CD Applications, Flux Kustomizations and HelmReleases, parsed by
//     bot/gitops) at base and head and weaves them into one list: the base's
//     declaration wins, the head's is kept as config.HeadSide, and a controller
//     object the PR deletes is marked so.
//   - FromPaths, when no controller object declares a target, finds the
//     directories the PR's changed paths affect: kustomizations, Helm charts and
//     directories of plain manifests, following kustomize bases up to the overlays
//     that deploy them.
//
// Targets puts the two together behind the configured targets. Both read an
// untrusted checkout and never render it themselves (FromControllers renders only
// through the caller's gitops.RenderFunc).
package discover
