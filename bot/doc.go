// Package bot is the outer stage of driftpreview: it turns webhooks into jobs, runs
// the preview pipeline (render → diffing) on a checkout of base and head, and posts
// one sticky comment and one status per pull request through a host adapter.
//
// This package holds the host-neutral types (PR, Event, Status) that the adapters in
// bot/github and bot/gitlab translate to and from, and that bot/jobs and bot/server
// pass around; cmd wires them together. It imports no other driftpreview package.
package bot
