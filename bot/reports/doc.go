// Package reports keeps the bot's full report pages (report.HTML) and serves them
// at unguessable, expiring URLs, so the sticky comment can link every target,
// finding and diff that it has no room for. It sits beside the job worker: the
// worker publishes a preview's page before it posts the comment (jobs.Options.
// Reports), and the server's handler serves GET /reports/{id}.
//
// One page is kept per pull request (each preview replaces the last), under the
// work dir, at most MaxBytes each and for Retention. A URL is
// /reports/<id>?exp=<unix seconds>&sig=<HMAC-SHA256 of id and exp>: the id is
// itself an HMAC of the pull request's key, so neither names the repository, and
// without the server's key no URL can be made or altered.
package reports
