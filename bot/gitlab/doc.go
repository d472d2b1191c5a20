// Package gitlab is the GitLab host adapter, the last stage of the bot pipeline
// (webhook → queue → job → render/diffing → report → adapter). It verifies and parses
// Merge Request and Note hooks into host-neutral bot.Events, and writes the job's
// results back: one sticky merge request note (plus numbered follow-ups) and one
// commit status named driftpreview. It also hands the job clone credentials and
// answers "may this user re-run?" (Developer access or more). Everything
// GitLab-specific stays in here; callers see only the bot types.
//
// Package gitlabtest holds the httptest fake of the GitLab API used to test it.
package gitlab
