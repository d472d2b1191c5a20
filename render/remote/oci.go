package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/driftpreview/driftpreview/render/remote/oci"
)

// OCI registries are allowed by prefixes of the form oci://host[:port]/path
// (say oci://ghcr.io/my-org/): the registry's host, and the repositories
// under the path. Every request of the distribution protocol for such a
// repository (https://host/v2/…) goes to that host and is dialled through the
// same address checks as HTTP downloads; a token realm or a redirect to
// another host (a CDN for blobs) must be allowed by a prefix of its own.
// Registries on a loopback address are spoken to over plain HTTP, as Docker
// treats 127.0.0.0/8 as an insecure registry by default; others over HTTPS
// unless the source says insecure (Flux spec.insecure).

// ociURL normalises an oci:// URL as every fetched URL is (normalize.go) and
// returns it with the prefix allowing it, or a Refused *Error. The registry
// client is given the normalised URL, so the repository it asks the registry
// for is the one the prefix was matched against.
func (f *Fetcher) ociURL(raw string) (string, *prefix, error) {
	n, pr, err := f.allowed(raw)
	if err != nil {
		return "", nil, err
	}
	return n.String(), pr, nil
}

// ociStart begins a registry fetch of the normalised URL norm: a registry
// that failed to answer earlier in the run is not asked again, the fetch
// counts against the run's limits and waits for a download slot. done ends
// it, remembering a failure of the registry's host.
func (f *Fetcher) ociStart(ctx context.Context, norm string) (done func(error), err error) {
	if err := f.hostDown(norm); err != nil {
		return nil, err
	}
	if err := f.count(norm); err != nil {
		return nil, err
	}
	release, err := f.shared.acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func(err error) {
		release()
		f.noteHost(norm, err)
	}, nil
}

// ociClient is the registry client for the repository at raw (oci://…, as
// ociURL normalised it).
func (f *Fetcher) ociClient(raw string, insecure bool) (*oci.Client, error) {
	raw, pr, err := f.ociURL(raw)
	if err != nil {
		return nil, err
	}
	host, _, err := oci.ParseURL(raw)
	if err != nil {
		return nil, &Error{Reason: Invalid, URL: Redact(raw), Err: err}
	}
	plain := insecure
	if ip, err := netip.ParseAddr(strings.Trim(hostOnly(host), "[]")); err == nil && ip.IsLoopback() || hostOnly(host) == "localhost" {
		plain = true
	}
	base := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           f.dial,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: f.policy.Timeout,
	}
	rt := &ociTransport{f: f, registry: strings.ToLower(host), pr: pr, base: base}
	c := &oci.Client{
		HTTP: &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return errorf(Refused, req.URL.String(), "more than %d redirects", maxRedirects)
			}
			if _, err := rt.allowed(req.URL); err != nil {
				return err
			}
			return nil
		}},
		PlainHTTP:        func(string) bool { return plain },
		MaxManifestBytes: 4 << 20,
		MaxBlobBytes:     f.policy.MaxArchiveBytes,
	}
	if user, pass, ok := credentials(pr.auth); ok {
		c.Credential = func(string) (string, string, bool) { return user, pass, true }
	}
	return c, nil
}

func hostOnly(hostport string) string {
	if i := strings.LastIndex(hostport, ":"); i >= 0 && !strings.HasSuffix(hostport, "]") {
		return hostport[:i]
	}
	return hostport
}

// credentials turns a prefix's Authorization value back into what a registry
// client sends: username and password, or a token (empty username).
func credentials(auth string) (string, string, bool) {
	switch {
	case strings.HasPrefix(auth, "Basic "):
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(auth, "Basic "))
		if err != nil {
			return "", "", false
		}
		u, p, ok := strings.Cut(string(b), ":")
		return u, p, ok
	case strings.HasPrefix(auth, "Bearer "):
		return "", strings.TrimPrefix(auth, "Bearer "), true
	}
	return "", "", false
}

// ociTransport lets a registry client reach its registry's host (any path:
// the distribution API lives under /v2/) and, beyond it, only URLs an http(s)
// prefix allows; it puts the allowing prefix in the context for dial.
type ociTransport struct {
	f        *Fetcher
	registry string // host[:port] as in the oci:// URL, lower-case
	pr       *prefix
	base     http.RoundTripper
}

