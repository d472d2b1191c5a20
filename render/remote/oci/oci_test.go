package oci_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/driftpreview/driftpreview/render/remote/oci"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
)

func newClient(t *testing.T, reg *ocitest.Registry) *oci.Client {
	t.Helper()
	return &oci.Client{HTTP: reg.Server.Client(), PlainHTTP: func(string) bool { return true }}
}

func TestLayerByTagSemverDigest(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	d1 := reg.PushFiles(t, "manifests/app", "1.0.0", map[string]string{"app.yaml": "v: 1\n"})
	reg.PushFiles(t, "manifests/app", "1.2.0", map[string]string{"app.yaml": "v: 12\n"})
	reg.PushFiles(t, "manifests/app", "2.0.0", map[string]string{"app.yaml": "v: 2\n"})
	reg.PushFiles(t, "manifests/app", "latest", map[string]string{"app.yaml": "v: latest\n"})
	c := newClient(t, reg)
	url := reg.URL("manifests/app")

	for _, tc := range []struct {
		name string
		ref  oci.Ref
		want string
		tag  string
	}{
		{"tag", oci.Ref{URL: url, Tag: "1.0.0"}, "v: 1\n", "1.0.0"},
		// ">=1.0.0 <2.0.0" picks the highest match, as Flux does.
		{"semver", oci.Ref{URL: url, SemVer: ">=1.0.0 <2.0.0"}, "v: 12\n", "1.2.0"},
		// The digest wins over the tag, as in source-controller.
		{"digest", oci.Ref{URL: url, Tag: "2.0.0", Digest: d1}, "v: 1\n", ""},
		{"default latest", oci.Ref{URL: url}, "v: latest\n", "latest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			art, err := c.Layer(ctx, tc.ref, "")
			if err != nil {
				t.Fatal(err)
			}
			if art.Tag != tc.tag {
				t.Errorf("tag %q, want %q", art.Tag, tc.tag)
			}
			files := ocitest.Untar(t, art.Data)
			if files["app.yaml"] != tc.want {
				t.Errorf("app.yaml = %q, want %q", files["app.yaml"], tc.want)
			}
			if !strings.HasPrefix(art.Digest, "sha256:") || art.MediaType != oci.FluxContentMediaType {
				t.Errorf("artifact %+v", art.Resolved)
			}
		})
	}
}

func TestLayerSelectorAndFailures(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	reg.PushFiles(t, "manifests/app", "1.0.0", map[string]string{"a.yaml": "a: 1\n"})
	c := newClient(t, reg)
	url := reg.URL("manifests/app")

	if _, err := c.Layer(ctx, oci.Ref{URL: url, Tag: "1.0.0"}, "application/x-other"); kind(err) != oci.KindNotFound || !strings.Contains(err.Error(), "no layer with media type") {
		t.Errorf("missing media type: %v", err)
	}
	if _, err := c.Layer(ctx, oci.Ref{URL: url, Tag: "9.9.9"}, ""); kind(err) != oci.KindNotFound {
		t.Errorf("missing tag: %v", err)
	}
	if _, err := c.Layer(ctx, oci.Ref{URL: url, SemVer: ">=5"}, ""); kind(err) != oci.KindNotFound || !strings.Contains(err.Error(), "no tag matches") {
		t.Errorf("no semver match: %v", err)
	}
	if _, err := c.Layer(ctx, oci.Ref{URL: url, SemVer: "not a range"}, ""); kind(err) != oci.KindInvalid {
		t.Errorf("bad range: %v", err)
	}
	if _, err := c.Layer(ctx, oci.Ref{URL: url + ":1.0.0"}, ""); kind(err) != oci.KindInvalid {
		t.Errorf("tag in URL: %v", err)
	}
	small := newClient(t, reg)
	small.MaxBlobBytes = 10
	if _, err := small.Layer(ctx, oci.Ref{URL: url, Tag: "1.0.0"}, ""); kind(err) != oci.KindTooBig {
		t.Errorf("layer over the cap: %v", err)
	}
	small = newClient(t, reg)
	small.MaxTags = 1
	reg.PushFiles(t, "manifests/app", "1.1.0", map[string]string{"a.yaml": "a: 2\n"})
	if _, err := small.Layer(ctx, oci.Ref{URL: url, SemVer: "*"}, ""); kind(err) != oci.KindTooBig {
		t.Errorf("tags over the cap: %v", err)
	}
}

