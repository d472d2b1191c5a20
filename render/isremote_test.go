package render

import "testing"

// TestIsRemote holds the union of what render and discovery each knew about remote
// kustomize references: both now ask IsRemote.
func TestIsRemote(t *testing.T) {
	local := map[string]bool{"example.com/base": true, "vendor/app.git": true}
	exists := func(p string) bool { return local[p] }
	for _, tt := range []struct {
		ref  string
		want bool
	}{
		{"https://example.com/base.yaml", true},
		{"git@github.com:acme/shop.git//base", true},
		{"git::https://example.com/repo.git//base", true},
		{"gh:acme/shop//base", true},
		{"github.com/acme/shop/base?ref=v1", true},
		{"gitlab.com/acme/shop//base", true},
		{"bitbucket.org/acme/shop//base", true},
		{"base?version=v1", true},
		{"dev.azure.com/org/project/_git/repo//base", true},
		{"example.org/acme/shop//base", true}, // host/path, not in the checkout
		{"example.com/base", false},           // host-like, but a local directory
		{"vendor/app.git", false},             // .git suffix, but local
		{"other/app.git", true},               // .git suffix, not local
		{"../../base", false},
		{"deploy.yaml", false},
	} {
		if got := IsRemote(tt.ref, exists); got != tt.want {
			t.Errorf("IsRemote(%q) = %v, want %v", tt.ref, got, tt.want)
		}
	}
	if !IsRemote("example.com/base", nil) {
		t.Errorf("IsRemote with exists nil: a host/path spec must count as remote")
	}
}
