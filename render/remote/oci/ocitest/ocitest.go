// Package ocitest runs an in-process OCI registry for tests
// (github.com/google/go-containerregistry/pkg/registry over httptest, plain
// HTTP on loopback) and pushes to it what real tools push: Flux artifacts (a
// gzipped tar layer of media type application/vnd.cncf.flux.content.v1.tar+gzip,
// as `flux push artifact` writes) through oras-go, and Helm charts packaged by
// Helm's own chartutil.Save and pushed by Helm's registry client.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	helmreg "helm.sh/helm/v4/pkg/registry"
	"sigs.k8s.io/yaml"
)

// Registry is a running test registry.
type Registry struct {
	Server *httptest.Server
	// Auth is the username and password pushes use, when set.
	Auth [2]string
}

// Start runs a registry until the test ends.
func Start(t testing.TB) *Registry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(discard())))
	t.Cleanup(srv.Close)
	return &Registry{Server: srv}
}

// Host is the registry's host:port.
func (r *Registry) Host() string {
	u, _ := url.Parse(r.Server.URL)
	return u.Host
}

// URL is oci://host:port/repository.
func (r *Registry) URL(repository string) string { return "oci://" + r.Host() + "/" + repository }

func (r *Registry) client() *auth.Client {
	c := &auth.Client{Client: r.Server.Client()}
	if r.Auth[0] != "" {
		c.Credential = auth.StaticCredential(r.Host(), auth.Credential{Username: r.Auth[0], Password: r.Auth[1]})
	}
	return c
}

// Tgz packs files (slash paths → content) into a gzipped tar, sorted by name.
func Tgz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PushFiles pushes files as a Flux artifact to repository:tag and returns the
// manifest digest.
func (r *Registry) PushFiles(t testing.TB, repository, tag string, files map[string]string) string {
	t.Helper()
	return r.PushLayer(t, repository, tag, "application/vnd.cncf.flux.content.v1.tar+gzip", Tgz(t, files))
}

// PushLayer pushes one layer of the given media type as an artifact with
// Flux's config media type, and returns the manifest digest.
func (r *Registry) PushLayer(t testing.TB, repository, tag, mediaType string, layer []byte) string {
	t.Helper()
	ctx := context.Background()
	store := memory.New()
	ld := content.NewDescriptorFromBytes(mediaType, layer)
	if err := store.Push(ctx, ld, bytes.NewReader(layer)); err != nil {
		t.Fatal(err)
	}
	cfg := []byte("{}")
	cd := content.NewDescriptorFromBytes("application/vnd.cncf.flux.config.v1+json", cfg)
	if err := store.Push(ctx, cd, bytes.NewReader(cfg)); err != nil {
		t.Fatal(err)
	}
	md, err := oras.PackManifest(ctx, store, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		Layers: []ocispec.Descriptor{ld}, ConfigDescriptor: &cd,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "1970-01-01T00:00:00Z"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Tag(ctx, md, tag); err != nil {
		t.Fatal(err)
	}
	repo, err := remote.NewRepository(r.Host() + "/" + repository)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	repo.Client = r.client()
	if _, err := oras.Copy(ctx, store, tag, repo, tag, oras.DefaultCopyOptions); err != nil {
		t.Fatalf("pushing %s:%s: %v", repository, tag, err)
	}
	return md.Digest.String()
}

// Chart packages a chart named name at version with the given files (paths
// inside the chart, e.g. templates/cm.yaml) with Helm's chartutil.Save and
// returns the .tgz.
func Chart(t testing.TB, name, version string, files map[string]string) []byte {
	t.Helper()
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version, Type: "application"}}
	for p, data := range files {
		f := &common.File{Name: p, Data: []byte(data)}
		switch {
		case p == "values.yaml":
			ch.Values = map[string]any{}
		case strings.HasPrefix(p, "templates/"):
			ch.Templates = append(ch.Templates, f)
			continue
		}
		ch.Files = append(ch.Files, f)
	}
	if v, ok := files["values.yaml"]; ok {
		vals, err := common.ReadValues([]byte(v))
		if err != nil {
			t.Fatal(err)
		}
		ch.Values = vals
	}
	dir := t.TempDir()
	p, err := chartutil.Save(ch, dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// PushChart pushes a packaged chart under oci://host/repository/<name>:<version>
// with Helm's registry client.
func (r *Registry) PushChart(t testing.TB, repository string, tgz []byte) {
	t.Helper()
	meta := chartMeta(t, tgz)
	opts := []helmreg.ClientOption{helmreg.ClientOptPlainHTTP(), helmreg.ClientOptHTTPClient(r.Server.Client()),
		helmreg.ClientOptWriter(io.Discard), helmreg.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}
	if r.Auth[0] != "" {
		opts = append(opts, helmreg.ClientOptBasicAuth(r.Auth[0], r.Auth[1]))
	}
	c, err := helmreg.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ref := r.Host() + "/" + repository + "/" + meta[0] + ":" + meta[1]
	if _, err := c.Push(tgz, ref, helmreg.PushOptCreationTime("1970-01-01T00:00:00Z")); err != nil {
		t.Fatalf("helm push %s: %v", ref, err)
	}
}

// chartMeta reads name and version from a chart archive.
func chartMeta(t testing.TB, tgz []byte) [2]string {
	t.Helper()
	for name, data := range Untar(t, tgz) {
		if strings.Count(name, "/") == 1 && strings.HasSuffix(name, "/Chart.yaml") {
			md := &chart.Metadata{}
			if err := yaml.Unmarshal([]byte(data), md); err != nil {
				t.Fatal(err)
			}
			return [2]string{md.Name, md.Version}
		}
	}
	t.Fatal("no Chart.yaml in the archive")
	return [2]string{}
}

// Untar reads a gzipped tar into a map of path → content (regular files).
func Untar(t testing.TB, tgz []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
	}
}

func discard() *log.Logger { return log.New(io.Discard, "", 0) }

var _ http.Handler = registry.New()
