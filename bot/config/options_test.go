package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
)

func TestDiffOptions(t *testing.T) {
	global := diffing.IgnoreRule{Kind: "Deployment", Paths: []string{"/spec/replicas"}, Reason: "HPA", Origin: ".driftpreview.yaml:9"}
	local := diffing.IgnoreRule{Managers: []string{"istio"}, Reason: "mesh", Origin: ".driftpreview.yaml:5"}
	cfg := &Config{
		Version:       1,
		Policy:        diffing.Policy{Fail: []diffing.Rule{diffing.RuleDataLoss}, Severity: map[diffing.Rule]diffing.Severity{diffing.RuleFieldConflict: diffing.SeverityError}},
		StatefulKinds: []schema.GroupKind{{Group: "postgresql.cnpg.io", Kind: "Cluster"}},
		HumanManagers: []string{"lens"},
		Ignore:        []diffing.IgnoreRule{global},
	}
	tests := []struct {
		name   string
		cfg    *Config
		target Target
		want   diffing.Options
	}{
		{
			name: "global and target settings merge",
			cfg:  cfg,
			target: func() Target {
				t := NewTarget("apps/web")
				t.Sync = Sync{Prune: false, Replace: true, Manager: "kustomize-controller"}
				t.Ignore = []diffing.IgnoreRule{local}
				return t
			}(),
			want: diffing.Options{
				Prune: false, Replace: true, Manager: "kustomize-controller",
				StatefulKinds: cfg.StatefulKinds, HumanManagers: cfg.HumanManagers,
				Ignore: []diffing.IgnoreRule{global, local}, Policy: cfg.Policy,
				ChartMetadata: diffing.DefaultChartMetadata,
			},
		},
		{
			name:   "defaults from a parsed target",
			cfg:    cfg,
			target: NewTarget("apps/web"),
			want: diffing.Options{
				Prune: true, Manager: DefaultManager,
				StatefulKinds: cfg.StatefulKinds, HumanManagers: cfg.HumanManagers,
				Ignore: []diffing.IgnoreRule{global}, Policy: cfg.Policy,
				ChartMetadata: diffing.DefaultChartMetadata,
			},
		},
		{
			name:   "custom chart metadata",
			cfg:    &Config{ChartMetadata: []string{"example.com/*"}},
			target: NewTarget("apps/web"),
			want:   diffing.Options{Prune: true, Manager: DefaultManager, ChartMetadata: []string{"example.com/*"}},
		},
		{
			name:   "empty chart metadata folds nothing",
			cfg:    &Config{ChartMetadata: []string{}},
			target: NewTarget("apps/web"),
			want:   diffing.Options{Prune: true, Manager: DefaultManager, ChartMetadata: []string{}},
		},
		{
			name:   "nil config and a zero target",
			target: Target{Name: "x", Path: "x", Ignore: []diffing.IgnoreRule{local}},
			want:   diffing.Options{Manager: DefaultManager, Ignore: []diffing.IgnoreRule{local}, ChartMetadata: diffing.DefaultChartMetadata},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cfg.DiffOptions(tt.target)
			// cmp tells nil (the default list) from empty (fold nothing).
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DiffOptions mismatch (-want +got):\n%s", diff)
			}
		})
	}

	// The options are the caller's to change: the config must not change with them.
	o := cfg.DiffOptions(NewTarget("a"))
	o.Ignore[0].Reason = "changed"
	o.Policy.Severity[diffing.RuleOrphan] = diffing.SeverityError
	o.HumanManagers[0] = "changed"
	if cfg.Ignore[0].Reason != "HPA" || len(cfg.Policy.Severity) != 1 || cfg.HumanManagers[0] != "lens" {
		t.Errorf("changing DiffOptions' result changed the Config: %+v", cfg)
	}
}
