// Package gitsrc fetches the remote kustomize bases and components a
// kustomization names (`https://host/org/repo//path?ref=v1`,
// `git::https://…`, `github.com/owner/repo/path?ref=…`) with the git binary,
// into a directory the render then mounts read-only.
//
// ParseKustomize reads a reference the way kustomize's own RepoSpec parser
// (sigs.k8s.io/kustomize/api/internal/git/repospec.go) does: an optional
// "git::" prefix, "//", ".git" or "_git/" marking where the repository ends,
// else the first two path segments (org/repo), and ?ref= (or ?version=).
// Only https:// (and http:// when the policy names the host) are fetched: ssh,
// scp-like git@host:… and file:// references are refused with a reason, as
// the bot holds no keys for them and the PR must not read local files.
//
// git runs with a clean environment and no user or system config, with
// protocol.allow limited to http(s), no redirects, no submodules and no
// hooks, in its own process group killed at the timeout. Its only way out is
// an in-process HTTP proxy that accepts connections to the one host the
// reference names, dials through the caller's dialer (which refuses private
// addresses the policy does not name) and stops the transfer at the byte
// cap. The fetched tree is sized from git's listing before it is written
// (file count and bytes), like the bot's own checkouts.
package gitsrc
