// Package preview runs the driftpreview pipeline for one pair of commits: it checks
// base and head out of git into temp dirs, reads the repo config from base, finds
// the targets (bot/discover), renders every target at both (telling the renderer
// which side each checkout is), reads the live cluster and the GitOps controller
// objects, diffs, and returns the Report. Both
// `driftpreview preview` and the bot's jobs call it.
package preview
