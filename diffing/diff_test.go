package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// diffCase is one Diff scenario: its findings are asserted exactly in brief form,
// and the whole TargetReport against testdata/golden/<name>.json.
type diffCase struct {
	name  string
	in    func(t *testing.T) Input
	opts  func(o *Options)
	want  []string
	check func(t *testing.T, got TargetReport)
}

func runDiffCases(t *testing.T, cases []diffCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			in := tc.in(t)
			if in.Name == "" {
				in.Name, in.Path = "shop-prod", "apps/shop/overlays/prod"
			}
			got := Diff(in, opts)
			if diff := cmp.Diff(tc.want, brief(got.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
			goldenJSON(t, tc.name, got)
		})
	}
}

// actions writes each change as "action key" for exact assertions.
func actions(cs []Change) []string {
	out := []string{}
	for _, c := range cs {
		s := string(c.Action) + " " + c.Key.String()
		if c.LiveAction != "" {
			s += " live:" + string(c.LiveAction)
		}
		if c.RevertsDrift {
			s += " reverts-drift"
		}
		out = append(out, s)
	}
	return out
}

func TestDiffChanges(t *testing.T) {
	runDiffCases(t, []diffCase{{
		name: "changes",
		in: func(t *testing.T) Input {
			return Input{
				Base: set(t, fixture(t, "changes/base.yaml")),
				Head: set(t, fixture(t, "changes/head.yaml")),
			}
		},
		opts: func(o *Options) { o.Prune = false },
		want: []string{"info orphan ConfigMap/shop/legacy-flags"},
		check: func(t *testing.T, got TargetReport) {
			want := []string{
				"deleted ConfigMap/shop/legacy-flags",
				"unchanged ConfigMap/shop/settings",
				"created Service/shop/web",
				"modified Deployment/shop/web",
			}
			if diff := cmp.Diff(want, actions(got.Changes)); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			wantSummary := Summary{Created: 1, Modified: 1, Deleted: 1, Unchanged: 1}
			if diff := cmp.Diff(wantSummary, got.Summary); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
			wantDiff := `@@ -6,7 +6,7 @@
   name: web
   namespace: shop
 spec:
-  replicas: 2
+  replicas: 3
   selector:
     matchLabels:
       app: web
@@ -16,5 +16,5 @@
         app: web
     spec:
       containers:
-      - image: nginx:1.25
+      - image: nginx:1.27
         name: web
`
			if diff := cmp.Diff(wantDiff, got.Changes[3].Diff); diff != "" {
				t.Errorf("Deployment diff (-want +got):\n%s", diff)
			}
			if got.Changes[1].Diff != "" {
				t.Errorf("unchanged object has a diff:\n%s", got.Changes[1].Diff)
			}
			if got.LiveChecked || got.LiveMode != "off" {
				t.Errorf("live off: LiveChecked %v LiveMode %q", got.LiveChecked, got.LiveMode)
			}
		},
	}})
}
