package jobs

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRepoURLs(t *testing.T) {
	tests := []struct {
		clone, pr string
		want      []string
	}{
		{"https://github.com/acme/shop.git", "https://github.com/acme/shop/pull/7",
			[]string{"https://github.com/acme/shop.git", "https://github.com/acme/shop"}},
		{"https://oauth2:tok@gitlab.example.com/g/sub/shop.git", "https://gitlab.example.com/g/sub/shop/-/merge_requests/3",
			[]string{"https://gitlab.example.com/g/sub/shop.git", "https://gitlab.example.com/g/sub/shop"}},
		{"file:///srv/git/shop.git", "", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, repoURLs(tt.clone, tt.pr)); diff != "" {
			t.Errorf("repoURLs(%q, %q) (-want +got):\n%s", tt.clone, tt.pr, diff)
		}
	}
}