func (t *ociTransport) allowed(u *url.URL) (*prefix, error) {
	if strings.EqualFold(u.Host, t.registry) && u.User == nil {
		return t.pr, nil
	}
	if pr := t.f.match(u); pr != nil {
		return pr, nil
	}
	return nil, errorf(Refused, u.String(), "the registry %s sent the client to %s, which %s", t.registry, Redact(u.String()), t.f.uncovered())
}

func (t *ociTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, err := t.allowed(req.URL)
	if err != nil {
		return nil, err
	}
	r := req.Clone(context.WithValue(req.Context(), ctxKey{}, pr))
	if pr != t.pr {
		// Elsewhere (a token realm on another allowed prefix) only that
		// prefix's own credentials go.
		r.Header.Del("Authorization")
		if pr.auth != "" {
			r.Header.Set("Authorization", pr.auth)
		}
	}
	return t.base.RoundTrip(r)
}

// ociError turns an oci.Error into an *Error with its reason.
func ociError(raw string, err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	var oe *oci.Error
	if !errors.As(err, &oe) {
		return classify(raw, err)
	}
	if e, ok := errors.AsType[*Error](oe.Err); ok {
		return e // the policy refused a request (a redirect, a realm)
	}
	r := Unreachable
	switch oe.Kind {
	case oci.KindInvalid:
		r = Invalid
	case oci.KindNotFound:
		r = NotFound
	case oci.KindTooBig:
		r = TooBig
	case oci.KindDenied:
		r = Denied
	case oci.KindUnreachable:
		if oe.Err != nil {
			if c := classify(raw, oe.Err); c.Reason == Timeout {
				return c
			}
			var rerr *Error
			if errors.As(oe.Err, &rerr) {
				return rerr
			}
		}
	}
	return &Error{Reason: r, URL: Redact(raw), Err: errors.New(strings.TrimPrefix(oe.Msg, raw+": "))}
}

// ociChart fetches a Helm chart stored in an OCI registry (repoURL oci://…):
// Flux HelmRepository type oci, Argo CD OCI repoURLs, oci:// dependencies.
func (f *Fetcher) ociChart(ctx context.Context, repoURL, name, version string) (_ *Chart, err error) {
	norm, _, err := f.ociURL(repoURL)
	if err != nil {
		return nil, err
	}
	done, err := f.ociStart(ctx, norm)
	if err != nil {
		return nil, err
	}
	defer func() { done(err) }()
	full := strings.TrimSuffix(norm, "/") + "/" + name
	c, err := f.ociClient(full, false)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.policy.Timeout)
	defer cancel()
	art, err := c.Chart(ctx, strings.TrimSuffix(norm, "/"), name, version)
	if err != nil {
		return nil, ociError(full, err)
	}
	ch := &Chart{RepoURL: repoURL, Name: name, Requested: version, Version: art.Tag, URL: Redact(full) + ":" + art.Tag,
		Digest: strings.TrimPrefix(art.LayerDigest, "sha256:")}
	if err := f.ociUnpack(ch, art); err != nil {
		return nil, err
	}
	root, err := chartRoot(ch.Dir, name)
	if err != nil {
		return nil, &Error{Reason: Invalid, URL: Redact(full), Err: err}
	}
	ch.Dir = root
	return ch, nil
}

// ociUnpack stores an artifact's layer in the cache by digest and unpacks it
// (Unpack's checks), filling Archive and Dir.
func (f *Fetcher) ociUnpack(ch *Chart, art oci.Artifact) error {
	key, ok := DigestKey(art.LayerDigest)
	if !ok {
		return errorf(Invalid, ch.URL, "the layer has no sha256 digest")
	}
	p, err := f.cache.File(key, 0, func(w io.Writer) error {
		_, err := w.Write(art.Data)
		return err
	})
	if err != nil {
		return err
	}
	ch.Archive = p
	dir, err := f.cache.Tree("tree-"+key, func(dir string) error {
		return Unpack(bytes.NewReader(art.Data), dir, ch.URL, f.limits())
	})
	if err != nil {
		return err
	}
	ch.Dir = dir
	return nil
}

