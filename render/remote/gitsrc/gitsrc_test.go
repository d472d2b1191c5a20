package gitsrc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/render/remote/gitsrc"
	"github.com/driftpreview/driftpreview/render/remote/gitsrc/gittest"
)

func TestParseKustomize(t *testing.T) {
	for _, tc := range []struct{ raw, repo, path, ref string }{
		{"https://github.com/org/repo//deploy/base?ref=v1.2.0", "https://github.com/org/repo", "deploy/base", "v1.2.0"},
		{"github.com/org/repo/deploy/base?ref=v1", "https://github.com/org/repo", "deploy/base", "v1"},
		{"git::https://gitlab.example.com/group/repo.git//base?ref=main", "https://gitlab.example.com/group/repo.git", "base", "main"},
		{"https://git.example.com/repo.git/sub/dir?version=v2", "https://git.example.com/repo.git", "sub/dir", "v2"},
		{"https://dev.azure.com/org/proj/_git/repo/base?ref=x", "https://dev.azure.com/org/proj/_git/repo", "base", "x"},
		{"https://Example.com/org/repo?ref=v1&timeout=90&submodules=false", "https://example.com/org/repo", "", "v1"},
		{"https://user@example.com/org/repo//a", "https://example.com/org/repo", "a", ""},
		{"http://127.0.0.1:8080/r.git//a?ref=v1&ref=x", "http://127.0.0.1:8080/r.git", "a", "v1"},
	} {
		s, err := gitsrc.ParseKustomize(tc.raw)
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if s.RepoURL != tc.repo || s.Path != tc.path || s.Ref != tc.ref {
			t.Errorf("%s: got %q %q %q, want %q %q %q", tc.raw, s.RepoURL, s.Path, s.Ref, tc.repo, tc.path, tc.ref)
		}
	}
	for raw, want := range map[string]string{
		"git@github.com:org/repo/base?ref=v1":         "ssh",
		"ssh://git@example.com/org/repo":              "ssh",
		"file:///etc/kustomize":                       "file://",
		"gitlab.com/org/repo/base":                    "no scheme",
		"https://example.com/org/repo//../../x":       "leaves the repository",
		"https://example.com/org":                     "cannot tell the repository",
		"ftp://example.com/org/repo":                  "unsupported scheme",
		"https://example.com/o/r?ref=--upload-pack=x": "not a ref",
	} {
		if _, err := gitsrc.ParseKustomize(raw); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", raw, err, want)
		}
	}
	if !(gitsrc.Spec{Ref: strings.Repeat("a", 40)}).Pinned() || (gitsrc.Spec{Ref: "v1"}).Pinned() {
		t.Error("Pinned")
	}
}

func loopback(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func allowAll(string) error { return nil }

func setup(t *testing.T) (*gittest.Server, *gittest.Repo, string, string) {
	srv := gittest.Start(t)
	repo := srv.NewRepo(t, "platform")
	c1 := repo.Commit(map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: \"1\"}\n",
		"README.md":               "platform\n",
	}, "v1")
	c2 := repo.Commit(map[string]string{"base/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {v: \"2\"}\n"}, "v2")
	return srv, repo, c1, c2
}

