// Package e2e holds only the bot's end-to-end tests (e2e_test.go): signed webhooks
// into the real HTTP handler, the SQLite queue, the worker fetching over git's smart
// HTTP into a bare mirror, preview.Run against a real kube-apiserver, and the real
// GitHub and GitLab adapters talking to their httptest fakes. It has no code of its
// own and nothing imports it.
package e2e
