package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render/remote/gitsrc/gittest"
	"github.com/driftpreview/driftpreview/render/remote/oci"
	"github.com/driftpreview/driftpreview/render/remote/oci/ocitest"
)

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOCIArtifact(t *testing.T) {
	reg := ocitest.Start(t)
	reg.PushFiles(t, "manifests/app", "1.0.0", map[string]string{"deploy/app.yaml": "v: 1\n"})
	reg.PushFiles(t, "manifests/app", "2.0.0", map[string]string{"deploy/app.yaml": "v: 2\n"})
	url := reg.URL("manifests/app")

	f := newFetcher(t, allow("oci://"+reg.Host()+"/manifests"))
	for _, ref := range []oci.Ref{{URL: url, Tag: "1.0.0"}, {URL: url, SemVer: "1.x"}} {
		a, err := f.OCIArtifact(t.Context(), ref, "", "", false)
		if err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, filepath.Join(a.Dir, "deploy/app.yaml")); got != "v: 1\n" || !strings.HasPrefix(a.Revision, "1.0.0@sha256:") {
			t.Errorf("%+v: %q %s", ref, got, a.Revision)
		}
	}
	a, err := f.OCIArtifact(t.Context(), oci.Ref{URL: url, SemVer: ">=1.0.0"}, oci.FluxContentMediaType, "extract", false)
	if err != nil || readFile(t, filepath.Join(a.Dir, "deploy/app.yaml")) != "v: 2\n" {
		t.Fatalf("semver: %v", err)
	}

	// Not under an allowed prefix: refused before any request.
	f2 := newFetcher(t, allow("oci://"+reg.Host()+"/other"))
	_, err = f2.OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "1.0.0"}, "", "", false)
	wantReason(t, err, Refused)
	_, err = newFetcher(t, Policy{}).OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "1.0.0"}, "", "", false)
	wantReason(t, err, Refused)

	// A registry name that resolves to a private address the policy does not name.
	port := reg.Host()[strings.LastIndex(reg.Host(), ":"):]
	named := "oci://registry.example.com" + port + "/manifests"
	f3 := newFetcher(t, allow(named))
	fakeResolver(f3, "127.0.0.1")
	_, err = f3.OCIArtifact(t.Context(), oci.Ref{URL: named + "/app", Tag: "1.0.0"}, "", "", true)
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error %q does not name the address", err)
	}
	// Named with allowPrivate, it is fetched.
	f4 := newFetcher(t, Policy{Allow: []Prefix{{URL: named, AllowPrivate: true}}})
	fakeResolver(f4, "127.0.0.1")
	if _, err := f4.OCIArtifact(t.Context(), oci.Ref{URL: named + "/app", Tag: "1.0.0"}, "", "", true); err != nil {
		t.Fatal(err)
	}

	_, err = f.OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "9.0.0"}, "", "", false)
	wantReason(t, err, NotFound)
	// copy stores the layer as it is: its consumers untar it to the same tree.
	c, err := f.OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "1.0.0"}, "", "copy", false)
	if err != nil || readFile(t, filepath.Join(c.Dir, "deploy/app.yaml")) != "v: 1\n" || c.Archive == "" {
		t.Fatalf("copy: %+v %v", c, err)
	}
	_, err = f.OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "1.0.0"}, "", "unpack", false)
	wantReason(t, err, Invalid)
	small := newFetcher(t, Policy{Allow: allow("oci://" + reg.Host() + "/").Allow, MaxArchiveBytes: 16})
	_, err = small.OCIArtifact(t.Context(), oci.Ref{URL: url, Tag: "1.0.0"}, "", "", false)
	wantReason(t, err, TooBig)

	// A layer whose tar leaves its directory is refused by Unpack.
	evil := reg.PushLayer(t, "manifests/evil", "1.0.0", oci.FluxContentMediaType, ocitest.Tgz(t, map[string]string{"../escape.yaml": "x: 1\n"}))
	_ = evil
	_, err = f.OCIArtifact(t.Context(), oci.Ref{URL: reg.URL("manifests/evil"), Tag: "1.0.0"}, "", "", false)
	wantReason(t, err, Invalid)
}

