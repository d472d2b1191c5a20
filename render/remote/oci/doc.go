// Package oci fetches from OCI registries what GitOps controllers fetch: a Flux
// OCIRepository's artifact layer (ref.digest, ref.semver or ref.tag, then the
// layerSelector's media type or the first layer, as source-controller picks
// them) and Helm charts stored as OCI artifacts (Flux HelmRepository type oci,
// Argo CD OCI repoURLs, oci:// chart dependencies).
//
// The distribution protocol is oras.land/oras-go/v2's (registry/remote): this
// package only chooses what to fetch. Every request goes through the
// *http.Client the caller gives, which is where the remote policy (allowed
// prefixes, no private addresses unless named, redirects re-checked) is
// enforced; the bearer-token realm a registry names is fetched through the same
// client, so it is checked too. Sizes are checked from the descriptors before a
// byte of a blob is read, reads are capped, and oras verifies every blob's
// digest.
package oci
