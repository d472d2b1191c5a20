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