// Artifact is a Flux OCIRepository's artifact, fetched and unpacked.
type Artifact struct {
	URL string // the repository, redacted
	// Requested is the tag, semver range or digest asked for; Revision is
	// what it resolved to, tag@digest as Flux writes it.
	Requested string
	Revision  string
	// Dir is the unpacked layer in the cache; Archive the layer blob itself
	// (in the cache too) and MediaType its media type.
	Dir       string
	Archive   string
	MediaType string
}

// OCIArtifact fetches what a Flux OCIRepository names: ref resolved as
// source-controller does (digest, else semver with semverFilter, else tag,
// else latest), the layer of mediaType (else the first), and unpacks it.
//
// Both layer operations end in the same tree: with extract (Flux's default)
// source-controller untars the layer and archives the files as the artifact;
// with copy it stores the layer blob itself as the artifact
// (OCIRepositoryReconciler.reconcileSource, OCILayerCopy), and its consumers
// untar that: kustomize-controller's artifact fetcher, or helm-controller
// loading it as a chart archive. Either way the layer must be a gzipped tar,
// unpacked here with Unpack's checks. Artifact.Archive is the layer as stored
// (what copy hands on).
func (f *Fetcher) OCIArtifact(ctx context.Context, ref oci.Ref, mediaType, operation string, insecure bool) (_ *Artifact, err error) {
	if operation != "" && operation != "extract" && operation != "copy" {
		// The OCIRepository CRD allows only these two (an enum).
		return nil, &Error{Reason: Invalid, URL: Redact(ref.URL), Err: fmt.Errorf("layerSelector.operation %q: Flux knows only extract and copy", operation)}
	}
	norm, _, err := f.ociURL(ref.URL)
	if err != nil {
		return nil, err
	}
	ref.URL = norm
	done, err := f.ociStart(ctx, norm)
	if err != nil {
		return nil, err
	}
	defer func() { done(err) }()
	c, err := f.ociClient(ref.URL, insecure)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.policy.Timeout)
	defer cancel()
	art, err := c.Layer(ctx, ref, mediaType)
	if err != nil {
		return nil, ociError(ref.URL, err)
	}
	requested := ref.Digest
	switch {
	case requested != "":
	case ref.SemVer != "" && ref.SemverFilter != "":
		requested = ref.SemVer + " (tags matching " + ref.SemverFilter + ")"
	case ref.SemVer != "":
		requested = ref.SemVer
	case ref.Tag != "":
		requested = ref.Tag
	default:
		requested = "latest"
	}
	ch := &Chart{URL: Redact(ref.URL)}
	if err := f.ociUnpack(ch, art); err != nil {
		return nil, err
	}
	return &Artifact{URL: Redact(ref.URL), Requested: requested, Revision: art.Revision(), Dir: ch.Dir, Archive: ch.Archive, MediaType: art.MediaType}, nil
}

// ArgoOCI fetches an Argo CD OCI source (repoURL oci://…, targetRevision a tag,
// digest or semver constraint; oci.Client.ArgoSource says how, after Argo CD's
// repo server) and unpacks its content layer. A Helm chart's directory becomes
// the root, as the repo server moves the chart's one directory to the root of
// what it extracts, so `path: .` is the chart.
func (f *Fetcher) ArgoOCI(ctx context.Context, repoURL, revision string) (_ *Artifact, err error) {
	norm, _, err := f.ociURL(repoURL)
	if err != nil {
		return nil, err
	}
	repoURL = norm
	done, err := f.ociStart(ctx, norm)
	if err != nil {
		return nil, err
	}
	defer func() { done(err) }()
	c, err := f.ociClient(repoURL, false)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.policy.Timeout)
	defer cancel()
	art, err := c.ArgoSource(ctx, repoURL, revision)
	if err != nil {
		return nil, ociError(repoURL, err)
	}
	ch := &Chart{URL: Redact(repoURL)}
	if err := f.ociUnpack(ch, art); err != nil {
		return nil, err
	}
	dir := ch.Dir
	if art.HelmChart {
		if dir, err = chartRoot(ch.Dir, ""); err != nil {
			return nil, &Error{Reason: Invalid, URL: Redact(repoURL), Err: err}
		}
	}
	return &Artifact{URL: Redact(repoURL), Requested: revision, Revision: art.Revision(), Dir: dir, Archive: ch.Archive, MediaType: art.MediaType}, nil
}
