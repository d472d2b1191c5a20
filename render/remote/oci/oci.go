package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Media types this package knows by name.
const (
	// FluxContentMediaType is the layer `flux push artifact` writes: a gzipped
	// tar of the pushed directory.
	FluxContentMediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// HelmChartMediaType is the chart archive layer of a Helm OCI chart.
	HelmChartMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// HelmConfigMediaType is the config of a Helm OCI chart's manifest.
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	// ImageLayerMediaType is the layer `oras push <dir>` writes.
	ImageLayerMediaType = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Client fetches from OCI registries through HTTP. The zero value of each limit
// takes its default.
type Client struct {
	// HTTP sends every request, including token requests to the realm a
	// registry names; the caller's remote policy lives in it. Nil is refused.
	HTTP *http.Client
	// PlainHTTP reports whether a registry host (host[:port]) is spoken to over
	// plain HTTP rather than HTTPS (a policy prefix that names http://host).
	PlainHTTP func(host string) bool
	// Credential returns the username and password (or an empty username and
	// a token as password) for a registry host, if any.
	Credential func(host string) (username, password string, ok bool)
	// MaxManifestBytes caps a manifest (default 4 MiB); MaxBlobBytes caps the
	// layer fetched (default 64 MiB); MaxTags caps the tags listed for a
	// semver range (default 10,000).
	MaxManifestBytes int64
	MaxBlobBytes     int64
	MaxTags          int
}

// Ref says which artifact of a repository to fetch, as a Flux OCIRepository's
// spec.url and spec.ref do. Digest wins over SemVer, SemVer over Tag, and none
// means the tag "latest" (source-controller, OCIRepositoryReconciler.getArtifactRef).
type Ref struct {
	URL    string // oci://host[:port]/repository, no tag
	Tag    string
	SemVer string
	// SemverFilter is spec.ref.semverFilter: a Go regular expression the tags
	// must match before the SemVer range is applied (source-controller's
	// filterTags); it has no effect without SemVer.
	SemverFilter string
	Digest       string
}

// Resolved is the artifact a Ref resolved to.
type Resolved struct {
	// Repository is host[:port]/repository.
	Repository string
	// Tag is the tag resolved to ("" for a digest reference).
	Tag string
	// Digest is the manifest's digest.
	Digest string
}

// Revision is the artifact revision as Flux writes it: tag@digest, or the
// digest alone.
func (r Resolved) Revision() string {
	if r.Tag == "" {
		return r.Digest
	}
	return r.Tag + "@" + r.Digest
}

// Artifact is one fetched layer.
type Artifact struct {
	Resolved
	// MediaType is the layer's media type; LayerDigest its digest (the cache
	// key of its content).
	MediaType   string
	LayerDigest string
	Data        []byte
	// HelmChart is true when the manifest's config is a Helm chart's.
	HelmChart bool
}

// Kind classifies a failure for the not-rendered reason.
type Kind int

// The failure kinds.
const (
	KindInvalid     Kind = iota // the reference cannot be used (bad URL, bad semver range)
	KindNotFound                // no such repository, tag, digest, matching version or layer
	KindTooBig                  // a manifest, layer or tag list over its limit
	KindUnreachable             // the registry could not be reached or failed (includes policy refusals of the client)
	KindDenied                  // the registry refused our credentials
)

// Error is a failure with its kind; Err is the cause, Msg what to print.
type Error struct {
	Kind Kind
	Msg  string
	Err  error
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

func errorf(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...), Err: cause}
}

func (c *Client) limits() (manifest, blob int64, tags int) {
	manifest, blob, tags = c.MaxManifestBytes, c.MaxBlobBytes, c.MaxTags
	if manifest <= 0 {
		manifest = 4 << 20
	}
	if blob <= 0 {
		blob = 64 << 20
	}
	if tags <= 0 {
		tags = 10_000
	}
	return manifest, blob, tags
}

