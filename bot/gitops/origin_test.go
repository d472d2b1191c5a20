package gitops

import (
	"testing"

	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

func TestOriginURL(t *testing.T) {
	withOrigin := fixtureRepo(t, "argocd", argoOrigin)
	got, err := OriginURL(t.Context(), withOrigin)
	if err != nil || got != argoOrigin {
		t.Errorf("OriginURL = %q, %v; want %q", got, err, argoOrigin)
	}

	noOrigin := t.TempDir()
	gitfixture.Git(t, noOrigin, "init", "-q")
	got, err = OriginURL(t.Context(), noOrigin)
	if err != nil || got != "" {
		t.Errorf("OriginURL without origin = %q, %v; want empty, no error", got, err)
	}

	if _, err := OriginURL(t.Context(), t.TempDir()); err == nil {
		t.Error("OriginURL outside a git repository: want an error")
	}
}

func BenchmarkDiscoverArgoCD(b *testing.B) {
	root := fixtureRepo(b, "argocd", argoOrigin)
	opts := Options{RepoURLs: []string{argoOrigin}, Renderer: realRenderer, MaxDepth: 5}
	for b.Loop() {
		if _, err := Discover(b.Context(), root, opts); err != nil {
			b.Fatal(err)
		}
	}
}