func read(t *testing.T, res gitsrc.Result, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.Root, res.Path, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFetch(t *testing.T) {
	srv, repo, c1, c2 := setup(t)
	f := &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback}
	ctx := context.Background()
	for _, tc := range []struct{ ref, commit, want string }{
		{"v1", c1, `v: "1"`},
		{"v2", c2, `v: "2"`},
		{"main", c2, `v: "2"`},
		{"", c2, `v: "2"`},
		{c1, c1, `v: "1"`},
	} {
		s, err := gitsrc.ParseKustomize(repo.URL + "//base?ref=" + tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.Fetch(ctx, s)
		if err != nil {
			t.Fatalf("ref %q: %v", tc.ref, err)
		}
		if res.Commit != tc.commit || !strings.Contains(read(t, res, "cm.yaml"), tc.want) {
			t.Errorf("ref %q: commit %s, cm.yaml %q", tc.ref, res.Commit, read(t, res, "cm.yaml"))
		}
		if _, err := os.Stat(filepath.Join(res.Root, ".git")); err == nil {
			t.Error("the checkout holds .git")
		}
	}
	// A base pinned to a commit is fetched once.
	before := srv.Requests.Load()
	s, _ := gitsrc.ParseKustomize(repo.URL + "//base?ref=" + c1)
	if _, err := f.Fetch(ctx, s); err != nil {
		t.Fatal(err)
	}
	if n := srv.Requests.Load() - before; n != 0 {
		t.Errorf("a pinned base fetched again: %d requests", n)
	}
}

func TestFetchFailures(t *testing.T) {
	srv, repo, _, _ := setup(t)
	ctx := context.Background()
	spec := func(ref string) gitsrc.Spec {
		s, err := gitsrc.ParseKustomize(repo.URL + "//base?ref=" + ref)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	kind := func(err error) gitsrc.Kind {
		t.Helper()
		var e *gitsrc.Error
		if errors.As(err, &e) {
			return e.Kind
		}
		t.Fatalf("not a *gitsrc.Error: %v", err)
		return -1
	}

	before := srv.Requests.Load()
	f := &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: func(u string) error { return fmt.Errorf("%s is not under an allowed prefix", u) }, Dial: loopback}
	_, err := f.Fetch(ctx, spec("v1"))
	if kind(err) != gitsrc.KindRefused || !strings.Contains(err.Error(), "not under an allowed prefix") {
		t.Errorf("policy: %v", err)
	}
	if srv.Requests.Load() != before {
		t.Error("a refused base reached the server")
	}

	// The dialer refuses the address (a private address the policy does not name).
	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("127.0.0.1 is a loopback address, which the remote policy does not name")
	}}
	_, err = f.Fetch(ctx, spec("v1"))
	if kind(err) != gitsrc.KindRefused || !strings.Contains(err.Error(), "loopback") || srv.Requests.Load() != before {
		t.Errorf("dialer: %v", err)
	}

	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback}
	if _, err := f.Fetch(ctx, spec("v9")); kind(err) != gitsrc.KindNotFound {
		t.Errorf("missing ref: %v", err)
	}
	s, _ := gitsrc.ParseKustomize(srv.URL + "/nope.git//base?ref=v1")
	if _, err := f.Fetch(ctx, s); kind(err) != gitsrc.KindNotFound {
		t.Errorf("missing repo: %v", err)
	}

	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, compressible
	repo.Commit(map[string]string{"big.txt": big}, "big")
	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback, MaxTreeBytes: 512 << 10}
	if _, err := f.Fetch(ctx, spec("big")); kind(err) != gitsrc.KindTooBig || !strings.Contains(err.Error(), "add up to") {
		t.Errorf("tree cap: %v", err)
	}
	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback, MaxFiles: 2}
	if _, err := f.Fetch(ctx, spec("v1")); kind(err) != gitsrc.KindTooBig {
		t.Errorf("file cap: %v", err)
	}
	rnd := make([]byte, 256<<10)
	rng := rand.New(rand.NewPCG(1, 2)) // incompressible, so the pack is as big
	for i := range rnd {
		rnd[i] = byte(rng.Uint32())
	}
	repo.Commit(map[string]string{"noise.bin": string(rnd)}, "noise")
	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback, MaxTransferBytes: 16 << 10}
	if _, err := f.Fetch(ctx, spec("noise")); kind(err) != gitsrc.KindTooBig || !strings.Contains(err.Error(), "download") {
		t.Errorf("transfer cap: %v", err)
	}

	srv.Delay = func() { time.Sleep(3 * time.Second) }
	f = &gitsrc.Fetcher{Dir: t.TempDir(), Allowed: allowAll, Dial: loopback, Timeout: time.Second}
	start := time.Now()
	if _, err := f.Fetch(ctx, spec("v1")); err == nil || kind(err) != gitsrc.KindTimeout {
		t.Errorf("slow server: %v", err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("the timeout took %s", d)
	}
}
