// Package server is the front of the bot: the HTTP endpoints that receive GitHub
// and GitLab webhooks, plus health, readiness and Prometheus metrics, and the wiring
// that runs the durable queue (bot/queue) with the preview worker (bot/jobs).
//
// A delivery is verified by its host adapter, deduplicated by delivery ID, checked
// against the repository allowlist and answered at once with its job queued; the
// preview itself runs later on the queue. A push supersedes the PR's older jobs and a
// close cancels them.
package server
