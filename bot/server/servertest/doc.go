// Package servertest runs a bot/server.Server for tests: on a real loopback port,
// with its queue workers started, stopped and checked for a clean exit when the
// test ends. The server's own tests and the end-to-end tests (bot/server/e2e) use
// it; it sits outside the pipeline and is never imported by production code.
package servertest