// ParseURL splits oci://host[:port]/repository into host and repository. A tag
// or digest in the URL is refused, as source-controller refuses it.
func ParseURL(raw string) (host, repository string, err error) {
	rest, ok := strings.CutPrefix(raw, "oci://")
	if !ok {
		return "", "", errorf(KindInvalid, nil, "%q is not an OCI URL: want oci://<host>/<repository>", raw)
	}
	host, repository, _ = strings.Cut(rest, "/")
	repository = strings.TrimSuffix(repository, "/")
	if host == "" || repository == "" {
		return "", "", errorf(KindInvalid, nil, "%q is not an OCI URL: want oci://<host>/<repository>", raw)
	}
	if strings.Contains(repository, "@") || strings.Contains(repository, ":") {
		return "", "", errorf(KindInvalid, nil, "%q must not contain a tag or digest; put it in the reference instead", raw)
	}
	if _, err := url.Parse("https://" + host); err != nil {
		return "", "", errorf(KindInvalid, err, "%q: bad registry host", raw)
	}
	return host, repository, nil
}

func (c *Client) repository(raw string) (*remote.Repository, string, error) {
	if c.HTTP == nil {
		return nil, "", errorf(KindUnreachable, nil, "no HTTP client: remote fetching is not configured")
	}
	host, path, err := ParseURL(raw)
	if err != nil {
		return nil, "", err
	}
	repo, err := remote.NewRepository(host + "/" + path)
	if err != nil {
		return nil, "", errorf(KindInvalid, err, "%q: %v", raw, err)
	}
	repo.PlainHTTP = c.PlainHTTP != nil && c.PlainHTTP(host)
	client := &auth.Client{Client: c.HTTP, Cache: auth.NewCache()}
	if c.Credential != nil {
		if user, pass, ok := c.Credential(host); ok {
			cred := auth.Credential{Username: user, Password: pass}
			if user == "" {
				cred = auth.Credential{AccessToken: pass}
			}
			client.Credential = auth.StaticCredential(repo.Reference.Registry, cred)
		}
	}
	repo.Client = client
	manifest, _, _ := c.limits()
	repo.MaxMetadataBytes = manifest
	return repo, host + "/" + path, nil
}

// classify turns an oras error into an *Error.
func classify(what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var resp *errcode.ErrorResponse
	switch {
	case errors.Is(err, errdef.ErrNotFound):
		return errorf(KindNotFound, err, "%s: not found", what)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return errorf(KindDenied, err, "%s: the registry asks for credentials; give them for this registry in the remote config", what)
	case errors.Is(err, errdef.ErrSizeExceedsLimit):
		return errorf(KindTooBig, err, "%s: too big: %v", what, err)
	case errors.As(err, &resp):
		switch resp.StatusCode {
		case http.StatusNotFound:
			return errorf(KindNotFound, err, "%s: not found", what)
		case http.StatusUnauthorized, http.StatusForbidden:
			return errorf(KindDenied, err, "%s: access denied (status %d); give credentials for this registry in the remote config", what, resp.StatusCode)
		}
		return errorf(KindUnreachable, err, "%s: the registry answered %d", what, resp.StatusCode)
	}
	return errorf(KindUnreachable, err, "%s: %v", what, err)
}

// Resolve finds the manifest ref names, without fetching it.
func (c *Client) Resolve(ctx context.Context, ref Ref) (Resolved, error) {
	repo, name, err := c.repository(ref.URL)
	if err != nil {
		return Resolved{}, err
	}
	return c.resolve(ctx, repo, name, ref, "")
}

func (c *Client) resolve(ctx context.Context, repo *remote.Repository, name string, ref Ref, mediaType string) (Resolved, error) {
	res := Resolved{Repository: name}
	var reference string
	switch {
	case ref.Digest != "":
		d, err := digest.Parse(ref.Digest)
		if err != nil {
			return res, errorf(KindInvalid, err, "digest %q of %s is not a digest (want sha256:<hex>)", ref.Digest, ref.URL)
		}
		reference = d.String()
	case ref.SemVer != "":
		tag, err := c.tagBySemver(ctx, repo, ref.URL, ref.SemVer, ref.SemverFilter, mediaType == HelmChartMediaType, false)
		if err != nil {
			return res, err
		}
		res.Tag, reference = tag, tag
	case ref.Tag != "":
		res.Tag, reference = ref.Tag, ref.Tag
	default:
		res.Tag, reference = "latest", "latest"
	}
	desc, err := repo.Resolve(ctx, reference)
	if err != nil {
		return res, classify(fmt.Sprintf("%s:%s", ref.URL, reference), err)
	}
	res.Digest = desc.Digest.String()
	return res, nil
}

