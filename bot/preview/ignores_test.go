package preview

import (
	"testing"
	"time"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
)

// TestJudgeIgnoresOncePerReport: every ignore rule's expiry is judged once, with
// one now, before any target is diffed: an expired global rule is one report-level
// finding however many targets there are, and neither the config nor a target
// passes an expired rule on to Diff.
func TestJudgeIgnoresOncePerReport(t *testing.T) {
	now := time.Date(2026, 11, 29, 14, 2, 0, 0, time.UTC)
	old := diffing.IgnoreRule{Kind: "Deployment", Reason: "HPA", Origin: ".driftpreview.yaml:9", Expires: now.Add(-time.Hour)}
	live := diffing.IgnoreRule{Kind: "Service", Reason: "mesh", Origin: ".driftpreview.yaml:12"}
	local := diffing.IgnoreRule{Kind: "ConfigMap", Reason: "gen", Origin: ".driftpreview.yaml:20", Expires: now.Add(-time.Hour)}
	cfg := &config.Config{Ignore: []diffing.IgnoreRule{old, live}}
	targets := []config.Target{{Name: "a"}, {Name: "b", Ignore: []diffing.IgnoreRule{local}}, {Name: "c"}}
	gotCfg, gotTargets, expired := judgeIgnores(cfg, targets, now)
	if len(expired) != 2 || expired[0].Key.Kind != "Deployment" || expired[1].Key.Kind != "ConfigMap" {
		t.Fatalf("expired = %+v, want the Deployment rule then the ConfigMap rule, once each", expired)
	}
	for _, f := range expired {
		if f.Rule != diffing.RuleIgnoreExpired || !f.PreExisting {
			t.Errorf("finding %+v: want ignore-expired, pre-existing (the config is the base's)", f)
		}
	}
	if len(gotCfg.Ignore) != 1 || gotCfg.Ignore[0].Kind != "Service" || len(cfg.Ignore) != 2 {
		t.Errorf("config rules = %+v (given config %+v): want only the Service rule, the given config unchanged", gotCfg.Ignore, cfg.Ignore)
	}
	if len(gotTargets[1].Ignore) != 0 || len(targets[1].Ignore) != 1 {
		t.Errorf("target b rules = %+v: want none in force, the given target unchanged", gotTargets[1].Ignore)
	}
	if o := gotCfg.DiffOptions(gotTargets[1]); len(o.Ignore) != 1 || o.Ignore[0].Kind != "Service" {
		t.Errorf("Diff would see %+v, want only the Service rule", o.Ignore)
	}
}
