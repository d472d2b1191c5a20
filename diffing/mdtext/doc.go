// Package mdtext is driftpreview's one escaper for text a pull request controls
// (object kinds and names, target and Application names, Secret keys, values,
// render errors, notes) on its way into what a host renders: the sticky comment
// (GitHub-flavoured Markdown, GitLab Flavored Markdown), a check run's title and
// summary, a GitLab commit status description, the Actions job summary. Every
// writer of such text goes through it, so a PR cannot write into the comment: no
// link, image, mention, reference or raw HTML of its own survives, and code spans
// hold whatever backticks a value has.
//
//   - Code writes a value as an inline code span (CommonMark 6.1: a backtick
//     string longer than any run inside, padded with a space when needed).
//   - Fence writes a fenced code block that no line of the content can close.
//   - Text writes plain text: Markdown punctuation backslash-escaped, "<" as an
//     entity, mentions and references (@user, #1, !1, ~label, &epic, $snippet,
//     %milestone) and autolinks (https://…, www.…) broken by a zero-width joiner.
//   - HTML writes plain text inside an HTML element (a <summary>): escaped, with
//     mentions and references broken as in Text.
//   - Inline keeps the code spans and emphasis of a message driftpreview built and
//     neutralises everything outside them: links and images ("[" and "]"
//     escaped), raw HTML ("<" as an entity), mentions, references and autolinks.
//   - Line is Text's neutralising for plain-text fields that no host renders as
//     Markdown (a check run title, a commit status description).
//
// It imports nothing of driftpreview's, so every layer (diffing's messages, the
// report, the host adapters, the CLI) can use it.
package mdtext
