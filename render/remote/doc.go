// Package remote is driftpreview's one fetcher for remote sources (Helm HTTP
// repositories, OCI registries, remote kustomize bases over git): a Policy that
// says what may be fetched, an HTTP client that enforces it, a content-addressed
// on-disk cache, and safe archive unpacking. It imports nothing else of
// driftpreview; render and bot use it.
//
// # API
//
//   - Policy / Prefix: the Mode (public: any http(s) or oci URL whose host
//     resolves to public addresses, without credentials; allowlist: only
//     allowed prefixes; off: nothing; DefaultMode, public, is what the
//     server config and the CLI use when they name none, while "" in a Go
//     value is allowlist), allowed URL prefixes (scheme, host and port, path
//     at a segment boundary), credentials per prefix read from files (basic
//     auth or bearer token), the timeout per download, byte caps (index,
//     archive, unpacked total, per file, file count), the cache directory and
//     its size bound. The zero Policy allows nothing. Policy.Validate checks
//     it. Fetcher.PublicLoopbackForTests (test binaries only) counts loopback
//     addresses as public, so tests' servers stand in for public ones.
//   - NewFetcher(Policy) (*Fetcher, error) reads the credential files and opens
//     the cache. Fetcher.Allowed(url) says whether a URL may be fetched.
//   - Fetcher.HelmIndex(ctx, repoURL) loads a repository's index.yaml with Helm's
//     repo package; ResolveVersion(index, name, versionOrRange) picks a version as
//     Flux and Helm do (exact match, else the highest Masterminds-semver match);
//     Fetcher.HelmChart(ctx, repoURL, name, versionOrRange) downloads and unpacks
//     the chart: Chart.Dir is the unpacked chart, Chart.Version the version the
//     range resolved to.
//   - Fetcher.HelmDependencies(ctx, chartYAML, chartLock, vendored) fetches the
//     dependencies of a chart as `helm dependency build` does (lock honoured).
//   - OCI registries (oci.go, over render/remote/oci, which speaks the
//     distribution protocol with oras-go): prefixes oci://host[/path] allow a
//     registry's repositories. HelmChart and HelmDependencies take oci://
//     repositories too (Helm OCI charts); OCIArtifact fetches a Flux
//     OCIRepository's layer (digest, semver with semverFilter, or tag;
//     layerSelector, operation extract or copy) and unpacks it; ArgoOCI
//     fetches an Argo CD OCI source (targetRevision a tag, digest or semver
//     constraint; one content layer; a chart's directory as root). Requests go to the registry's host only (a token realm or blob
//     redirect elsewhere needs a prefix of its own), dialled through the same
//     address checks.
//   - Fetcher.GitBase(ctx, spec) fetches a remote kustomize base with git
//     (render/remote/gitsrc) when an http(s) prefix allows its repository URL;
//     git's only way out is a proxy that dials through the same address checks.
//     Checkouts are cached by repository and commit.
//   - Cache.File(key, ttl, fill) and Cache.Tree(key, fill) are the cache
//     primitives other source kinds use (Key and DigestKey make keys); Unpack
//     extracts a .tgz with Limits; Fetcher.Download-style helpers stay internal.
//   - Every failure is an *Error with a Reason (Refused, Unreachable, NotFound,
//     Denied, TooBig, Timeout, Invalid, Unsupported); ReasonOf reads it. Callers
//     list the target as not rendered with the error's text, never as a failing
//     render: none of these is a problem of the pull request.
//
// # Safety
//
//   - Nothing is fetched unless a prefix allows it, or public mode does;
//     redirects are checked again (CheckRedirect), and credentials are
//     attached per request for the prefix the URL falls under (none for what
//     public mode alone allows), so a redirect never carries them elsewhere.
//   - The dialer resolves host names itself and connects only to the address it
//     checked: loopback, link-local, private, CGNAT, multicast, unspecified and
//     documentation ranges are refused unless the prefix names the address
//     (an IP literal, or localhost for loopback) or sets allowPrivate, and
//     always for what public mode alone allows. This holds for redirects and
//     DNS answers alike, on every connection (DNS rebinding). Resolving and
//     connecting take at most 10 s, and a host that failed is not asked again
//     in the run. No HTTP proxy is used.
//   - Every download has a timeout (whole request, body included) and a byte
//     cap, counted as it streams to a temporary file: an endless body stops at
//     the cap without being held in memory. Helm's getter is not used for the
//     transfer because it buffers a whole body in memory with no cap and has no
//     redirect hook; Helm's repo package parses the index, and its chart loader
//     (in render) loads the unpacked chart.
//   - Archives are unpacked with caps on file count, total and per-file size;
//     absolute paths, ".." elements, links and special files are refused.
//   - Errors show URLs without user info or query; credentials never appear in
//     errors or logs.
//
// # Cache
//
// Under Policy.CacheDir (the server's work dir, or a temporary directory for the
// CLI): objects/ (index files keyed by URL, archives keyed by sha256 digest, or by
// URL and version when the index gives none) and trees/ (unpacked archives).
// Entries are filled under a per-key flock and published by atomic rename, so two
// processes share the directory safely and download an entry once. Index files
// are reused for Policy.IndexTTL (5 minutes), and a process keeps each index it
// loaded for that long, so base and head of one preview see the same index. The
// total size is bounded: least recently used entries (by modification time,
// refreshed on use) are removed after each fill, except those used in the last
// ten minutes. OpenCache sweeps tmp/ of what crashed processes left: temporary
// files and directories over an hour old whose entry's lock is free.
//
// The render child process (render/child.go) never fetches: the parent fetches
// into the cache before it starts the child, and the child reads local files.
package remote
