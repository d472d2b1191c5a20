package config

import _ "embed"

// Schema is the JSON Schema (draft 2020-12) of .driftpreview.yaml. Editors that run
// yaml-language-server use it for completion and checks; the bot serves it and its
// tests keep it in step with Parse. Parse stays the authority: a few checks, such as
// duplicate target names, are beyond what the schema can say.
//
//go:embed schema.json
var Schema []byte
