// Command driftpreview previews what a pull request does to Kubernetes: it renders
// the manifests at base and head, diffs them with each other and the live cluster,
// and reports the risks. See README.md.
package main
