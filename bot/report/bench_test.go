package report

import (
	"fmt"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
)

// wideReport is what PR-wide of make bench (fixtures/bench) reports: targets ×
// 25 objects, the image tag changed on the 4 workloads of every target (base and
// live diffs), the rest unchanged, and an HPA field conflict and a kubectl edit
// on some targets.
func wideReport(targets int) *diffing.Report {
	r := &diffing.Report{Base: "base", Head: "pr-wide", GeneratedAt: generatedAt, Worst: diffing.SeverityWarning}
	for i := range targets {
		ns := fmt.Sprintf("k-%03d-prod", i)
		t := diffing.TargetReport{Name: ns, Path: "kustomize/apps/" + ns, LiveChecked: true, LiveMode: "simulate",
			Manager: "kustomize-controller", Worst: diffing.SeverityWarning}
		for j := range 25 {
			kind, group := "ConfigMap", ""
			if j < 4 {
				kind, group = "Deployment", "apps"
			}
			k := key(group, kind, ns, fmt.Sprintf("object-%02d", j))
			ch := diffing.Change{Key: k, Action: diffing.ActionUnchanged, LiveAction: diffing.ActionUnchanged}
			if j < 4 {
				d := " spec:\n   template:\n     spec:\n       containers:\n-      - image: registry.example/app:2026.11.1\n+      - image: registry.example/app:2026.12.1\n"
				ch.Action, ch.Diff, ch.LiveAction, ch.LiveDiff = diffing.ActionModified, d, diffing.ActionModified, d
				t.Summary.Modified++
			} else {
				t.Summary.Unchanged++
			}
			t.Changes = append(t.Changes, ch)
		}
		if i%5 == 0 {
			t.Findings = append(t.Findings, diffing.Finding{Rule: diffing.RuleFieldConflict, Severity: diffing.SeverityWarning,
				Key: key("apps", "Deployment", ns, "object-00"), Path: "/spec/replicas", Manager: "kube-controller-manager",
				Message: "`/spec/replicas` is owned by `kube-controller-manager` (an HPA). The PR sets `2` and live is `5`, so the two controllers will fight."})
		}
		r.Targets = append(r.Targets, t)
	}
	return r
}

// BenchmarkReport5000 renders the report of 200 targets of 25 objects (5,000
// objects) as the comment (first page), all pages, and JSON.
//
//	go test ./bot/report -run '^$' -bench Report5000 -benchmem
func BenchmarkReport5000(b *testing.B) {
	r := wideReport(200)
	b.Run("markdown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Markdown(r, DefaultOptions())
		}
	})
	b.Run("pages", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(Pages(r, DefaultOptions())) == 0 {
				b.Fatal("no pages")
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := JSON(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// generatedReport is what an ApplicationSet that generates n Applications
// reports: one target each, on a cluster, not compared with the live cluster
// (so the comment's live notice names every target), each with one finding.
func generatedReport(n int) *diffing.Report {
	r := &diffing.Report{Base: "base", Head: "head", GeneratedAt: generatedAt, Worst: diffing.SeverityWarning}
	for i := range n {
		name := fmt.Sprintf("app-%05d", i)
		t := diffing.TargetReport{Name: name, Path: "apps/" + name, Cluster: "prod", LiveMode: diffing.LiveOff, Worst: diffing.SeverityWarning}
		k := key("", "ConfigMap", name, "settings")
		t.Changes = []diffing.Change{{Key: k, Action: diffing.ActionCreated, Diff: "+data:\n+  a: b\n"}}
		t.Summary.Created = 1
		t.Findings = []diffing.Finding{{Rule: diffing.RuleNotRendered, Severity: diffing.SeverityWarning, Key: k, Message: "m"}}
		r.Targets = append(r.Targets, t)
	}
	return r
}

// BenchmarkLayoutTargets lays out the comment of 1,000 to 20,000 generated
// targets: the time per target (ns/target) stays flat when the layout is
// linear in targets (naming a target and the live notice once scanned every
// target per target).
//
//	go test ./bot/report -run '^$' -bench LayoutTargets
func BenchmarkLayoutTargets(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		r := generatedReport(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				Markdown(r, DefaultOptions())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/target")
		})
	}
}
