// Package githubtest is an in-memory fake of the slice of the GitHub REST API that
// bot/github uses, served by httptest. It asserts method, path, auth header and JSON
// body shape of every request (a violation fails the test and answers 422), records
// every call, keeps state (comments, check runs) so tests can assert outcomes such as
// "exactly one sticky comment", and can inject failures. It lets the adapter's own
// tests and the server's end-to-end tests run against realistic HTTP without GitHub.
package githubtest