// tags lists the repository's tags, up to the limit.
func (c *Client) tags(ctx context.Context, repo *remote.Repository, url string) ([]string, error) {
	_, _, max := c.limits()
	var all []string
	err := repo.Tags(ctx, "", func(tags []string) error {
		all = append(all, tags...)
		if len(all) > max {
			return errorf(KindTooBig, nil, "%s has more than %d tags, the limit for resolving a semver range; pin a tag or digest", url, max)
		}
		return nil
	})
	if err != nil {
		return nil, classify(url+": listing tags", err)
	}
	return all, nil
}

// parseVersion is fluxcd/pkg/version.ParseVersion: exactly three dot-separated
// parts (so "1.0" or "latest" are not versions), then Masterminds' parser,
// which allows a leading "v".
func parseVersion(v string) (*semver.Version, error) {
	if len(strings.SplitN(v, ".", 3)) != 3 {
		return nil, semver.ErrInvalidSemVer
	}
	return semver.NewVersion(v)
}

// tagBySemver picks the highest tag matching the range, as source-controller's
// OCIRepositoryReconciler.getTagBySemver does: tags that parse as versions
// (parseVersion) and satisfy the Masterminds constraint, sorted descending, the
// first one's original text. A filter (spec.ref.semverFilter) keeps only the
// tags its regular expression matches, before the range (filterTags). For
// Helm charts (helm true: a chart repository, or an OCIRepository selecting
// the Helm chart layer), tags carry "_" where the chart version has "+" (OCI
// tags cannot hold "+"; convertOCIToSemVerTag), and for a chart repository
// (exactFirst) an exact tag match wins before the range is read, as source-controller's OCI
// chart repository (getLastMatchingVersionOrConstraint) does.
func (c *Client) tagBySemver(ctx context.Context, repo *remote.Repository, url, expr, filter string, helm, exactFirst bool) (string, error) {
	constraint, err := semver.NewConstraint(expr)
	if err != nil {
		return "", errorf(KindInvalid, err, "semver range %q of %s cannot be parsed: %v", expr, url, err)
	}
	var match *regexp.Regexp
	if filter != "" {
		if match, err = regexp.Compile(filter); err != nil {
			return "", errorf(KindInvalid, err, "semverFilter %q of %s is not a regular expression: %v", filter, url, err)
		}
	}
	tags, err := c.tags(ctx, repo, url)
	if err != nil {
		return "", err
	}
	if match != nil {
		tags = slices.DeleteFunc(tags, func(t string) bool { return !match.MatchString(t) })
	}
	if helm {
		for i, t := range tags {
			tags[i] = strings.ReplaceAll(t, "_", "+")
		}
		if exactFirst && slices.Contains(tags, expr) {
			return strings.ReplaceAll(expr, "+", "_"), nil
		}
	}
	var matching []*semver.Version
	for _, t := range tags {
		v, err := parseVersion(t)
		if err != nil || !constraint.Check(v) {
			continue
		}
		matching = append(matching, v)
	}
	if len(matching) == 0 {
		return "", errorf(KindNotFound, nil, "%s: no tag matches semver range %q", url, expr)
	}
	sort.Sort(sort.Reverse(semver.Collection(matching)))
	tag := matching[0].Original()
	if helm {
		tag = strings.ReplaceAll(tag, "+", "_")
	}
	return tag, nil
}

// Layer fetches the layer of the artifact ref names whose media type is
// mediaType, or the first layer when mediaType is empty, as source-controller's
// OCIRepositoryReconciler.selectLayer does. The layer's size is checked
// against MaxBlobBytes from the manifest before it is fetched.
func (c *Client) Layer(ctx context.Context, ref Ref, mediaType string) (Artifact, error) {
	repo, name, err := c.repository(ref.URL)
	if err != nil {
		return Artifact{}, err
	}
	res, err := c.resolve(ctx, repo, name, ref, mediaType)
	if err != nil {
		return Artifact{}, err
	}
	return c.layer(ctx, repo, res, ref.URL, mediaType)
}

