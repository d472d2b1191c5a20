// Package jobs is the work the bot's queue runs for one pull request: fetch base and
// head into a persistent bare mirror, run the preview pipeline (bot/preview) against
// the configured clusters, render the comment (bot/report) and post it with the
// status through the host adapter. It sits between bot/queue (which delivers an Args
// to Worker.Work, retrying and rescuing) and the adapters in bot/github and
// bot/gitlab (behind the small Host interface).
//
// A job never posts over a newer one: before posting it compares its head SHA with
// the newest head recorded for the PR, and every status it starts is completed, with
// a short reason when something failed, so no check stays pending forever. The
// one case no job code runs for, a process killed during the last attempt (River's
// rescuer then discards the job), is closed by Worker.Sweep, which completes the
// statuses such jobs left in progress, from the record the queue keeps of them.
package jobs