// TestClientRefusalStops proves every request goes through the caller's client:
// a transport that refuses everything (as the remote policy refuses a host)
// fetches nothing.
func TestClientRefusalStops(t *testing.T) {
	reg := ocitest.Start(t)
	reg.PushFiles(t, "manifests/app", "1.0.0", map[string]string{"a.yaml": "a: 1\n"})
	refused := errors.New("refused by policy")
	c := &oci.Client{HTTP: &http.Client{Transport: roundTripper(func(*http.Request) (*http.Response, error) { return nil, refused })}, PlainHTTP: func(string) bool { return true }}
	_, err := c.Layer(context.Background(), oci.Ref{URL: reg.URL("manifests/app"), Tag: "1.0.0"}, "")
	if kind(err) != oci.KindUnreachable || !errors.Is(err, refused) {
		t.Fatalf("got %v, want the client's refusal", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestChart(t *testing.T) {
	reg := ocitest.Start(t)
	ctx := context.Background()
	for _, v := range []string{"1.0.0", "1.5.0", "2.0.0", "2.1.0+build.1"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "app", v, map[string]string{"templates/cm.yaml": "kind: ConfigMap\napiVersion: v1\nmetadata: {name: cm-" + strings.ReplaceAll(v, "+", "-") + "}\n"}))
	}
	c := newClient(t, reg)
	repoURL := reg.URL("charts")
	for _, tc := range []struct{ version, want string }{
		{"1.0.0", "1.0.0"},
		{"1.x", "1.5.0"},
		{"", "2.1.0+build.1"},
		{"2.1.0+build.1", "2.1.0+build.1"},
	} {
		art, err := c.Chart(ctx, repoURL, "app", tc.version)
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		if art.Tag != tc.want || art.MediaType != oci.HelmChartMediaType {
			t.Errorf("%q resolved to %q (%s), want %q", tc.version, art.Tag, art.MediaType, tc.want)
		}
		files := ocitest.Untar(t, art.Data)
		if !strings.Contains(files["app/Chart.yaml"], "version: "+tc.want) {
			t.Errorf("%q: Chart.yaml %q", tc.version, files["app/Chart.yaml"])
		}
	}
	if _, err := c.Chart(ctx, repoURL, "app", "3.x"); kind(err) != oci.KindNotFound {
		t.Errorf("3.x: %v", err)
	}
	if _, err := c.Chart(ctx, repoURL, "nope", "1.0.0"); kind(err) != oci.KindNotFound {
		t.Errorf("missing chart: %v", err)
	}
}

func TestDeniedWithoutCredentials(t *testing.T) {
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "bot" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	reg := &ocitest.Registry{Server: srv, Auth: [2]string{"bot", "s3cret"}}
	reg.PushFiles(t, "private/app", "1.0.0", map[string]string{"a.yaml": "a: 1\n"})
	u, _ := url.Parse(srv.URL)
	ref := oci.Ref{URL: "oci://" + u.Host + "/private/app", Tag: "1.0.0"}

	c := &oci.Client{HTTP: srv.Client(), PlainHTTP: func(string) bool { return true }}
	_, err := c.Layer(context.Background(), ref, "")
	if kind(err) != oci.KindDenied {
		t.Fatalf("without credentials: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Fatal("the error shows the password")
	}
	c.Credential = func(host string) (string, string, bool) { return "bot", "s3cret", host == u.Host }
	if _, err := c.Layer(context.Background(), ref, ""); err != nil {
		t.Fatalf("with credentials: %v", err)
	}
}

func TestParseURL(t *testing.T) {
	for _, bad := range []string{"https://ghcr.io/x", "oci://", "oci://ghcr.io", "oci://ghcr.io/x:1.0", "oci://ghcr.io/x@sha256:00"} {
		if _, _, err := oci.ParseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	h, r, err := oci.ParseURL("oci://ghcr.io:443/org/manifests/app/")
	if err != nil || h != "ghcr.io:443" || r != "org/manifests/app" {
		t.Errorf("got %q %q %v", h, r, err)
	}
}

func kind(err error) oci.Kind {
	var e *oci.Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return -1
}

func TestMain(m *testing.M) {
	// Helm's registry client writes a credentials file under HOME by default.
	dir, err := os.MkdirTemp("", "ocitest-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", dir)
	os.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(dir, "config.json"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
