// Package report is the last stage of the driftpreview pipeline before the host
// adapters: it turns a *diffing.Report into the sticky pull-request comment
// (Markdown), the status title and the JSON that CI jobs script against.
//
// The comment leads with the risk and spends its budget on what the PR changes
// (issue 23): a headline with the verdict, a table of the findings the PR
// introduces sorted by severity, then per target the PR changes what it changes
// (base → head) and, apart from it, what the merge does to the live cluster (head
// → live), with diffs collapsed per object; then, collapsed, the pre-existing
// findings, the targets the merge changes only live, and one line per reason for
// the targets without a section (not rendered, not affected by the PR). The
// renderer knows nothing about GitHub or GitLab; it takes a size budget
// (Options.MaxChars) and cuts pre-existing material and notes before any change
// of the PR, then diffs, never the PR's findings, to fit it, and says where the
// rest is. When the cut leaves out pre-existing findings, or the PR's findings
// alone do not fit, Pages splits the comment into numbered comments.
//
// Output is deterministic: the same Report always gives the same bytes.
//
// Files by role: layout.go computes the sections, rows and units of a report (no
// text budget); markdown.go writes the comment from a layout; fit.go measures it
// and cuts diffs to the size budget; pages.go splits it into numbered comments;
// text.go holds the Markdown/HTML text helpers; title.go and json.go are the status
// title and the JSON writer; terminal.go writes the text a person reads at a
// terminal (`preview --format text`), with control characters escaped; html.go
// writes the full report page (`--format html`, the page the comment links),
// from the embedded template, style and script of page/, and reportlink.go the
// comment's line that links it.
package report
