// Package github is the GitHub App host adapter, the last stage of the bot pipeline
// (webhook → queue → job → render/diffing → report → adapter). It verifies and parses
// webhook deliveries into host-neutral bot.Events, and writes the job's results back:
// one sticky PR comment (plus numbered follow-ups) and one check run named
// driftpreview. It also hands the job clone credentials and answers "may this user
// re-run?". Everything GitHub-specific — installation tokens (ghinstallation), the
// go-github client, rate limits — stays in here; callers see only the bot types.
//
// Package githubtest holds the httptest fake of the GitHub API used to test it.
package github
