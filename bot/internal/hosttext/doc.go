// Package hosttext holds the host-neutral text rules the adapters (bot/github,
// bot/gitlab) share at the end of the pipeline, where the rendered report is posted:
// the hidden sticky-comment markers, the plan that turns existing comments plus new
// pages into creates/updates/deletes (so a comment is never duplicated), and
// truncation to a host's length limit on a rune boundary.
package hosttext
