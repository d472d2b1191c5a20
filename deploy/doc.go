// Package deploy holds how the bot itself is installed, outside the preview
// pipeline: the Helm chart (chart/driftpreview) with its least-privilege RBAC, the
// GitHub App manifest (github-app/) and the GitLab setup guide (gitlab.md). The Go
// code here is only the test that renders the chart with driftpreview's own render
// package and checks its security properties.
package deploy
