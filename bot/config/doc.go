// Package config reads the repo config, .driftpreview.yaml, strictly (unknown keys,
// a missing ignore reason or a bad date are errors naming the line), and discovers
// targets when there is no config file. The bot reads it from the BASE commit so a
// pull request cannot change its own policy.
package config
