package report

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
)

func ghOptions() Options {
	o := DefaultOptions()
	o.RerunHint = "Comment `/driftpreview rerun` to refresh against the live cluster."
	o.IgnoreRules = 2
	return o
}

func TestMarkdownGolden(t *testing.T) {
	tests := []struct {
		name   string
		report *diffing.Report
		opts   Options
	}{
		{"example", exampleReport(), ghOptions()},
		{"clean", cleanReport(), DefaultOptions()},
		{"no-live", noLiveReport(), DefaultOptions()},
		{"render-error", renderErrorReport(), ghOptions()},
		{"no-targets", &diffing.Report{Base: "main", Head: "dev", GeneratedAt: generatedAt}, DefaultOptions()},
		{"pre-existing", preExistingReport(), DefaultOptions()},
		{"nothing-compared", nothingComparedReport(), DefaultOptions()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Markdown(tt.report, tt.opts)
			if len(got) > tt.opts.MaxChars {
				t.Errorf("len = %d, over MaxChars %d", len(got), tt.opts.MaxChars)
			}
			if !strings.HasPrefix(got, tt.opts.Marker+"\n") {
				t.Errorf("comment does not start with the sticky marker:\n%s", got)
			}
			if again := Markdown(tt.report, tt.opts); again != got {
				t.Errorf("Markdown is not deterministic (-first +second):\n%s", cmp.Diff(got, again))
			}
			// Findings and changes in another order give the same comment.
			shuffled := tt.report
			if len(shuffled.Targets) > 0 {
				cp := *tt.report
				cp.Targets = slices.Clone(cp.Targets)
				cp.Targets[0].Findings = slices.Clone(cp.Targets[0].Findings)
				cp.Targets[0].Changes = slices.Clone(cp.Targets[0].Changes)
				slices.Reverse(cp.Targets[0].Findings)
				slices.Reverse(cp.Targets[0].Changes)
				shuffled = &cp
			}
			if again := Markdown(shuffled, tt.opts); again != got {
				t.Errorf("Markdown depends on input order (-first +reordered):\n%s", cmp.Diff(got, again))
			}
			if got := Pages(tt.report, tt.opts); len(got) != 1 {
				t.Errorf("Pages gave %d pages for a report that fits one", len(got))
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.md"), []byte(got))
		})
	}
}

func TestJSONGolden(t *testing.T) {
	tests := []struct {
		name   string
		report *diffing.Report
	}{
		{"example", exampleReport()},
		{"clean", cleanReport()},
		{"render-error", renderErrorReport()},
		{"pre-existing", preExistingReport()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := JSON(tt.report)
			if err != nil {
				t.Fatalf("JSON: %v", err)
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".golden.json"), got)

			// The contract: lower camelCase keys, [] not null, severities by name.
			var doc struct {
				GeneratedAt string `json:"generatedAt"`
				Targets     []struct {
					Changes  *[]map[string]any `json:"changes"`
					Findings *[]struct {
						Rule     string         `json:"rule"`
						Severity string         `json:"severity"`
						Key      map[string]any `json:"key"`
					} `json:"findings"`
				} `json:"targets"`
			}
			if err := json.Unmarshal(got, &doc); err != nil {
				t.Fatalf("output is not JSON: %v", err)
			}
			if !strings.HasSuffix(doc.GeneratedAt, "Z") {
				t.Errorf("generatedAt = %q, want UTC", doc.GeneratedAt)
			}
			for i, tr := range doc.Targets {
				if tr.Changes == nil || tr.Findings == nil {
					t.Errorf("targets[%d]: changes or findings is null, want []", i)
					continue
				}
				for _, f := range *tr.Findings {
					if _, err := diffing.ParseSeverity(f.Severity); err != nil || f.Rule == "" {
						t.Errorf("targets[%d]: finding %+v: bad rule or severity", i, f)
					}
				}
			}
		})
	}
}

func TestJSONDoesNotModifyReport(t *testing.T) {
	r := exampleReport()
	before := Markdown(r, ghOptions())
	if _, err := JSON(r); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(exampleReport(), r); diff != "" {
		t.Errorf("JSON modified its input (-want +got):\n%s", diff)
	}
	if after := Markdown(r, ghOptions()); after != before {
		t.Errorf("Markdown changed after JSON")
	}
	if _, err := JSON(nil); err == nil {
		t.Errorf("JSON(nil) gave no error")
	}
}

