// Package gitlabtest is an in-memory fake of the slice of the GitLab REST API (v4)
// that bot/gitlab uses, served by httptest. It asserts method, path, the
// PRIVATE-TOKEN header and the JSON body shape of every request (a violation fails
// the test and answers 400), records every call, keeps state (notes, commit
// statuses) so tests can assert outcomes such as "exactly one sticky note", and can
// inject failures. The adapter's tests and the server's end-to-end tests use it.
package gitlabtest
