package diffing

import (
	"strings"
	"testing"
)

func TestDiffRename(t *testing.T) {
	runDiffCases(t, []diffCase{
		{
			name: "rename by namePrefix across five objects",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, fixture(t, "rename/base.yaml")), Head: set(t, fixture(t, "rename/head.yaml"))}
			},
			want: []string{
				"error prune-stateful PersistentVolumeClaim/shop/data",
				"error rename PersistentVolumeClaim/shop/data",
				"warning prune ConfigMap/shop/app-config",
				"warning prune Secret/shop/creds",
				"warning prune Service/shop/web",
				"warning prune Deployment/shop/web",
				"warning rename ConfigMap/shop/app-config",
				"warning rename Secret/shop/creds",
				"warning rename Service/shop/web",
				"warning rename Deployment/shop/web",
			},
			check: func(t *testing.T, got TargetReport) {
				for _, f := range got.Findings {
					if f.Rule == RuleRename && !strings.Contains(f.Message, "`shop/v2-"+f.Key.Name+"`") {
						t.Errorf("rename of %s does not name its new key: %s", f.Key, f.Message)
					}
					if f.Rule == RulePrune && !strings.Contains(f.Message, "v2-"+f.Key.Name) {
						t.Errorf("prune of renamed %s does not pair with the rename: %s", f.Key, f.Message)
					}
				}
			},
		},
		{
			name: "namespace move",
			in: func(t *testing.T) Input {
				base := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {LOG_LEVEL: info, A: b, C: d}\n"
				return Input{Base: set(t, base), Head: set(t, strings.Replace(base, "namespace: shop", "namespace: shop-v2", 1))}
			},
			want: []string{"warning prune ConfigMap/shop/settings", "warning rename ConfigMap/shop/settings"},
		},
		{
			name: "unrelated delete and create are no rename",
			in: func(t *testing.T) Input {
				return Input{
					Base: set(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: shop}\ndata: {A: '1', B: '2', C: '3'}\n"),
					Head: set(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: z, namespace: shop}\ndata: {X: '7', Y: '8', Z: '9'}\n"),
				}
			},
			want: []string{"warning prune ConfigMap/shop/a"},
		},
		{
			name: "rename with prune off leaves the old object running",
			in: func(t *testing.T) Input {
				base := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {LOG_LEVEL: info, A: b}\n"
				return Input{Base: set(t, base), Head: set(t, strings.Replace(base, "name: settings", "name: shop-settings", 1))}
			},
			opts: func(o *Options) { o.Prune = false },
			want: []string{"warning rename ConfigMap/shop/settings", "info orphan ConfigMap/shop/settings"},
		},
	})
}

func TestNameTransform(t *testing.T) {
	tests := []struct{ old, new, in, want string }{
		{"app-config", "v2-app-config", "creds", "v2-creds"},
		{"shop-web", "store-web", "shop-db", "store-db"},
		{"web", "web-canary", "creds", "creds-canary"},
		{"a-blue-web", "a-green-web", "a-blue-db", "a-green-db"},
		{"same", "same", "other", "other"},
	}
	for _, tt := range tests {
		if got := nameTransform(tt.old, tt.new)(tt.in); got != tt.want {
			t.Errorf("nameTransform(%q→%q)(%q) = %q, want %q", tt.old, tt.new, tt.in, got, tt.want)
		}
	}
}
