package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
)

// homeLabReport is a repository-wide report shaped like issue 23's home lab: n
// targets, of which notRendered are Flux HelmReleases from OCI registries listed
// as not rendered (pre-existing), drift targets carry pre-existing live drift
// with long messages, one target holds the PR's one-line change, and the rest
// are not affected by the PR.
func homeLabReport(n, notRendered, drift int) *diffing.Report {
	r := &diffing.Report{Base: "main", Head: "pr", GeneratedAt: generatedAt}
	for i := range n {
		name := fmt.Sprintf("app-%03d", i)
		t := diffing.TargetReport{Name: name, Path: "kubernetes/apps/" + name, Changes: []diffing.Change{}}
		switch {
		case i < notRendered:
			t.Controller = &diffing.Controller{Kind: "HelmRelease", Name: name, Namespace: "default", AutoSync: true}
			t.Skipped = "source outside this repo: oci://ghcr.io/example/charts/" + name
			t.Findings = []diffing.Finding{{Rule: diffing.RuleNotRendered, Severity: diffing.SeverityInfo, PreExisting: true,
				Key:     key("helm.toolkit.fluxcd.io", "HelmRelease", "default", name),
				Message: name + " is not rendered: " + t.Skipped}}
		case i < notRendered+drift:
			cm := key("", "ConfigMap", name, "settings")
			t.Findings = []diffing.Finding{{Rule: diffing.RuleLiveDrift, Severity: diffing.SeverityWarning, PreExisting: true, Key: cm,
				Message: strings.Repeat("`/data/LOG_LEVEL` was changed by hand on the cluster. ", 8)}}
			t.LiveChecked = true
			t.Changes = []diffing.Change{{Key: cm, Action: diffing.ActionUnchanged, LiveAction: diffing.ActionModified, RevertsDrift: true,
				LiveDiff: " data:\n-  LOG_LEVEL: debug\n+  LOG_LEVEL: info\n" + strings.Repeat(" # context\n", 40)}}
			t.Summary.Unchanged = 1
		case i == n-1:
			hr := key("helm.toolkit.fluxcd.io", "HelmRelease", "media", "thelounge")
			t.Changes = []diffing.Change{{Key: hr, Action: diffing.ActionModified,
				Diff: " spec:\n   values:\n     resources:\n       limits:\n-        memory: 512Mi\n+        memory: 768Mi\n"}}
			t.Summary.Modified = 1
		default:
			t.NotAffected = "none of the files it is rendered from changes"
		}
		r.Targets = append(r.Targets, t)
	}
	return r
}

// TestCommentSpendsBudgetOnTheChange: on a 200-target repository with 80
// targets not rendered, the comment leads with the PR's one change, folds the
// not-rendered targets into one line, gives the unaffected targets none, and
// cuts the pre-existing findings, not the change, to fit; Pages continues them
// on the next page (issue 23).
func TestCommentSpendsBudgetOnTheChange(t *testing.T) {
	r := homeLabReport(200, 80, 40)
	opts := DefaultOptions()
	opts.MaxChars = 12000
	opts.ReportURL = "https://ci.example/runs/7/report.html"
	md := Markdown(r, opts)
	if len(md) > opts.MaxChars {
		t.Fatalf("len %d over %d", len(md), opts.MaxChars)
	}
	order := []string{
		"### driftpreview: 200 targets (80 not rendered) · ✅ no new findings · 120 pre-existing.",
		"this comment leaves out",
		"<b>app-199</b>",
		"+        memory: 768Mi",
		"pre-existing findings</summary>",
		"_The live diffs of 40 targets this PR does not change (live drift the merge reverts) were cut to fit._",
		"- **80 Flux HelmReleases not rendered**: source outside this repo (`app-000`, `app-001`, `app-002` and 77 more).",
		"- **79 targets not affected by this PR**: not rendered, none of the files it is rendered from changes.",
		"<sub>Compared base",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(md[at:], want)
		if i < 0 {
			t.Fatalf("missing, or out of order, after byte %d: %q\n%s", at, want, md)
		}
		at += i + len(want)
	}
	if n := strings.Count(md, "not-rendered"); n != 0 {
		t.Errorf("%d not-rendered rows; want them folded into one line", n)
	}
	if strings.Contains(md, "<b>app-150</b>") {
		t.Errorf("an unaffected target has a section")
	}
	if !strings.Contains(md, "; the full report linked above has all of it._") {
		t.Errorf("the cut does not say where the rest is:\n%s", md)
	}

	pages := Pages(r, opts)
	if len(pages) < 2 {
		t.Fatalf("Pages gave %d pages; the pre-existing findings cut should continue", len(pages))
	}
	if !strings.Contains(pages[0], "+        memory: 768Mi") || !strings.Contains(pages[0], "continue in the next comment") {
		t.Errorf("page 1 lacks the change or the pointer to the next page:\n%s", pages[0])
	}
	all := strings.Join(pages, "")
	for i := 80; i < 120; i++ {
		name := fmt.Sprintf("app-%03d", i)
		if n := strings.Count(all, "| 🟠 | `live-drift` _pre-existing_ | "+name+" |"); n != 1 {
			t.Errorf("the drift finding of %s is on %d pages, want 1", name, n)
		}
	}
	for i, p := range pages {
		if len(p) > opts.MaxChars {
			t.Errorf("page %d: len %d", i+1, len(p))
		}
	}
}

func TestReasonClass(t *testing.T) {
	for in, want := range map[string]string{
		"source outside this repo: oci://ghcr.io/x/y": "source outside this repo",
		"clusters/home: OCI artifact oci://registry.invalid/charts/a:1.0.0: remote sources are not fetched (allow the registry with --allow-remote oci://host/path or the server config's remote: block)": "remote sources are not fetched (allow the registry with --allow-remote oci://host/path or the server config's remote: block)",
		`shop/kustomization.yaml:8: remote resources "https://x/y" is not fetched: remote bases are fetched only when allowed`:                                                                            `remote resources "…" is not fetched: remote bases are fetched only when allowed`,
		"generator pullRequest needs the host's API: Argo CD lists pull requests":                                                                                                                         "generator pullRequest needs the host's API: Argo CD lists pull requests",
	} {
		if got := reasonClass(in); got != want {
			t.Errorf("reasonClass(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
