// Package keylock hands out one mutex per key, for the bot's work that must not run
// twice at once for the same thing inside one process: the adapters' sticky-comment
// upserts per pull or merge request (bot/github, bot/gitlab), and the jobs' fetches
// per mirror and posts per pull request (bot/jobs).
package keylock
