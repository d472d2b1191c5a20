// Package hostfake is the plumbing the fake code hosts bot/github/githubtest and
// bot/gitlab/gitlabtest share, so the adapters' tests and the server's end-to-end
// tests run against realistic HTTP without GitHub or GitLab: it records every call,
// injects the failures a test asks for (FailNext), answers JSON, asserts the JSON
// body shape of a request and fails the test on a request the real API would
// reject, refuse or not know. Each fake keeps its own routes and state; this
// package only holds what both do the same way. It also records the waits the
// adapters' retry transport (bot/internal/hostretry) asks for, so those tests never
// sleep.
package hostfake
