package diffing

import (
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render"
)

// marked sets the render step's generator hash mark on every object of s whose
// name ends in one of hashes.
func marked(s render.ObjectSet, hashes ...string) render.ObjectSet {
	for i := range s.Objects {
		for _, h := range hashes {
			if strings.HasSuffix(s.Objects[i].Key.Name, "-"+h) {
				s.Objects[i].HashSuffix = h
			}
		}
	}
	return s
}

func TestDiffHashRotation(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings-%s, namespace: shop}\ndata: {LOG_LEVEL: %s, A: b, C: d, E: f}\n"
	cmOf := func(hash, level string) string {
		return strings.Replace(strings.Replace(cm, "%s", hash, 1), "%s", level, 1)
	}
	runDiffCases(t, []diffCase{
		{
			name: "generator hash rotation is info not rename and prune",
			in: func(t *testing.T) Input {
				return Input{
					Base: marked(set(t, cmOf("5tb7hg2c8f", "info")), "5tb7hg2c8f"),
					Head: marked(set(t, cmOf("g62t54t4b6", "info")), "g62t54t4b6"),
				}
			},
			want: []string{"info hash-rotation ConfigMap/shop/settings-5tb7hg2c8f"},
			check: func(t *testing.T, got TargetReport) {
				if m := got.Findings[0].Message; !strings.Contains(m, "`shop/settings-g62t54t4b6`") || !strings.Contains(m, "deletes the old one") {
					t.Errorf("the message must name the new object and the prune: %s", m)
				}
			},
		},
		{
			name: "with prune off the old one stays",
			in: func(t *testing.T) Input {
				return Input{
					Base: marked(set(t, cmOf("5tb7hg2c8f", "info")), "5tb7hg2c8f"),
					Head: marked(set(t, cmOf("g62t54t4b6", "debug")), "g62t54t4b6"),
				}
			},
			opts: func(o *Options) { o.Prune = false },
			want: []string{"info hash-rotation ConfigMap/shop/settings-5tb7hg2c8f"},
		},
		{
			// Names that look hashed but that no generator marked are an ordinary
			// rename: whoever refers to them by name breaks.
			name: "unmarked lookalike stays a rename",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, cmOf("5tb7hg2c8f", "info")), Head: set(t, cmOf("g62t54t4b6", "info"))}
			},
			want: []string{"warning prune ConfigMap/shop/settings-5tb7hg2c8f", "warning rename ConfigMap/shop/settings-5tb7hg2c8f"},
		},
		{
			name: "a generator renamed too is a rename",
			in: func(t *testing.T) Input {
				return Input{
					Base: marked(set(t, cmOf("5tb7hg2c8f", "info")), "5tb7hg2c8f"),
					Head: marked(set(t, strings.Replace(cmOf("g62t54t4b6", "info"), "settings-", "config-", 1)), "g62t54t4b6"),
				}
			},
			want: []string{"warning prune ConfigMap/shop/settings-5tb7hg2c8f", "warning rename ConfigMap/shop/settings-5tb7hg2c8f"},
		},
	})
}

func TestDiffControllerRemoval(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {A: b}\n"
	runDiffCases(t, []diffCase{
		{
			name: "cascading delete",
			in:   func(t *testing.T) Input { return Input{Base: set(t, cm)} },
			opts: func(o *Options) {
				o.Removal = "Application `argocd/shop` is deleted by this PR, and Argo CD's resources finalizer deletes what it deployed"
			},
			want: []string{"warning prune ConfigMap/shop/settings"},
			check: func(t *testing.T, got TargetReport) {
				if m := got.Findings[0].Message; !strings.HasPrefix(m, "Application `argocd/shop` is deleted by this PR") || !strings.HasSuffix(m, "this object is deleted with it.") {
					t.Errorf("prune message does not say the cascade deletes it: %s", m)
				}
				if got.Changes[0].Action != ActionDeleted {
					t.Errorf("action %s, want deleted", got.Changes[0].Action)
				}
			},
		},
		{
			name: "non-cascading delete",
			in:   func(t *testing.T) Input { return Input{Base: set(t, cm)} },
			opts: func(o *Options) {
				o.Prune = false
				o.Removal = "Application `argocd/shop` is deleted by this PR without Argo CD's resources finalizer, which leaves what it deployed in place"
			},
			want: []string{"info orphan ConfigMap/shop/settings"},
			check: func(t *testing.T, got TargetReport) {
				if m := got.Findings[0].Message; !strings.HasSuffix(m, "this object keeps running unmanaged.") || !strings.Contains(m, "without Argo CD's resources finalizer") {
					t.Errorf("orphan message does not say the delete leaves it: %s", m)
				}
			},
		},
	})
}

// TestFinishListsEachFindingOnce: a finding repeated in one target, and one hand
// edit that two targets of one cluster read, are listed once; the same edit on
// another cluster is another edit.
func TestFinishListsEachFindingOnce(t *testing.T) {
	k := key("", "ConfigMap", "shop", "settings")
	drift := Finding{Rule: RuleLiveDrift, Severity: SeverityWarning, Key: k, Path: "/data/A", Manager: "kubectl-edit", Message: "m"}
	other := drift
	other.Message = "said by another target"
	rep := &Report{Targets: []TargetReport{
		{Name: "a", Cluster: "prod", Findings: []Finding{drift, drift}},
		{Name: "b", Cluster: "prod", Findings: []Finding{other}},
		{Name: "c", Cluster: "staging", Findings: []Finding{drift}},
	}}
	Finish(rep, DefaultPolicy())
	var got []string
	for _, tr := range rep.Targets {
		for _, f := range tr.Findings {
			got = append(got, tr.Name+" "+string(f.Rule))
		}
	}
	if strings.Join(got, ", ") != "a live-drift, c live-drift" {
		t.Errorf("findings after Finish: %v; want a's drift once and c's", got)
	}
}