func TestBudget(t *testing.T) {
	r := bigReport(300)
	opts := DefaultOptions()
	got := Markdown(r, opts)
	if len(got) > opts.MaxChars {
		t.Fatalf("len = %d, over MaxChars %d", len(got), opts.MaxChars)
	}
	if len(got) < opts.MaxChars*3/4 {
		t.Errorf("len = %d: cut far more than needed for %d", len(got), opts.MaxChars)
	}
	var all int
	for _, f := range r.Targets[0].Findings {
		all++
		if !strings.Contains(got, f.Message) {
			t.Errorf("finding %q is missing", f.Message)
		}
		// The diff of an object with a finding is kept while others are cut.
		summary := "<details><summary>" + objectHTML(f.Key) + ": modified " + sevEmoji(f.Severity)
		if !strings.Contains(got, summary) {
			t.Errorf("the diff of %s, which has a finding, was cut", f.Key)
		}
	}
	if all != 5 {
		t.Fatalf("fixture has %d findings, want 5", all)
	}
	cut := regexp.MustCompile(`To fit the 65,536-character limit this comment leaves out the diffs of (\d+) objects; run ` + "`driftpreview preview`" + ` locally for all of it\.`)
	if !cut.MatchString(got) {
		t.Errorf("no note says what was cut:\n%s", got[:2000])
	}
	if !strings.Contains(got, "Diffs cut to fit: ConfigMap `platform/cm-") {
		t.Errorf("cut objects are not named")
	}
	if !strings.HasSuffix(got, "an `expires` date.</sub>\n") {
		t.Errorf("footer is missing; comment ends with %q", got[len(got)-200:])
	}
	if pages := Pages(r, opts); len(pages) != 1 || pages[0] != got {
		t.Errorf("Pages differs from Markdown for a report whose findings fit (%d pages)", len(pages))
	}
}

func TestBudgetLimits(t *testing.T) {
	for _, limit := range []int{1_000_000, 65536, 20000, 6000, 2500, 1200, 400, 60} {
		for name, r := range map[string]*diffing.Report{
			"example": exampleReport(), "big": bigReport(40), "many": manyFindingsReport(60),
		} {
			opts := DefaultOptions()
			opts.MaxChars = limit
			got := Markdown(r, opts)
			if len(got) > limit {
				t.Errorf("%s at %d: Markdown len = %d", name, limit, len(got))
			}
			for i, p := range Pages(r, opts) {
				if len(p) > limit {
					t.Errorf("%s at %d: page %d len = %d", name, limit, i+1, len(p))
				}
			}
		}
	}
}

func TestPages(t *testing.T) {
	r := manyFindingsReport(120)
	opts := DefaultOptions()
	opts.MaxChars = 4000
	pages := Pages(r, opts)
	if len(pages) < 3 {
		t.Fatalf("got %d pages, want several", len(pages))
	}
	all := strings.Join(pages, "")
	for _, f := range r.Targets[0].Findings {
		if n := strings.Count(all, f.Message); n != 1 {
			t.Errorf("finding %q appears %d times across pages, want 1", f.Message, n)
		}
	}
	for i, p := range pages {
		n := i + 1
		if len(p) > opts.MaxChars {
			t.Errorf("page %d: len = %d, over %d", n, len(p), opts.MaxChars)
		}
		var wantStart string
		if n == 1 {
			wantStart = "<!-- driftpreview:sticky v1 -->\n### driftpreview: 1 target · 🔴 120 errors. Policy blocks this merge.\n"
		} else {
			wantStart = "<!-- driftpreview:sticky v1 page " + itoa(n) + " -->\n_(continued " + itoa(n) + "/" + itoa(len(pages)) + ")_\n"
		}
		if !strings.HasPrefix(p, wantStart) {
			t.Errorf("page %d starts with %q, want %q", n, p[:min(len(p), 120)], wantStart)
		}
		if strings.Contains(p, "| prune-stateful") || strings.Contains(p, "`prune-stateful` |") {
			// Every page with rows opens the table with its header.
			if !strings.Contains(p, "| | finding | object | what happens on merge |") {
				t.Errorf("page %d has rows but no table header", n)
			}
		}
		last := n == len(pages)
		if got := strings.HasSuffix(p, "_Continued in the next comment._\n"); got == last {
			t.Errorf("page %d: continuation tail = %v, want %v", n, got, !last)
		}
	}
	if !strings.Contains(pages[len(pages)-1], "<sub>Compared base `main` ↔ head `cleanup`") {
		t.Errorf("last page has no footer")
	}
	if !strings.Contains(all, "<b>cluster-addons</b>") {
		t.Errorf("the target section is missing from the pages")
	}
	if again := Pages(r, opts); !slices.Equal(again, pages) {
		t.Errorf("Pages is not deterministic")
	}
	golden.Check(t, filepath.Join("testdata", "pages.golden.md"), []byte(strings.Join(pages, "\n<!-- ===== next comment ===== -->\n")))

	// Markdown cannot page: it keeps the worst findings and says how many it left out.
	md := Markdown(r, opts)
	if len(md) > opts.MaxChars {
		t.Errorf("Markdown len = %d, over %d", len(md), opts.MaxChars)
	}
	m := regexp.MustCompile(`\*\*(\d+) more findings not shown\*\* to fit the 4,000-character limit`).FindStringSubmatch(md)
	if m == nil {
		t.Fatalf("Markdown has no note about findings left out:\n%s", md)
	}
	shown := strings.Count(md, "| 🔴 | `prune-stateful` |")
	if shown+atoi(t, m[1]) != 120 {
		t.Errorf("shown %d + left out %s != 120", shown, m[1])
	}
	if shown == 0 {
		t.Errorf("Markdown shows no findings at all")
	}
}