func (c *Client) layer(ctx context.Context, repo *remote.Repository, res Resolved, url, mediaType string) (Artifact, error) {
	return c.layerBy(ctx, repo, res, url, func(m ocispec.Manifest, what string) (ocispec.Descriptor, error) {
		layer := m.Layers[0]
		if mediaType != "" {
			i := slices.IndexFunc(m.Layers, func(l ocispec.Descriptor) bool { return l.MediaType == mediaType })
			if i < 0 {
				return layer, errorf(KindNotFound, nil, "%s: no layer with media type %q in the artifact", what, mediaType)
			}
			layer = m.Layers[i]
		}
		return layer, nil
	})
}

// layerBy fetches the layer pick chooses from the manifest res names.
func (c *Client) layerBy(ctx context.Context, repo *remote.Repository, res Resolved, url string, pick func(m ocispec.Manifest, what string) (ocispec.Descriptor, error)) (Artifact, error) {
	maxManifest, maxBlob, _ := c.limits()
	what := url + "@" + res.Digest
	if res.Tag != "" {
		what = url + ":" + res.Tag
	}
	mdesc, data, err := fetchManifest(ctx, repo, res.Digest, maxManifest)
	if err != nil {
		return Artifact{}, classify(what, err)
	}
	if mdesc.MediaType == ocispec.MediaTypeImageIndex || mdesc.MediaType == "application/vnd.docker.distribution.manifest.list.v2+json" {
		return Artifact{}, errorf(KindInvalid, nil, "%s is an image index, not an artifact: point the source at one manifest", what)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Artifact{}, errorf(KindInvalid, err, "%s: the manifest cannot be read: %v", what, err)
	}
	if len(m.Layers) == 0 {
		return Artifact{}, errorf(KindNotFound, nil, "%s: no layers found in the artifact", what)
	}
	layer, err := pick(m, what)
	if err != nil {
		return Artifact{}, err
	}
	if layer.Size > maxBlob || layer.Size < 0 {
		return Artifact{}, errorf(KindTooBig, nil, "%s: the layer is %d bytes, over the %d-byte limit", what, layer.Size, maxBlob)
	}
	rc, err := repo.Blobs().Fetch(ctx, layer)
	if err != nil {
		return Artifact{}, classify(what+": fetching the layer", err)
	}
	defer rc.Close()
	// ReadAll reads exactly layer.Size bytes and verifies the digest.
	blob, err := content.ReadAll(rc, layer)
	if err != nil {
		return Artifact{}, classify(what+": reading the layer", err)
	}
	return Artifact{Resolved: res, MediaType: layer.MediaType, LayerDigest: layer.Digest.String(), Data: blob, HelmChart: m.Config.MediaType == HelmConfigMediaType}, nil
}

// fetchManifest fetches the manifest with digest d, refusing one over max.
func fetchManifest(ctx context.Context, repo *remote.Repository, d string, max int64) (ocispec.Descriptor, []byte, error) {
	desc, rc, err := repo.Manifests().FetchReference(ctx, d)
	if err != nil {
		return desc, nil, err
	}
	defer rc.Close()
	if desc.Size > max || desc.Size < 0 {
		return desc, nil, errorf(KindTooBig, nil, "the manifest is %d bytes, over the %d-byte limit", desc.Size, max)
	}
	data, err := content.ReadAll(rc, desc)
	return desc, data, err
}

// Chart fetches a Helm chart stored in an OCI registry: repoURL is the
// oci://host/path the chart lives under (a Flux HelmRepository's url, an Argo
// CD repoURL, a Chart.yaml dependency's repository), chart its name and
// version an exact version or a semver range ("" means any stable version,
// Flux HelmChart's default "*"). The chart archive is the layer of media type
// HelmChartMediaType; the artifact's Tag is the chart version resolved.
func (c *Client) Chart(ctx context.Context, repoURL, chart, version string) (Artifact, error) {
	url := strings.TrimSuffix(repoURL, "/") + "/" + chart
	repo, name, err := c.repository(url)
	if err != nil {
		return Artifact{}, err
	}
	if version == "" {
		version = "*"
	}
	tag := strings.ReplaceAll(version, "+", "_")
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(version, "v")); err != nil {
		// Not an exact version: a range, resolved against the tags.
		if tag, err = c.tagBySemver(ctx, repo, url, version, "", true, true); err != nil {
			return Artifact{}, err
		}
	}
	desc, err := repo.Resolve(ctx, tag)
	if err != nil {
		return Artifact{}, classify(fmt.Sprintf("chart %s version %s", url, version), err)
	}
	res := Resolved{Repository: name, Tag: strings.ReplaceAll(tag, "_", "+"), Digest: desc.Digest.String()}
	art, err := c.layer(ctx, repo, res, url, HelmChartMediaType)
	if err != nil {
		return Artifact{}, err
	}
	return art, nil
}

