// Package serverconfig reads server.yaml, the configuration of `driftpreview serve`:
// which hosts to serve, where their secrets live, which clusters jobs may read, the
// durable queue and the repository allowlist. It sits at the very start of the bot:
// cmd/driftpreview parses it once, and bot/server wires everything from it.
//
// Parsing is strict (an unknown key is an error naming its line). Every setting can be
// overridden from the environment as DRIFTPREVIEW_<PATH> (DRIFTPREVIEW_GITHUB_APPID,
// DRIFTPREVIEW_QUEUE_DSN, DRIFTPREVIEW_CLUSTERS_PROD_CONTEXT), and every secret is read
// from a file, so nothing secret has to be written into server.yaml. Secret values are
// held in the Secret type, which never prints itself.
//
// Two steps, as Atlantis's core/config/raw and core/config/valid: ParseRaw gives the
// Raw document as written (raw.go: strict YAML, environment overrides, line
// positions), and Raw.ToValid gives the typed Config (valid.go): every default set in
// one place (withDefaults, from the Default constants, which name the values the
// queue, the webhook handler and the GitHub client also fall back to), secret files
// read, every value checked with its file and line. Load is both.
package serverconfig
