// Package preview runs the driftpreview pipeline for one pair of commits: it checks
// base and head out of git into temp dirs, reads the repo config from base, renders
// every target at both, reads the live cluster, diffs, and returns the Report. Both
// `driftpreview preview` and the bot's jobs call it.
package preview