// ArgoSource fetches an Argo CD OCI source (repoURL oci://…, Argo CD 3.1+) the
// way Argo CD's repo server does (util/oci/client.go): targetRevision is first
// resolved as a tag or digest; if the registry has no such reference and it is
// a semver constraint (not a plain version), the highest tag satisfying it
// (tags read with "_" as "+", Masterminds' loose versions; util/versions
// MaxVersion) is used. The manifest must hold exactly one content layer: for a
// Helm chart (config media type HelmConfigMediaType) the chart layer, else a
// compressed tar layer; of the media types Argo CD accepts by default
// (ImageLayerMediaType, HelmChartMediaType; ARGOCD_REPO_SERVER_OCI_LAYER_MEDIA_TYPES
// is the repo server's to change) and at most 10 layers.
func (c *Client) ArgoSource(ctx context.Context, url, revision string) (Artifact, error) {
	repo, name, err := c.repository(url)
	if err != nil {
		return Artifact{}, err
	}
	if revision == "" {
		return Artifact{}, errorf(KindInvalid, nil, "%s: targetRevision is empty; Argo CD needs a tag, digest or semver constraint for an OCI source", url)
	}
	res := Resolved{Repository: name}
	ref := revision
	if d, err := digest.Parse(revision); err == nil {
		ref = d.String()
	} else {
		res.Tag = revision
	}
	desc, err := repo.Resolve(ctx, ref)
	if err != nil {
		_, verr := semver.NewVersion(revision)
		_, cerr := semver.NewConstraint(revision)
		if verr == nil || cerr != nil { // not a constraint: the lookup's error stands
			return Artifact{}, classify(fmt.Sprintf("%s:%s", url, revision), err)
		}
		constraint, _ := semver.NewConstraint(revision)
		tags, terr := c.tags(ctx, repo, url)
		if terr != nil {
			return Artifact{}, terr
		}
		var max *semver.Version
		var maxTag string
		for _, t := range tags {
			v, err := semver.NewVersion(strings.ReplaceAll(t, "_", "+"))
			if err != nil || !constraint.Check(v) {
				continue
			}
			if max == nil || v.GreaterThan(max) {
				max, maxTag = v, t
			}
		}
		if max == nil {
			return Artifact{}, errorf(KindNotFound, nil, "%s: no tag matches the semver constraint %q", url, revision)
		}
		res.Tag = maxTag
		if desc, err = repo.Resolve(ctx, maxTag); err != nil {
			return Artifact{}, classify(fmt.Sprintf("%s:%s", url, maxTag), err)
		}
	}
	res.Digest = desc.Digest.String()
	return c.layerBy(ctx, repo, res, url, func(m ocispec.Manifest, what string) (ocispec.Descriptor, error) {
		if len(m.Layers) > 10 {
			return ocispec.Descriptor{}, errorf(KindInvalid, nil, "%s: %d layers; Argo CD expects no more than 10", what, len(m.Layers))
		}
		helm := m.Config.MediaType == HelmConfigMediaType
		var content []ocispec.Descriptor
		for _, l := range m.Layers {
			mt := l.MediaType
			if helm && mt != HelmChartMediaType {
				continue
			}
			if !helm && !(strings.HasSuffix(mt, "tar+gzip") || strings.HasSuffix(mt, "tar.gzip") || strings.HasSuffix(mt, "tar")) {
				continue
			}
			if mt != ImageLayerMediaType && mt != HelmChartMediaType {
				return ocispec.Descriptor{}, errorf(KindInvalid, nil, "%s: layer media type %s is not one Argo CD accepts by default", what, mt)
			}
			content = append(content, l)
		}
		if len(content) != 1 {
			return ocispec.Descriptor{}, errorf(KindInvalid, nil, "%s: expected a single content layer, as Argo CD does; got %d", what, len(content))
		}
		return content[0], nil
	})
}
