// Package queue is the bot's durable job queue: River (github.com/riverqueue/river)
// over SQLite (embedded, the default) or Postgres (several replicas), plus three small
// tables of its own in the same database. It sits between bot/server, which enqueues
// a job per accepted webhook delivery, and bot/jobs, whose worker runs the preview.
//
// Its tables: driftpreview_delivery remembers delivery IDs for a while so a
// redelivered webhook is not run twice (River's unique job args are the second
// layer), and driftpreview_pr_head records the newest head SHA seen per pull request,
// so a job for an older SHA never posts over the result of a newer one, and
// driftpreview_status records each in-progress status a job set until it is
// completed, so one left behind by a job River discarded or cancelled without our
// code running (a process killed on the last attempt) is found and completed
// exactly once (ClaimOrphans).
package queue
