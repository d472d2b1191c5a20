// Package config decides WHAT the bot previews and HOW it judges it. It sits at the
// start of the pipeline, after checkout and before render: the bot reads the repo
// config, .driftpreview.yaml, from the BASE commit (Load, Parse) so a pull request
// cannot change its own policy, and turns it into Targets (each with render.Options)
// and, per target, diffing.Options (DiffOptions).
//
// Parsing is strict. Unknown keys at any level, wrong types, unknown rule IDs or
// severities, an ignore rule without a reason, a bad expiry date, a target path that
// leaves the repository and duplicate target names are all errors; every problem is
// returned, each as an *Error naming the file, line and field, which the bot shows as
// a config-error finding. The file is decoded by render.DecodeYAML first, so what it
// refuses (a syntax error, a duplicate key, an alias bomb, nesting too deep) is the
// one error. Schema is the same contract as a JSON Schema for editors.
//
// With no config file (or one without targets) the bot discovers targets instead
// (package bot/discover).
package config
