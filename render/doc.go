// Package render is the first stage of the driftpreview pipeline: it turns one
// target's directory inside a checkout (plain YAML, a kustomization or a Helm chart)
// into an ObjectSet, sorted by key, each object carrying the file that produced it.
//
// A pull request is untrusted input, so rendering is sandboxed: the filesystem is
// rooted at the checkout, symlinks cannot escape it, there are no remote bases, exec
// or KRM plugins, Helm lookups or DNS functions, and every render has size and time
// limits. Problems the PR author must fix come back as *Error naming file and line.
//
// render imports nothing else of driftpreview; diffing and bot build on it.
package render