func TestFence(t *testing.T) {
	tests := []struct {
		name, diff, wantFence string
	}{
		{"plain", "-a: 1\n+a: 2\n", "```"},
		{"three", " data:\n-  README: |\n-    ```sh\n+    ```bash\n", "````"},
		{"five in a value", " data:\n+  doc: '`````'\n", "``````"},
		{"four and three", " data:\n+  doc: \"````go\"\n-  x: ```\n", "`````"},
		{"no trailing newline", "-a\n+b", "```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cleanReport()
			r.Targets[0].Changes[0].Diff = tt.diff
			r.Targets[0].Changes[0].LiveDiff = ""
			r.Targets[0].Changes[0].LiveAction = ""
			got := Markdown(r, DefaultOptions())
			body := tt.diff
			if !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			want := "\n" + tt.wantFence + "diff\n" + body + tt.wantFence + "\n</details>"
			if !strings.Contains(got, want) {
				t.Errorf("diff not fenced with %s:\n%s", tt.wantFence, got)
			}
		})
	}
}

func TestCell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"a | b", `a \| b`},
		{"`x|y` is set", "`x\\|y` is set"},
		{"line one\nline two", "line one<br>line two"},
		{"windows\r\nbreak\rold mac", "windows<br>break<br>old mac"},
		{"  trailing\n", "trailing"},
	}
	for _, tt := range tests {
		if got := cell(tt.in); got != tt.want {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInlineMD(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no html", "no html"},
		{"was <none>, now 3", "was &lt;none>, now 3"},
		{"`<none>` stays in code", "`<none>` stays in code"},
		{"``a ` <b>`` then <i>", "``a ` <b>`` then &lt;i>"},
		{"unclosed ` <x>", "unclosed \\` &lt;x>"},
		{"fail \"[Approve](https://e.example/a) @acme/admins\"", "fail \"\\[Approve\\](https:\u200d//e.example/a) @\u200dacme/admins\""},
		{"`[a](b)` ![x](y)", "`[a](b)` !\\[x\\](y)"},
	}
	for _, tt := range tests {
		if got := inlineMD(tt.in); got != tt.want {
			t.Errorf("inlineMD(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTableEscaping(t *testing.T) {
	r := cleanReport()
	r.Targets[0].Findings = []diffing.Finding{{Rule: diffing.RuleFieldConflict, Severity: diffing.SeverityWarning,
		Key: deployWeb, Message: "`/spec/selector` uses `a|b`\nand | breaks rows"}}
	got := Markdown(r, DefaultOptions())
	want := "| 🟠 | `field-conflict` | Deployment `shop/web` | `/spec/selector` uses `a\\|b`<br>and \\| breaks rows |\n"
	if !strings.Contains(got, want) {
		t.Errorf("row not escaped; want %q in:\n%s", want, got)
	}
}

func TestHeadline(t *testing.T) {
	one := func(sev diffing.Severity, failing bool) []diffing.Finding {
		return []diffing.Finding{{Rule: diffing.RulePrune, Severity: sev, Key: cmLegacy, Message: "m", Failing: failing}}
	}
	tests := []struct {
		name    string
		targets int
		finds   []diffing.Finding
		failing bool
		changed bool
		want    string
	}{
		{"blocked singular", 1, one(diffing.SeverityError, true), true, true, "### driftpreview: 1 target · 🔴 1 error. Policy blocks this merge.\n"},
		{"warning", 3, one(diffing.SeverityWarning, false), false, true, "### driftpreview: 3 targets · 🟠 1 warning. Safe to merge by policy.\n"},
		{"note", 2, one(diffing.SeverityInfo, false), false, true, "### driftpreview: 2 targets · ⚪ 1 note. Safe to merge by policy.\n"},
		{"clean", 1, nil, false, true, "### driftpreview: 1 target · ✅ no findings. Safe to merge by policy.\n"},
		{"nothing", 2, nil, false, false, "### driftpreview: 2 targets · ✅ no findings. No changes.\n"},
		{"none", 0, nil, false, false, "### driftpreview: no targets · ✅ no findings. No changes.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &diffing.Report{Failing: tt.failing}
			for i := range tt.targets {
				tr := diffing.TargetReport{Name: "t" + itoa(i), LiveChecked: true}
				if i == 0 {
					tr.Findings = tt.finds
					if tt.changed {
						tr.Changes = []diffing.Change{{Key: cmLegacy, Action: diffing.ActionDeleted, Diff: "-x\n"}}
					}
				}
				r.Targets = append(r.Targets, tr)
			}
			got := newLayout(r, DefaultOptions()).headline()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("headline (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTitle(t *testing.T) {
	configOnly := &diffing.Report{Findings: []diffing.Finding{{Rule: diffing.RuleConfigError, Severity: diffing.SeverityError,
		PreExisting: true, Message: ".driftpreview.yaml:3: unknown key \"targetz\""}}}
	many := manyFindingsReport(3)
	many.Targets[0].Findings[1].Rule = diffing.RuleDataLoss
	many.Targets[0].Findings[2].Rule = diffing.RulePruneCascade
	many.Targets[0].Findings = append(many.Targets[0].Findings,
		diffing.Finding{Rule: diffing.RuleImmutableField, Severity: diffing.SeverityError, Failing: true},
		diffing.Finding{Rule: diffing.RuleConfigError, Severity: diffing.SeverityError, Failing: true},
		diffing.Finding{Rule: diffing.RuleRenderError, Severity: diffing.SeverityError, Failing: true})
	warnOnly := noLiveReport()
	tests := []struct {
		name string
		r    *diffing.Report
		want string
	}{
		{"example", exampleReport(), "3 errors, 3 warnings: data-loss, immutable-field, prune-stateful"},
		{"failing warning first", renderErrorReport(), "2 errors, 2 warnings: config-error, render-error, field-conflict (1 target not rendered)"},
		{"pre-existing", preExistingReport(), "1 note: secret-change (2 pre-existing, 1 target not rendered)"},
		{"nothing compared", nothingComparedReport(), "Nothing compared: 2 targets not rendered (2 pre-existing)"},
		{"config error only", configOnly, "Nothing compared: .driftpreview.yaml is invalid (1 pre-existing)"},
		{"not failing", warnOnly, "1 warning: rename"},
		{"clean", cleanReport(), "No findings"},
		{"nothing", &diffing.Report{}, "No changes"},
		{"nil", nil, "No changes"},
		{"many rules", many, "6 errors: config-error, data-loss, immutable-field, prune-cascade, +2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Title(tt.r)); diff != "" {
				t.Errorf("Title (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := Markdown(cleanReport(), Options{})
	if want := Markdown(cleanReport(), DefaultOptions()); got != want {
		t.Errorf("zero Options differ from DefaultOptions (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := Markdown(nil, Options{}); !strings.Contains(got, "No changes.") {
		t.Errorf("Markdown(nil) = %q", got)
	}
}

func TestHelpers(t *testing.T) {
	tests := []struct{ got, want string }{
		{thousands(65536), "65,536"},
		{thousands(1000000), "1,000,000"},
		{thousands(999), "999"},
		{shortRev("a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", 7), "a1b2c3d"},
		{shortRev("main", 7), "main"},
		{shortRev("feature/very-long-branch-name", 7), "feature/very-long-branch-name"},
		{codeSpan("a`b"), "``a`b``"},
		{codeSpan("`x"), "`` `x ``"},
		{pageMarker(DefaultMarker, 3), "<!-- driftpreview:sticky v1 page 3 -->"},
		{pageMarker("[sticky]", 2), "[sticky] page 2"},
		{truncateBytes("héllo", 2), "h"},
		{hardLimit(strings.Repeat("x", 100), 50), strings.Repeat("x", 50-len(cutMark)) + cutMark},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d: got %q, want %q", i, tt.got, tt.want)
		}
	}
}

func TestLiveNotice(t *testing.T) {
	checked := diffing.TargetReport{Name: "a", Cluster: "prod", LiveChecked: true, LiveMode: "simulate"}
	noCluster := diffing.TargetReport{Name: "b"}
	off := diffing.TargetReport{Name: "c", Cluster: "prod", LiveMode: "off"}
	unavailable := diffing.TargetReport{Name: "d", Cluster: "prod", LiveMode: "simulate",
		Findings: []diffing.Finding{{Rule: diffing.RuleLiveUnavailable, Severity: diffing.SeverityError,
			Message: "cluster `prod` could not be read: connection refused"}}}
	broken := diffing.TargetReport{Name: "e", Cluster: "prod", Error: "x.yaml:1: bad"}
	tail := " only what the PR changes in git, not what the merge does to the cluster.\n"
	tests := []struct {
		name    string
		targets []diffing.TargetReport
		want    string
	}{
		{"all checked", []diffing.TargetReport{checked}, ""},
		{"render error only", []diffing.TargetReport{checked, broken}, ""},
		{"one target", []diffing.TargetReport{noCluster}, "\n> **No live comparison:** no cluster configured. This comment shows" + tail},
		{"all off", []diffing.TargetReport{off, off}, "\n> **No live comparison:** live mode is off for all targets. This comment shows" + tail},
		{"mixed", []diffing.TargetReport{checked, noCluster, unavailable},
			"\n> **No live comparison:** no cluster configured for `b`; cluster `prod` could not be read (see `live-unavailable`) for `d`. For those targets it shows" + tail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newLayout(&diffing.Report{Targets: tt.targets}, DefaultOptions()).liveNotice()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("liveNotice (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPagesHugeFinding(t *testing.T) {
	r := manyFindingsReport(30)
	huge := strings.Repeat("This message goes on and on | with pipes and `code`. ", 200)
	r.Targets[0].Findings[3].Message = huge
	opts := DefaultOptions()
	opts.MaxChars = 4000
	pages := Pages(r, opts)
	all := strings.Join(pages, "")
	for i, p := range pages {
		if len(p) > opts.MaxChars {
			t.Errorf("page %d: len = %d, over %d", i+1, len(p), opts.MaxChars)
		}
	}
	if !strings.Contains(all, "| 🔴 | `prune-stateful` | PersistentVolumeClaim `data/vol-003` | This message goes on and on \\| with pipes") ||
		!strings.Contains(all, "… (cut) |\n") {
		t.Errorf("the oversized finding is not shown cut:\n%s", all)
	}
	for i, f := range r.Targets[0].Findings {
		if i != 3 && !strings.Contains(all, f.Message) {
			t.Errorf("finding %q is missing", f.Message)
		}
	}
}

func BenchmarkMarkdown(b *testing.B) {
	for _, bc := range []struct {
		name string
		r    *diffing.Report
	}{{"example", exampleReport()}, {"300-objects", bigReport(300)}, {"2000-objects", bigReport(2000)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				Markdown(bc.r, DefaultOptions())
			}
		})
	}
}

func BenchmarkPages(b *testing.B) {
	r := manyFindingsReport(1000)
	opts := DefaultOptions()
	opts.MaxChars = 4000
	for b.Loop() {
		Pages(r, opts)
	}
}

// TestSameNameOnTwoClusters: Flux's clusters/staging and clusters/production both
// apply a Kustomization apps; the table and the lists say which one they mean.
func TestSameNameOnTwoClusters(t *testing.T) {
	nr := func(cluster string) diffing.TargetReport {
		return diffing.TargetReport{Name: "tenant", Cluster: cluster, Skipped: "not affected by this PR",
			Findings: []diffing.Finding{{Rule: diffing.RuleNotRendered, Severity: diffing.SeverityInfo, Message: "tenant is not rendered"}}}
	}
	r := &diffing.Report{Targets: []diffing.TargetReport{
		{Name: "apps", Cluster: "production", LiveMode: "off"},
		{Name: "apps", Cluster: "staging", LiveMode: "off"},
		{Name: "infra", Cluster: "staging", LiveMode: "off"},
		nr("production"), nr("staging"),
	}}
	diffing.Finish(r, diffing.DefaultPolicy())
	md := Markdown(r, DefaultOptions())
	for _, want := range []string{
		"live mode is off for `apps@production`, `apps@staging`, `infra`.",
		"| tenant@production | target `tenant@production` |",
		"| tenant@staging | target `tenant@staging` |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the comment lacks %q:\n%s", want, md)
		}
	}
}