func TestOCIChartAndDependency(t *testing.T) {
	reg := ocitest.Start(t)
	for _, v := range []string{"1.0.0", "1.4.0", "2.0.0"} {
		reg.PushChart(t, "charts", ocitest.Chart(t, "db", v, map[string]string{"templates/sts.yaml": "kind: StatefulSet\n"}))
	}
	f := newFetcher(t, allow("oci://"+reg.Host()+"/charts"))
	ch, err := f.HelmChart(t.Context(), reg.URL("charts"), "db", "1.x")
	if err != nil {
		t.Fatal(err)
	}
	if ch.Version != "1.4.0" || !strings.Contains(readFile(t, filepath.Join(ch.Dir, "Chart.yaml")), "version: 1.4.0") {
		t.Errorf("chart %+v", ch)
	}
	// An oci:// dependency, built like helm dependency build.
	chartYAML := []byte("apiVersion: v2\nname: app\nversion: 0.1.0\ndependencies:\n  - name: db\n    version: \">=2.0.0\"\n    repository: " + reg.URL("charts") + "\n")
	deps, err := f.HelmDependencies(t.Context(), chartYAML, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(deps) != 1 || deps[0].Version != "2.0.0" || deps[0].Archive == "" {
		t.Errorf("deps %+v", deps)
	}
	_, err = newFetcher(t, allow("oci://"+reg.Host()+"/other")).HelmChart(t.Context(), reg.URL("charts"), "db", "1.x")
	wantReason(t, err, Refused)
}

func TestGitBase(t *testing.T) {
	srv := gittest.Start(t)
	repo := srv.NewRepo(t, "platform")
	c1 := repo.Commit(map[string]string{"base/kustomization.yaml": "resources: [cm.yaml]\n", "base/cm.yaml": "v: 1\n"}, "v1")
	repo.Commit(map[string]string{"base/cm.yaml": "v: 2\n"}, "v2")

	f := newFetcher(t, allow(srv.URL+"/"))
	b, err := f.GitBase(t.Context(), repo.URL+"//base?ref=v1")
	if err != nil {
		t.Fatal(err)
	}
	if b.Commit != c1 || readFile(t, filepath.Join(b.Root, b.Path, "cm.yaml")) != "v: 1\n" {
		t.Errorf("v1: %+v", b)
	}
	// Pinned to a commit: fetched once, then from the cache.
	if _, err := f.GitBase(t.Context(), repo.URL+"//base?ref="+c1); err != nil {
		t.Fatal(err)
	}
	n := srv.Requests.Load()
	if b, err := f.GitBase(t.Context(), repo.URL+"//base?ref="+c1); err != nil || b.Commit != c1 {
		t.Fatalf("pinned again: %v", err)
	}
	if srv.Requests.Load() != n {
		t.Error("a pinned base was fetched again")
	}
	b2, err := f.GitBase(t.Context(), repo.URL+"//base?ref=v2")
	if err != nil || readFile(t, filepath.Join(b2.Root, b2.Path, "cm.yaml")) != "v: 2\n" {
		t.Fatalf("v2: %v", err)
	}

	_, err = newFetcher(t, Policy{}).GitBase(t.Context(), repo.URL+"//base?ref=v1")
	wantReason(t, err, Refused)
	_, err = newFetcher(t, allow(srv.URL+"/other")).GitBase(t.Context(), repo.URL+"//base?ref=v1")
	wantReason(t, err, Refused)
	_, err = f.GitBase(t.Context(), "git@github.com:org/repo//base?ref=v1")
	wantReason(t, err, Unsupported)

	// A host name resolving to a private address the policy does not name.
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	named := "http://git.example.com" + port + "/"
	f2 := newFetcher(t, allow(named))
	fakeResolver(f2, "127.0.0.1")
	before := srv.Requests.Load()
	_, err = f2.GitBase(t.Context(), named+"platform.git//base?ref=v1")
	wantReason(t, err, Refused)
	if !strings.Contains(err.Error(), "127.0.0.1") || srv.Requests.Load() != before {
		t.Errorf("private address: %v (%d requests)", err, srv.Requests.Load()-before)
	}
}
