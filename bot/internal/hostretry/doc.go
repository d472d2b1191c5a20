// Package hostretry is the HTTP transport the GitHub and GitLab adapters (bot/github,
// bot/gitlab) share to be good API citizens: it retries rate-limited (403/429) and
// failed (5xx) requests, honouring Retry-After and the hosts' rate-limit reset
// headers, with bounded exponential backoff, replayable bodies and an injectable clock
// so tests never really sleep. It sits under the adapters' API clients, at the very
// end of the bot pipeline where comments and statuses are written.
package hostretry
