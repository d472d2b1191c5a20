package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
)

// chartBumpReport diffs the rendered objects of a chart bump (testdata/
// chart-bump: base.yaml, head.yaml, as helm template writes them) with
// diffing's real engine and options: the Deployment's image changes, and so
// does the chart's bookkeeping on it (helm.sh/chart, app.kubernetes.io/version,
// a checksum/config pod-template annotation); its Service and ConfigMap
// change only in bookkeeping (the ConfigMap's data too).
func chartBumpReport(t *testing.T, opts diffing.Options) *diffing.Report {
	t.Helper()
	side := func(name string) render.ObjectSet {
		b, err := os.ReadFile(filepath.Join("testdata", "chart-bump", name))
		if err != nil {
			t.Fatal(err)
		}
		var s render.ObjectSet
		for _, doc := range strings.Split(string(b), "\n---\n") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			u := &unstructured.Unstructured{Object: m}
			s.Objects = append(s.Objects, render.Object{Key: render.KeyOf(u), Obj: u, Source: "charts/podinfo"})
		}
		s.Sort()
		return s
	}
	tr := diffing.Diff(diffing.Input{Name: "podinfo", Path: "apps/podinfo", Base: side("base.yaml"), Head: side("head.yaml")}, opts)
	r := &diffing.Report{Base: "main", Head: "bump-podinfo", GeneratedAt: generatedAt, Targets: []diffing.TargetReport{tr}}
	diffing.Finish(r, opts.Policy)
	return r
}

// TestChartBumpGolden: a chart bump's bookkeeping is one line per object in
// the comment and the terminal text, not diff hunks; what runs (the image)
// keeps its diff; the JSON keeps every line (issue 23 item 3).
func TestChartBumpGolden(t *testing.T) {
	r := chartBumpReport(t, diffing.DefaultOptions())
	md := Markdown(r, DefaultOptions())
	txt := Text(r, TextOptions{})
	for name, out := range map[string]string{"comment": md, "text": txt} {
		for _, want := range []string{
			"podinfo:6.5.0",
			"and chart metadata changed: ",
			"Chart metadata changed: ",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		for _, noise := range []string{"podinfo-6.4.0", "podinfo-6.5.0", "checksum/config: ", "version: 6.5.0"} {
			if strings.Contains(out, noise) {
				t.Errorf("%s shows chart bookkeeping %q as a diff line", name, noise)
			}
		}
	}
	if !strings.Contains(md, "and chart metadata changed: `app.kubernetes.io/version`, `checksum/config`, `helm.sh/chart`") {
		t.Errorf("the Deployment's line does not name its bookkeeping keys")
	}
	js, err := JSON(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, kept := range []string{"podinfo-6.5.0", "checksum/config"} {
		if !strings.Contains(string(js), kept) {
			t.Errorf("the JSON lost %q: it must keep every diff line", kept)
		}
	}
	golden.Check(t, filepath.Join("testdata", "chart-bump", "comment.golden.md"), []byte(md))
	golden.Check(t, filepath.Join("testdata", "chart-bump", "text.golden.txt"), []byte(txt))
}

// TestChartMetadataOptions: a custom pattern folds its keys and only them;
// an empty list folds nothing, and the bookkeeping is diff lines again.
func TestChartMetadataOptions(t *testing.T) {
	custom := diffing.DefaultOptions()
	custom.ChartMetadata = []string{"checksum/*"}
	md := Markdown(chartBumpReport(t, custom), DefaultOptions())
	if !strings.Contains(md, "and chart metadata changed: `checksum/config`\n") {
		t.Errorf("checksum/* alone does not fold checksum/config:\n%s", md)
	}
	if !strings.Contains(md, "+    helm.sh/chart: podinfo-6.5.0") {
		t.Errorf("helm.sh/chart is folded though the pattern does not name it:\n%s", md)
	}

	off := diffing.DefaultOptions()
	off.ChartMetadata = []string{}
	md = Markdown(chartBumpReport(t, off), DefaultOptions())
	if strings.Contains(md, "hart metadata changed") {
		t.Errorf("an empty list still folds:\n%s", md)
	}
	for _, want := range []string{"+    helm.sh/chart: podinfo-6.5.0", "+        checksum/config: "} {
		if !strings.Contains(md, want) {
			t.Errorf("with folding off the diff lacks %q:\n%s", want, md)
		}
	}
}
