// Package render is the first stage of the driftpreview pipeline: it turns one
// target's directory inside a checkout (plain YAML, a kustomization or a Helm chart)
// into an ObjectSet, sorted by key, each object carrying the file that produced it.
//
// Render is the entry point; Parse, DecodeYAML and UnmarshalYAML read manifests and
// other YAML with the same limits and line-aware errors for the packages that need
// them (discovery and the repo config read every YAML of a PR through them);
// WriteYAML prints objects with Secret values hidden; ClusterScoped tells where a
// default namespace applies.
//
// A pull request is untrusted input, so rendering is sandboxed:
//
//   - Every file is read through an os.Root at the checkout, so neither ".." nor a
//     symlink can reach outside it; plain, kustomize and helm all read this way.
//     A render process keeps what it read of a named checkout (Options.Checkout,
//     treecache.go) for later renders, every check running again on each read.
//   - Kustomize runs krusty (load restrictor RootOnly, builtin plugins only) over a
//     read-only filesystem that mounts the checkout and a generated wrapper
//     kustomization (for overrides and origin annotations). Every kustomization is
//     screened before kustomize sees it: KRM/exec functions, external
//     plugins, remote files and paths leaving the checkout are *Error at the
//     offending line. Builds are serialised, as krusty keeps global state.
//   - kustomize's helmCharts are inflated in the render process with Helm's
//     engine (helmcharts.go), never by a helm binary: the chart from the chart
//     home, or one the caller fetched (KustomizeHelm.Charts; a render that
//     needs one stops with an *Unavailable naming it, ChartNeeded), rendered
//     with kustomize's values, namespace and release semantics and added to
//     the build as a virtual component. KustomizeHelm.RefusedBy refuses them
//     as a controller that builds without --enable-helm does.
//   - Remote bases and components (git URLs in resources/components) are never
//     fetched here: a render that meets one stops with an *Unavailable naming it
//     (RemoteNeeded), and the caller, which holds the remote policy, may fetch it
//     and render again with KustomizeOptions.RemoteBases. Each fetched
//     repository is mounted read-only as a root of its own (os.Root, the same
//     screening and byte limits), and the entry is rewritten to point at it, so
//     kustomize builds it as a local base and never runs git.
//   - Helm renders with helm's engine from files read through the sandbox:
//     dependencies only from the vendored charts/ folder, lookup returns nothing,
//     getHostByName fails, values.schema.json is not checked (it may $ref URLs).
//     Hook objects (helm.sh/hook) are left out, as they are not in the release;
//     an unvendored dependency is *Unavailable, not a broken chart.
//   - Remote sources (a chart from a Helm repository, Options.Helm.Chart, and
//     chart dependencies not in charts/) are fetched by Options.Remote (package
//     render/remote: allowed prefixes, address checks, caps, cache) in the
//     calling process before the render process starts (remotechart.go); the
//     render process reads the unpacked chart and the dependency archives from the
//     cache as local files and never touches the network. A fetch that fails or
//     is refused is *Unavailable with the fetcher's reason.
//   - Jsonnet (an Argo CD directory application, PlainOptions.Jsonnet) is evaluated
//     with github.com/google/go-jsonnet; every import is read through the sandbox
//     (no absolute paths, nothing outside the checkout), call depth is capped and
//     the output counts against MaxTotalBytes.
//   - YAML is parsed with go.yaml.in/yaml/v3 into nodes first; alias bombs, nesting
//     deeper than MaxDepth and duplicate keys are errors before anything expands.
//   - YAML depth is counted through aliases, so anchored pieces cannot add up to
//     an object deeper than MaxDepth.
//   - Files over Options.MaxFileBytes, targets reading or rendering more than
//     Options.MaxTotalBytes or rendering more than Options.MaxOutputBytes of
//     manifests (counted before parsing), and renders longer than Options.Timeout
//     are errors; a panic in a library becomes an error.
//   - Errors are scrubbed of values that may be secret (scrub.go) before they
//     leave the render.
//   - Every render runs in a child process (child.go): this binary started again
//     in its render mode, with no environment, in its own process group, and with
//     kernel limits set by the parent before any work: memory (RLIMIT_DATA,
//     Options.MaxMemoryBytes), CPU time (RLIMIT_CPU, Options.MaxCPUTime), no
//     core dumps, no files. The group is killed at Options.Timeout. A render that
//     hits a limit is an *Error naming the limit; the caller's process never runs
//     a template, so an out-of-memory or an endless loop cannot take it down.
//
// Problems the PR author must fix come back as *Error naming file and line, short
// enough for a PR comment. Kustomize's deprecation warnings go to the render
// process's stderr, which is dropped; they are in ObjectSet.Notes.
//
// render imports nothing else of driftpreview but its own render/remote; diffing
// and bot build on it.
package render
