package preview

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/bot/report"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/golden"
	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

// Pipeline tests of zero-config previews on real GitOps repositories (issue 5):
// targets discovered from Argo CD Applications and Flux Kustomizations, the live
// controller objects read from the test cluster (inventory, sync policy), and what
// the report says about them.

// The origins the fixture repositories in fixtures/repos name themselves by (see
// their README.md).
const (
	argoFixtureURL = "https://github.com/example/gitops-argocd"
	fluxFixtureURL = "ssh://git@github.com/example/gitops-flux"
)

// copyTree copies src into a new temp dir and applies edits (file → old → new); an
// edit whose old text is missing fails the test, so a fixture change cannot turn a
// test into a no-op.
func copyTree(t *testing.T, src string, edits map[string][2]string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	for file, e := range edits {
		p := filepath.Join(dst, filepath.FromSlash(file))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("editing %s: %v", file, err)
		}
		if !strings.Contains(string(b), e[0]) {
			t.Fatalf("editing %s: %q is not in the file", file, e[0])
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// targetView is what must agree between a discovered target and the same target
// written out in a config file.
type targetView struct {
	Name, Path, Cluster, Manager, LiveMode string
	Changes                                []string // key action
	Findings                               []string // rule key path
}

func viewTargets(rep *diffing.Report, skip func(diffing.TargetReport) bool) []targetView {
	var out []targetView
	for _, tr := range rep.Targets {
		if skip != nil && skip(tr) {
			continue
		}
		v := targetView{Name: tr.Name, Path: tr.Path, Cluster: tr.Cluster, Manager: tr.Manager, LiveMode: string(tr.LiveMode)}
		for _, c := range tr.Changes {
			v.Changes = append(v.Changes, c.Key.String()+" "+string(c.Action))
		}
		for _, f := range tr.Findings {
			v.Findings = append(v.Findings, findingLine(f))
		}
		out = append(out, v)
	}
	return out
}

func findingLine(f diffing.Finding) string {
	parts := []string{string(f.Rule)}
	if f.Key != (render.ObjectKey{}) {
		parts = append(parts, f.Key.String())
	}
	if f.Path != "" {
		parts = append(parts, f.Path)
	}
	return strings.Join(parts, " ")
}

// notRendered says whether a discovered target was only listed: its source cannot
// be rendered from the repository, so a config file has no equivalent of it.
func notRendered(tr diffing.TargetReport) bool {
	return slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool { return f.Rule == diffing.RuleNotRendered })
}

// TestDiscoveryMatchesEquivalentConfig runs the whole pipeline on each fixture GitOps
// repository twice, once with no config (targets discovered from the Applications or
// Kustomizations) and once with the fixture's equivalent.driftpreview.yaml, and
// requires the same report for every rendered target.
func TestDiscoveryMatchesEquivalentConfig(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		url     string
		// edit is the pull request: a realistic one-line change in one app.
		edit map[string][2]string
		// changed is the change the edit must show in the report.
		changed string
		// listed are the targets only discovery knows: not rendered, with a reason.
		listed []string
		// discoveryOnly are findings only discovery can make (a suspended
		// Kustomization); a config file cannot express them.
		discoveryOnly []string
	}{
		{
			fixture: "argocd", url: argoFixtureURL,
			edit:    map[string][2]string{"shop/base/deployment.yaml": {"image: nginx:1.27", "image: nginx:1.27.4"}},
			changed: "shop Deployment/shop/prod-shop-web modified",
			listed:  []string{"external-dns", "fleet", "monitoring"},
		},
		{
			fixture: "flux", url: fluxFixtureURL,
			edit:          map[string][2]string{"charts/podinfo/templates/deployment.yaml": {"podinfo:6.7.0", "podinfo:6.7.1"}},
			changed:       "podinfo Deployment/podinfo/podinfo modified",
			listed:        []string{"addons", "cert-manager"},
			discoveryOnly: []string{"sync-disabled Kustomization/flux-system/legacy"},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			src := filepath.Join("..", "..", "fixtures", "repos", tc.fixture)
			repo := gitRepo(t, src, copyTree(t, src, tc.edit))
			// The server config knows the prod cluster (by the API URL the shop
			// Application names); live comparison stays off.
			prod := Cluster{Name: "prod", Config: &rest.Config{Host: "https://prod.example.com"}, LiveMode: "off"}
			// Every target is compared (AllTargets): discovery then searches
			// every render, as a config lists every target; a pull request's
			// preview leaves the renders it cannot change unsearched
			// (TestOwnership).
			req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{tc.url},
				Clusters: map[string]Cluster{"prod": prod}, AllTargets: true}

			discovered, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("preview without config: %v", err)
			}
			req.ConfigFile = filepath.Join(src, "equivalent.driftpreview.yaml")
			configured, err := Run(t.Context(), req)
			if err != nil {
				t.Fatalf("preview with %s: %v", req.ConfigFile, err)
			}

			var listed []string
			for _, tr := range discovered.Targets {
				if notRendered(tr) {
					listed = append(listed, tr.Name)
				}
			}
			if diff := cmp.Diff(tc.listed, listed); diff != "" {
				t.Errorf("not-rendered targets (-want +got):\n%s", diff)
			}
			got := viewTargets(discovered, notRendered)
			for i := range got {
				got[i].Findings = slices.DeleteFunc(got[i].Findings, func(f string) bool {
					return slices.Contains(tc.discoveryOnly, f)
				})
			}
			want := viewTargets(configured, nil)
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("report targets differ (-config +discovered):\n%s", diff)
			}
			if !slices.ContainsFunc(got, func(v targetView) bool {
				return slices.ContainsFunc(v.Changes, func(c string) bool { return v.Name+" "+c == tc.changed })
			}) {
				t.Errorf("the pull request's change %q is missing; got %s", tc.changed, fmt.Sprint(got))
			}
			for _, f := range tc.discoveryOnly {
				if !slices.ContainsFunc(discovered.Targets, func(tr diffing.TargetReport) bool {
					return slices.ContainsFunc(tr.Findings, func(g diffing.Finding) bool { return findingLine(g) == f })
				}) {
					t.Errorf("discovery lost the finding %q", f)
				}
			}
		})
	}
}

// gitopsStep is one line of a GitOps scenario's live/steps.yaml.
type gitopsStep struct {
	// Apply server-side applies every object of a file of the scenario as Manager,
	// then writes the status an object carries through the status subresource, the
	// way the controller would (a Flux inventory).
	Apply string `json:"apply"`
	// Render renders a path of base/ with Namespace as the destination namespace and
	// applies the objects as Manager.
	Render    string `json:"render"`
	Namespace string `json:"namespace"`
	Manager   string `json:"manager"`
	Scale     *ref   `json:"scale"`
	Replicas  int32  `json:"replicas"`
	// Labels and Annotations are the tracking marks the controller writes on each
	// rendered object before it applies it, as upstream documents them; {group},
	// {kind}, {namespace} (the step's Namespace for objects without one) and
	// {name} are replaced per object.
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// ClientSide applies the rendered objects the way kubectl apply without
	// --server-side does (Argo CD's default sync): last-applied annotation,
	// managedFields operation Update.
	ClientSide bool `json:"clientSide"`
	// ReleaseName renders the path as a Helm chart with this release name.
	ReleaseName string `json:"releaseName"`
	// Edit reads the live object, sets each JSON pointer of Set and writes it back
	// with a plain update as Manager (kubectl edit).
	Edit *ref           `json:"edit"`
	Set  map[string]any `json:"set"`
}

// gitopsRepoURL is the URL the scenarios' Applications name this repository by.
const gitopsRepoURL = "https://github.com/example/gitops-scenarios"

// gitopsCase is one folder of fixtures/gitops-scenarios: a repository with Argo CD
// or Flux objects at base and head, and how the live cluster got its state.
type gitopsCase struct {
	name string
	// must are findings that have to be present ("rule key path manager", may stop
	// early); mustNot are texts no finding line may contain.
	must, mustNot []string
	failing       bool
	// check asserts more about the report and its JSON.
	check func(t *testing.T, rep *diffing.Report, js []byte)
	// variants run the scenario again with edits to its files; no golden.
	variants []gitopsVariant
}

type gitopsVariant struct {
	name          string
	edits         map[string][2]string
	must, mustNot []string
	failing       bool
}

var gitopsCases = []gitopsCase{
	{
		name:    "02-flux-inventory-prune",
		must:    []string{"prune ConfigMap/g02/old-settings"},
		mustNot: []string{"orphan"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantController(t, js, "g02-shop", map[string]any{
				"kind": "Kustomization", "name": "g02-shop", "namespace": "flux-system", "source": "clusters/test/g02-shop.yaml",
				"autoSync": true, "prune": true, "selfHeal": true,
			})
			wantChange(t, rep, "g02-shop", "ConfigMap/g02/old-settings", diffing.ActionDeleted, diffing.ActionDeleted)
		},
		variants: []gitopsVariant{{
			name: "without-inventory-entry",
			edits: map[string][2]string{"live/kustomization.yaml": {
				"      - id: g02_old-settings__ConfigMap\n        v: v1\n", ""}},
			mustNot: []string{"ConfigMap/g02/old-settings"},
		}},
	},
	{
		name: "03-prune-off-orphan",
		must: []string{"orphan ConfigMap/g03/old-config", "orphan ConfigMap/g03f/legacy-config"},
		// Nothing is pruned: both controllers have prune off.
		mustNot: []string{"prune "},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g03-argo", "ConfigMap/g03/old-config", diffing.ActionDeleted, diffing.ActionUnchanged)
			wantChange(t, rep, "g03-flux", "ConfigMap/g03f/legacy-config", diffing.ActionDeleted, diffing.ActionUnchanged)
		},
		variants: []gitopsVariant{{
			// The same PR with prune on in git and on the cluster deletes both.
			name: "with-prune",
			edits: map[string][2]string{
				"base/argocd/g03-argo.yaml":        {"    automated:\n", "    automated:\n      prune: true\n"},
				"head/argocd/g03-argo.yaml":        {"    automated:\n", "    automated:\n      prune: true\n"},
				"base/clusters/test/g03-flux.yaml": {"prune: false", "prune: true"},
				"head/clusters/test/g03-flux.yaml": {"prune: false", "prune: true"},
			},
			must:    []string{"prune ConfigMap/g03/old-config", "prune ConfigMap/g03f/legacy-config"},
			mustNot: []string{"orphan", "sync-disabled"},
		}},
	},
	{
		name:    "04-argo-ignore-differences",
		mustNot: []string{"/spec/replicas"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g04-web")
			if tr.Summary.IgnoredFindings < 1 {
				t.Errorf("g04-web: summary.ignoredFindings = %d, want the replicas conflict counted as ignored", tr.Summary.IgnoredFindings)
			}
			wantChange(t, rep, "g04-web", "Deployment/g04/web", diffing.ActionModified, diffing.ActionModified)
			// The jqPathExpressions entry hides the web container's resources
			// (del(expr) on both sides, as Argo CD does).
			for _, c := range tr.Changes {
				if strings.Contains(c.Diff+c.LiveDiff, "100m") {
					t.Errorf("g04-web: the jq-ignored resources are in the diffs:\n%s\n%s", c.Diff, c.LiveDiff)
				}
			}
		},
		variants: []gitopsVariant{{
			name: "without-ignore-differences",
			edits: map[string][2]string{
				"base/argocd/g04-web.yaml": {ignoreReplicas, ""},
				"head/argocd/g04-web.yaml": {ignoreReplicas, ""},
			},
			must: []string{"field-conflict Deployment/g04/web /spec/replicas kube-controller-manager"},
		}, {
			// Without RespectIgnoreDifferences=true ignoreDifferences hide the
			// field from Argo CD's diff only: the sync the image change starts
			// applies replicas as git has it (argo-cd controller/sync.go).
			name: "without-respect-ignore-differences",
			edits: map[string][2]string{
				"head/argocd/g04-web.yaml": {"      - RespectIgnoreDifferences=true\n", "      - PruneLast=true\n"},
			},
			must: []string{"field-conflict Deployment/g04/web /spec/replicas kube-controller-manager"},
		}},
	},
	{
		name: "05-sync-disabled",
		must: []string{
			"sync-disabled Kustomization/flux-system/g05-flux",
			"sync-disabled Application/argocd/g05-argo",
			"controller-missing Application/argocd/g05-missing",
		},
	},
	{
		name:    "06-argo-replace",
		must:    []string{"immutable-field Deployment/g06/web /spec/selector"},
		mustNot: []string{"apply-error"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			for _, f := range targetNamed(t, rep, "g06-web").Findings {
				if f.Rule == diffing.RuleImmutableField && (f.Severity != diffing.SeverityWarning || !strings.Contains(f.Message, "so it is replaced: `argocd.argoproj.io/sync-options: Force=true` makes")) {
					t.Errorf("with Replace=true and Force=true the selector change is a replace warning naming Force=true; got %s: %s", f.Severity, f.Message)
				}
			}
			wantController(t, js, "g06-web", map[string]any{
				"kind": "Application", "name": "g06-web", "namespace": "argocd", "source": "argocd/g06-web.yaml",
				"autoSync": true, "prune": true, "selfHeal": false, "replace": true,
			})
		},
		variants: []gitopsVariant{{
			// Replace=true alone is kubectl replace, a PUT the API refuses
			// for an immutable field (TestArgoReplaceDryRun): the sync fails.
			name: "replace-without-force",
			edits: map[string][2]string{
				"base/apps/g06-web/deployment.yaml": {"    argocd.argoproj.io/sync-options: Force=true\n", ""},
				"head/apps/g06-web/deployment.yaml": {"    argocd.argoproj.io/sync-options: Force=true\n", ""},
			},
			must:    []string{"immutable-field Deployment/g06/web /spec/selector"},
			failing: true,
		}, {
			// Force=true with a client-side apply is kubectl apply --force,
			// which deletes and recreates what the API refuses to patch.
			name: "force-without-replace",
			edits: map[string][2]string{
				"base/argocd/g06-web.yaml": {"    syncOptions:\n      - Replace=true\n", ""},
				"head/argocd/g06-web.yaml": {"    syncOptions:\n      - Replace=true\n", ""},
			},
			must: []string{"immutable-field Deployment/g06/web /spec/selector"},
		}, {
			// A server-side apply never recreates, Force=true or not; the
			// head's sync options decide.
			name: "force-with-server-side-apply",
			edits: map[string][2]string{
				"head/argocd/g06-web.yaml": {"      - Replace=true\n", "      - ServerSideApply=true\n"},
			},
			must:    []string{"immutable-field Deployment/g06/web /spec/selector"},
			failing: true,
		}},
	},
	{
		name: "07-appset-unsupported-generator",
		must: []string{"not-rendered ApplicationSet/argocd/g07-previews"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			md := report.Markdown(rep, report.DefaultOptions())
			for _, want := range []string{"g07-previews", "generator pullRequest needs the host's API"} {
				if !strings.Contains(md, want) {
					t.Errorf("the comment does not mention %q", want)
				}
			}
			// The list generator's Application is rendered next to it.
			wantChange(t, rep, "g07-web", "ConfigMap/g07/web-config", diffing.ActionModified, diffing.ActionModified)
		},
	},
	// Issue 24: Argo CD's prune options (gitops-engine sync_context.go
	// pruneObject, isPruningDisabled, objRequiresPruneConfirmation): Prune=false
	// keeps, Prune=confirm waits, helm.sh/resource-policy: keep does not stop a
	// prune, IgnoreExtraneous does not when other changes start the sync, and
	// PrunePropagationPolicy=orphan leaves what a pruned Deployment owns.
	{
		name: "08-argo-prune-options",
		must: []string{
			"orphan ConfigMap/g08/protected",
			"prune ConfigMap/g08/confirmed",
			"prune ConfigMap/g08/generated",
			"prune ConfigMap/g08/helm-kept",
			"prune Deployment/g08/worker",
		},
		mustNot: []string{"orphan ConfigMap/g08/helm-kept", "prune ConfigMap/g08/protected"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantMessage(t, rep, "g08-web", "ConfigMap/g08/protected", "`argocd.argoproj.io/sync-options: Prune=false` protects it from prune")
			wantMessage(t, rep, "g08-web", "ConfigMap/g08/confirmed", "once someone confirms it: with `argocd.argoproj.io/sync-options: Prune=confirm`")
			wantMessage(t, rep, "g08-web", "Deployment/g08/worker", "the Application's sync option `PrunePropagationPolicy=orphan`")
			for _, f := range targetNamed(t, rep, "g08-web").Findings {
				if f.Key.Name == "generated" && strings.Contains(f.Message, "not at once") {
					t.Errorf("the other removals start the sync, which prunes generated at once: %s", f.Message)
				}
			}
			wantChange(t, rep, "g08-web", "ConfigMap/g08/protected", diffing.ActionDeleted, diffing.ActionUnchanged)
			wantChange(t, rep, "g08-web", "ConfigMap/g08/helm-kept", diffing.ActionDeleted, diffing.ActionDeleted)
		},
		variants: []gitopsVariant{{
			// The Application's Prune=false is the default the objects'
			// annotations override (Prune=confirm on confirmed).
			name: "application-prune-false",
			edits: map[string][2]string{
				"head/argocd/g08-web.yaml": {"      - PrunePropagationPolicy=orphan\n", "      - Prune=false\n"},
			},
			must:    []string{"orphan ConfigMap/g08/helm-kept", "orphan Deployment/g08/worker", "prune ConfigMap/g08/confirmed"},
			mustNot: []string{"prune ConfigMap/g08/helm-kept", "prune Deployment"},
		}},
	},
	// Issue 24: a removal of an IgnoreExtraneous object alone leaves the
	// Application Synced (controller/state.go), so no automated sync starts.
	{
		name: "09-argo-ignore-extraneous",
		must: []string{"prune ConfigMap/g09/generated"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantMessage(t, rep, "g09-web", "ConfigMap/g09/generated", "but not at once: `argocd.argoproj.io/compare-options: IgnoreExtraneous` keeps the Application Synced")
		},
	},
	// Issue 24: an Application without automated sync: the report says what a
	// sync does, and a plain manual sync does not prune.
	{
		name: "10-argo-manual-sync",
		must: []string{"orphan ConfigMap/g10/old-flags"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantMessage(t, rep, "g10-web", "ConfigMap/g10/old-flags", "a sync without the prune option leaves it running unmanaged (a sync with prune deletes it)")
			wantChange(t, rep, "g10-web", "ConfigMap/g10/web-config", diffing.ActionModified, diffing.ActionModified)
			wantNote(t, targetNamed(t, rep, "g10-web").Notes, "no automated sync policy: this target reaches the cluster only when someone syncs the Application")
		},
	},
	// Issue 24: what a cascade deletion of an Application keeps
	// (controller/appcontroller.go shouldBeDeleted): Delete=false, Helm's keep
	// and CRDs stay; Prune=false does not count; Delete=confirm waits.
	{
		name: "11-argo-delete-options",
		must: []string{
			"prune-cascade Application/argocd/g11-gone",
			"prune Application/argocd/g11-gone",
			"prune ConfigMap/g11/settings",
			"prune ConfigMap/g11/no-prune",
			"orphan ConfigMap/g11/retained",
			"orphan ConfigMap/g11/chart-kept",
			"orphan CustomResourceDefinition/gadgets.g11.example.com",
		},
		mustNot: []string{"prune-stateful", "controller-missing", "web-config"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantMessage(t, rep, "g11-gone", "ConfigMap/g11/settings", "once someone confirms it: with the Application's sync option `Delete=confirm`")
			wantMessage(t, rep, "g11-gone", "ConfigMap/g11/retained", "but `argocd.argoproj.io/sync-options: Delete=false` keeps this object")
			wantMessage(t, rep, "g11-gone", "CustomResourceDefinition/gadgets.g11.example.com", "Argo CD (it never deletes a CRD with an Application) keeps this object")
			wantChange(t, rep, "g11-gone", "ConfigMap/g11/retained", diffing.ActionDeleted, diffing.ActionUnchanged)
			wantChange(t, rep, "g11-gone", "ConfigMap/g11/no-prune", diffing.ActionDeleted, diffing.ActionDeleted)
		},
	},
	// Issue 24, item 4: an object two Applications deploy, and one whose live
	// tracking id names an Application of another repository. g12-a fails its
	// sync (FailOnSharedResource=true, controller/sync.go).
	{
		name: "12-argo-shared-resource",
		must: []string{
			"shared-resource ConfigMap/g12/shared-settings",
			"shared-resource ConfigMap/g12/team-quota",
		},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			a := findingOf(t, rep, "g12-a", diffing.RuleSharedResource, "ConfigMap/g12/shared-settings")
			if a.Severity != diffing.SeverityError || !strings.Contains(a.Message, "Argo CD Application `argocd/g12-b` (target g12-b)") || !strings.Contains(a.Message, "FailOnSharedResource=true") {
				t.Errorf("g12-a: want an error naming g12-b and FailOnSharedResource; got %s: %s", a.Severity, a.Message)
			}
			b := findingOf(t, rep, "g12-b", diffing.RuleSharedResource, "ConfigMap/g12/shared-settings")
			if b.Severity != diffing.SeverityWarning || !strings.Contains(b.Message, "Argo CD Application `argocd/g12-a` (target g12-a)") {
				t.Errorf("g12-b: want a warning naming g12-a; got %s: %s", b.Severity, b.Message)
			}
			q := findingOf(t, rep, "g12-b", diffing.RuleSharedResource, "ConfigMap/g12/team-quota")
			if !strings.Contains(q.Message, "tracked by Argo CD Application `argocd/g12-platform`") {
				t.Errorf("team-quota must name its live owner: %s", q.Message)
			}
		},
		variants: []gitopsVariant{{
			// The object moves from g12-a to g12-b: not shared.
			name: "moved",
			edits: map[string][2]string{
				"head/apps/g12-a/shared-settings.yaml": {"name: shared-settings", "name: a-settings"},
			},
			must:    []string{"shared-resource ConfigMap/g12/team-quota"},
			mustNot: []string{"shared-resource ConfigMap/g12/shared-settings"},
		}},
	},
	// Issue 24, item 4: the same with two Flux Kustomizations (their owner
	// labels, fluxcd/pkg ssa SetOwnerLabels).
	{
		name: "13-flux-shared-resource",
		must: []string{
			"shared-resource LimitRange/g13/defaults",
			"shared-resource ResourceQuota/g13/quota",
		},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			a := findingOf(t, rep, "g13-a", diffing.RuleSharedResource, "LimitRange/g13/defaults")
			if !strings.Contains(a.Message, "Flux Kustomization `flux-system/g13-b` (target g13-b)") {
				t.Errorf("g13-a must name g13-b: %s", a.Message)
			}
			q := findingOf(t, rep, "g13-b", diffing.RuleSharedResource, "ResourceQuota/g13/quota")
			if !strings.Contains(q.Message, "tracked by Flux Kustomization `flux-system/infra`") {
				t.Errorf("quota must name its live owner: %s", q.Message)
			}
		},
	},
	// Issue 24: argocd-cm's system-wide ignoreDifferences (a group_kind key and
	// .all), respected by the sync (RespectIgnoreDifferences=true): the HPA's
	// replicas and flag-operator's flag stay. Argo CD runs in g14-argocd, whose
	// argocd-cm no other scenario reads.
	{
		name:    "14-argo-argocd-cm-ignore",
		mustNot: []string{"/spec/replicas", "CHECKOUT_V2"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			if tr := targetNamed(t, rep, "g14-web"); tr.Summary.IgnoredFindings < 2 {
				t.Errorf("g14-web: summary.ignoredFindings = %d, want the replicas and flag conflicts counted as ignored", tr.Summary.IgnoredFindings)
			}
		},
		variants: []gitopsVariant{{
			name: "without-respect-ignore-differences",
			edits: map[string][2]string{
				"head/argocd/g14-web.yaml": {"      - RespectIgnoreDifferences=true\n", "      - PruneLast=true\n"},
			},
			must: []string{
				"field-conflict Deployment/g14/web /spec/replicas kube-controller-manager",
				"field-conflict ConfigMap/g14/flags /data/CHECKOUT_V2 flag-operator",
			},
		}},
	},
	// Issue 24: the head Application's ServerSideApply decides the apply mode,
	// not the live managedFields. Switched off, Argo CD applies client-side:
	// without a last-applied annotation kubectl's three-way merge keeps the key
	// git dropped (dry-run mode sends that PATCH to the apiserver).
	{
		name:    "15-argo-ssa-switch",
		mustNot: []string{"field-conflict", "live-drift"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantLiveDiff(t, rep, "g15-web", "ConfigMap/g15/web-config", []string{"+  LOG_LEVEL: debug", "   LEGACY_MODE: \"on\""}, []string{"-  LEGACY_MODE"})
		},
		variants: []gitopsVariant{{
			name:  "stays-server-side",
			edits: map[string][2]string{"head/argocd/g15-web.yaml": {"      - CreateNamespace=false\n", "      - ServerSideApply=true\n"}},
		}},
	},
	// Issue 9, defect 10: an app of apps drops a child Application that carries
	// Argo CD's resources finalizer; its directory stays in the repository.
	// Deleting the Application deletes what it deployed (prune-cascade on the
	// root, prune of each live object in the child's target), never "unchanged".
	{
		name: "20-argo-app-deleted-cascade",
		must: []string{
			"prune-cascade Application/argocd/g20-gone",
			"prune Application/argocd/g20-gone",
			"prune ConfigMap/g20/gone-config",
			"prune Deployment/g20/gone",
		},
		mustNot: []string{"field-conflict", "controller-missing", "web-config"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g20-root", "Application/argocd/g20-gone", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g20-gone", "ConfigMap/g20/gone-config", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g20-gone", "Deployment/g20/gone", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g20-web", "ConfigMap/g20/web-config", diffing.ActionUnchanged, diffing.ActionUnchanged)
			for _, f := range targetNamed(t, rep, "g20-gone").Findings {
				if !strings.Contains(f.Message, "Application `argocd/g20-gone` is deleted by this PR, and Argo CD's resources finalizer deletes what it deployed") {
					t.Errorf("g20-gone: %s does not say the cascade deletes it: %s", f.Rule, f.Message)
				}
			}
			wantDeleted(t, js, "g20-gone")
		},
	},
	// Issue 9, defect 10: an app of apps renames a child Application (same
	// source, same destination) that has no resources finalizer: deleting the old
	// one leaves its objects in place and the new one, created by the same merge,
	// adopts them. Neither a delete of everything nor controller-missing; the
	// hand edit that both names' targets see is listed once.
	{
		name: "21-argo-app-renamed",
		must: []string{
			"live-drift ConfigMap/g21/web-config /data/LOG_LEVEL kubectl-edit",
		},
		mustNot: []string{"controller-missing", "field-conflict", "prune", "orphan"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g21-root", "Application/argocd/g21-web-old", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g21-root", "Application/argocd/g21-web", diffing.ActionCreated, diffing.ActionCreated)
			drifts := 0
			for _, l := range findingLines(rep) {
				if strings.HasPrefix(l, "live-drift ") {
					drifts++
				}
			}
			if drifts != 1 {
				t.Errorf("the hand edit is listed %d times, want once", drifts)
			}
			if n := targetNamed(t, rep, "g21-web").Notes; !slices.ContainsFunc(n, func(s string) bool { return strings.Contains(s, "this merge creates it (target g21-root)") }) {
				t.Errorf("g21-web must say the merge creates its Application; notes %q", n)
			}
			if n := targetNamed(t, rep, "g21-root").Notes; !slices.ContainsFunc(n, func(s string) bool {
				return strings.Contains(s, "Application `argocd/g21-web-old` is renamed to `argocd/g21-web`") && strings.Contains(s, "adopts it")
			}) {
				t.Errorf("g21-root must say the rename is an adoption; notes %q", n)
			}
			old := targetNamed(t, rep, "g21-web-old")
			if !slices.ContainsFunc(old.Notes, func(s string) bool { return strings.Contains(s, "renamed to `argocd/g21-web`") }) {
				t.Errorf("g21-web-old must say it is renamed to g21-web; notes %q", old.Notes)
			}
			wantDeleted(t, js, "g21-web-old")
		},
		variants: []gitopsVariant{{
			// The same rename with the resources finalizer on both names: the
			// finalizer deletes what the old name deployed, and the new name
			// creates it again (argoproj/applicationset#254).
			name: "with-resources-finalizer",
			edits: map[string][2]string{
				"base/apps/g21-root/web.yaml": {"  namespace: argocd\n", "  namespace: argocd\n  finalizers:\n    - resources-finalizer.argocd.argoproj.io\n"},
				"head/apps/g21-root/web.yaml": {"  namespace: argocd\n", "  namespace: argocd\n  finalizers:\n    - resources-finalizer.argocd.argoproj.io\n"},
			},
			must:    []string{"prune-cascade Application/argocd/g21-web-old", "prune ConfigMap/g21/web-config", "prune Service/g21/web"},
			mustNot: []string{"controller-missing"},
			failing: true,
		}},
	},
	// Issue 21, item 4: a PR deletes an Application whose chart comes from a
	// Helm repository that is not fetched, with the resources finalizer. The
	// chart is not rendered, but deleting the Application deletes what it
	// deployed: listed from its status.resources. Argo CD never deletes a CRD
	// with an Application (controller/appcontroller.go shouldBeDeleted), so the
	// CRD and its Widget stay, and the finding names them.
	{
		name: "22-argo-app-remote-chart-deleted",
		must: []string{
			"prune-cascade Application/argocd/g22-operator",
			"prune Deployment/g22/operator",
			"prune ServiceAccount/g22/operator",
			"orphan CustomResourceDefinition/widgets.g22.example.com",
		},
		mustNot: []string{"prune-stateful", "web-config", "controller-missing"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g22-operator")
			wantChange(t, rep, "g22-operator", "Deployment/g22/operator", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g22-operator", "CustomResourceDefinition/widgets.g22.example.com", diffing.ActionDeleted, diffing.ActionUnchanged)
			for _, f := range tr.Findings {
				switch f.Rule {
				case diffing.RulePruneCascade:
					for _, want := range []string{"3 objects in its status.resources", "CustomResourceDefinition `widgets.g22.example.com`", "1 Widget"} {
						if !strings.Contains(f.Message, want) {
							t.Errorf("the cascade does not say %q: %s", want, f.Message)
						}
					}
				case diffing.RuleOrphan:
					if !strings.Contains(f.Message, "never deletes a CRD") || !strings.Contains(f.Message, "1 Widget") {
						t.Errorf("the CRD's finding does not say why it stays and what stays with it: %s", f.Message)
					}
				}
			}
			wantDeleted(t, js, "g22-operator")
		},
		variants: []gitopsVariant{{
			// Without the finalizer Argo CD's delete does not cascade.
			name: "without-finalizer",
			edits: map[string][2]string{
				"base/argocd/g22-operator.yaml": {"  finalizers:\n    - resources-finalizer.argocd.argoproj.io\n", ""},
				"live/application.yaml":         {"  finalizers:\n    - resources-finalizer.argocd.argoproj.io\n", ""},
			},
			must:    []string{"orphan Deployment/g22/operator", "orphan ServiceAccount/g22/operator"},
			mustNot: []string{"prune"},
		}},
	},
	// Issue 21, item 4: an ApplicationSet stops generating an Application while
	// an unrelated Application does not render (at base and head alike), so
	// discovery cannot look inside it. That gap does not hide the deletion the
	// set makes: the set is declared in a file of the repository and expanded
	// completely at head.
	{
		name:    "23-appset-loses-app-render-gap",
		must:    []string{"prune-cascade Application/argocd/g23-b", "prune ConfigMap/g23/b-config", "render-error"},
		mustNot: []string{"a-config", "orphan"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g23-b", "ConfigMap/g23/b-config", diffing.ActionDeleted, diffing.ActionDeleted)
			wantDeleted(t, js, "g23-b")
		},
	},
	// Issue 21, item 4: a PR deletes a Flux Kustomization whose source is
	// another repository (not rendered), with prune on: kustomize-controller
	// garbage-collects its status.inventory, the CRD with every Gizmo.
	{
		name: "24-flux-ks-deleted-prune",
		must: []string{
			"prune-cascade Kustomization/flux-system/g24-gizmos",
			"prune-cascade CustomResourceDefinition/gizmos.g24.example.com",
			"prune-stateful CustomResourceDefinition/gizmos.g24.example.com",
			"prune Deployment/g24/gizmo-controller",
			"prune ConfigMap/g24/gizmo-settings",
		},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g24-gizmos")
			if !slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool {
				return f.Rule == diffing.RulePruneCascade && strings.Contains(f.Message, "3 objects in its status.inventory") &&
					strings.Contains(f.Message, "CustomResourceDefinition `gizmos.g24.example.com`") && strings.Contains(f.Message, "2 Gizmos")
			}) {
				t.Errorf("no cascade naming the inventory and the CRD's Gizmos: %q", findingLines(rep))
			}
			wantDeleted(t, js, "g24-gizmos")
		},
		variants: []gitopsVariant{{
			// deletionPolicy Orphan: the inventory stays whatever prune says
			// (kustomize-controller finalizerShouldDeleteResources).
			name: "deletion-policy-orphan",
			edits: map[string][2]string{
				"base/clusters/test/g24-gizmos.yaml": {"  prune: true\n", "  prune: true\n  deletionPolicy: Orphan\n"},
				"live/kustomization.yaml":            {"  prune: true\n", "  prune: true\n  deletionPolicy: Orphan\n"},
			},
			must:    []string{"orphan Deployment/g24/gizmo-controller", "orphan CustomResourceDefinition/gizmos.g24.example.com"},
			mustNot: []string{"prune"},
		}},
	},
	// Issue 21, item 4: a PR deletes a HelmRelease whose chart is not fetched:
	// helm-controller uninstalls the release, whose objects come from Helm's
	// release record (the Secret sh.helm.release.v1.db.v3), including one that
	// lost Helm's annotations.
	{
		name:    "27-flux-helmrelease-deleted",
		must:    []string{"prune-cascade HelmRelease/flux-system/g27-db", "prune Deployment/g27/db", "prune ConfigMap/g27/db-config"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g27-db")
			if !slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool {
				return f.Rule == diffing.RulePruneCascade && strings.Contains(f.Message, "2 objects in its Helm release (Secret g27/sh.helm.release.v1.db.v3)")
			}) {
				t.Errorf("no cascade naming the release record: %q", findingLines(rep))
			}
			md := report.Markdown(rep, report.DefaultOptions())
			if strings.Contains(md, "H4sI") || strings.Contains(string(js), "H4sI") {
				t.Errorf("the release record leaked into the output")
			}
		},
	},
	// Issue 21, item 5: an app of apps gets a child Application for a
	// directory that is already in the repository: everything it deploys is
	// created, not "unchanged" because the directory renders alike at base.
	{
		name:    "25-argo-new-child-app",
		mustNot: []string{"controller-missing", "prune", "orphan"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g25-root", "Application/argocd/g25-api", diffing.ActionCreated, diffing.ActionCreated)
			wantChange(t, rep, "g25-api", "ConfigMap/g25/api-config", diffing.ActionCreated, diffing.ActionCreated)
			wantChange(t, rep, "g25-api", "Deployment/g25/api", diffing.ActionCreated, diffing.ActionCreated)
		},
	},
	// Issue 21, item 5: a new HelmRelease of a chart the repository already
	// holds (another release uses it): its objects are created.
	{
		name: "26-flux-new-helmrelease",
		// No Kustomization of the repository applies clusters/test: the new
		// HelmRelease is only applied if something outside it does.
		must:    []string{"controller-missing HelmRelease/flux-system/g26-api"},
		mustNot: []string{"prune", "orphan"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g26-api", "Deployment/g26/api", diffing.ActionCreated, diffing.ActionCreated)
			wantChange(t, rep, "g26-api", "Service/g26/api", diffing.ActionCreated, diffing.ActionCreated)
		},
	},
	// Issue 12: what a PR changes about an ApplicationSet's Applications. A PR
	// that adds a cluster to an add-ons set (a merge of the clusters generator,
	// over cluster Secrets on the live cluster, with per-cluster git files).
	{
		name:    "60-appset-adds-cluster",
		mustNot: []string{"prune", "orphan", "controller-missing"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g60-metrics-north", "ConfigMap/g60-north/metrics-config", diffing.ActionCreated, diffing.ActionCreated)
			for _, name := range []string{"g60-metrics-east", "g60-metrics-west"} {
				if tr := targetNamed(t, rep, name); len(tr.Changes) != 0 {
					for _, c := range tr.Changes {
						if c.Action != diffing.ActionUnchanged || c.LiveAction != diffing.ActionUnchanged {
							t.Errorf("%s: %s %s live %s; the clusters it had are unchanged", name, c.Key, c.Action, c.LiveAction)
						}
					}
				}
			}
			wantNote(t, rep.Notes, "ApplicationSet argocd/g60-addons: this PR generates 1 new Application it did not (g60-metrics-north).")
			wantController(t, js, "g60-metrics-north", map[string]any{
				"kind": "Application", "name": "g60-metrics-north", "namespace": "argocd", "source": "argocd/g60-addons.yaml",
				"autoSync": true, "prune": true, "selfHeal": false, "generator": "g60-addons",
			})
			md := report.Markdown(rep, report.DefaultOptions())
			for _, out := range []string{md, string(js)} {
				if strings.Contains(out, "SECRET-VALUE") || strings.Contains(out, "bearerToken") {
					t.Errorf("a cluster Secret's credentials leaked into the output:\n%s", out)
				}
			}
		},
		variants: []gitopsVariant{{
			// Without the PR's selector change, the new file alone adds no
			// cluster: the merge keeps only the clusters the selector picks.
			name:    "file-without-selector-change",
			edits:   map[string][2]string{"head/argocd/g60-addons.yaml": {"[staging, production, dev]", "[staging, production]"}},
			mustNot: []string{"prune", "orphan"},
		}},
	},
	// A PR that removes a values file that a matrix (git directories × git files)
	// reads: the set stops generating the Application, its controller deletes
	// it, and the resources finalizer the set adds cascades the delete.
	{
		name:    "61-appset-removes-values-file",
		must:    []string{"prune-cascade Application/argocd/g61-web-prod", "prune ConfigMap/g61-prod/web-config"},
		mustNot: []string{"orphan", "controller-missing", "g61-web-dev"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g61-web-prod", "ConfigMap/g61-prod/web-config", diffing.ActionDeleted, diffing.ActionDeleted)
			wantNote(t, rep.Notes, "ApplicationSet argocd/g61-apps: this PR no longer generates 1 Application (g61-web-prod), which its controller deletes.")
		},
		variants: []gitopsVariant{{
			// preserveResourcesOnDeletion: the set adds no finalizer, so the
			// deleted Application leaves what it deployed in place.
			name: "preserve-resources",
			edits: map[string][2]string{
				"base/argocd/g61-apps.yaml": {"  goTemplate: true\n", "  goTemplate: true\n  syncPolicy:\n    preserveResourcesOnDeletion: true\n"},
				"head/argocd/g61-apps.yaml": {"  goTemplate: true\n", "  goTemplate: true\n  syncPolicy:\n    preserveResourcesOnDeletion: true\n"},
			},
			must:    []string{"orphan ConfigMap/g61-prod/web-config"},
			mustNot: []string{"prune-cascade", "prune ConfigMap"},
		}, {
			// applicationsSync create-update: the controller never deletes.
			name: "create-update-policy",
			edits: map[string][2]string{
				"base/argocd/g61-apps.yaml": {"  goTemplate: true\n", "  goTemplate: true\n  syncPolicy:\n    applicationsSync: create-update\n"},
				"head/argocd/g61-apps.yaml": {"  goTemplate: true\n", "  goTemplate: true\n  syncPolicy:\n    applicationsSync: create-update\n"},
			},
			mustNot: []string{"prune", "orphan"},
		}},
	},
	// Issue 8: a no-op PR against a cluster exactly in sync, per controller and
	// apply mode, must give no change and no finding; the live objects carry what
	// the controller writes (live/steps.yaml).
	{name: "40-argo-csa-noop", check: wantNoOp},
	{name: "41-argo-ssa-noop", check: wantNoOp},
	{name: "42-flux-ks-noop", check: wantNoOp},
	{name: "43-flux-helmrelease-noop", check: wantNoOp},
	// Issue 11: a chart from a Helm HTTP repository (served by the test from the
	// scenario's repo/ folder), bumped 1.0.0 → 2.0.0: 2.0.0 renames the
	// StatefulSet and drops the CRD (a template of the chart, so part of the
	// release) while a Widget exists.
	{
		name: "50-flux-helmrepo-chart-bump",
		must: []string{"rename StatefulSet/g50/db", "prune-cascade CustomResourceDefinition/widgets.g50.example.com",
			"prune-stateful StatefulSet/g50/db", "prune-stateful CustomResourceDefinition/widgets.g50.example.com"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g50-db")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.Contains(n, "chart db from") && strings.Contains(n, "1.0.0 resolves to 1.0.0 at base; 2.0.0 resolves to 2.0.0 at head")
			}) {
				t.Errorf("the notes do not name the versions at base and head: %q", tr.Notes)
			}
			for _, f := range tr.Findings {
				if f.Rule == diffing.RuleRename && f.Severity != diffing.SeverityError {
					t.Errorf("the StatefulSet rename is %s, want error", f.Severity)
				}
			}
		},
		variants: []gitopsVariant{{
			// The same bump as a version range that both versions satisfy at
			// head: ">=1.0.0" resolves to 2.0.0, the latest.
			name: "range",
			edits: map[string][2]string{
				"head/clusters/test/g50-db.yaml": {"version: 2.0.0", "version: \">=1.0.0\""},
			},
			must:    []string{"rename StatefulSet/g50/db", "prune-cascade CustomResourceDefinition/widgets.g50.example.com"},
			failing: true,
		}},
	},
	// Issue 21: Renovate bumps a HelmRelease's chart 1.4.0 → 1.5.0 (a new
	// appVersion, the image tag) and nothing is configured: remote sources
	// are fetched in the default mode (public), no allowlist names the
	// repository (served on a loopback address standing in for a public one).
	{
		name:    "84-flux-renovate-chart-bump-public",
		mustNot: []string{"not-rendered", "render-error"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			if remote.DefaultMode != remote.ModePublic {
				t.Errorf("the default remote mode is %s, want public", remote.DefaultMode)
			}
			tr := targetNamed(t, rep, "g84-web")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.Contains(n, "chart web from") && strings.Contains(n, "1.4.0 resolves to 1.4.0 at base; 1.5.0 resolves to 1.5.0 at head")
			}) {
				t.Errorf("the notes do not name the versions at base and head: %q", tr.Notes)
			}
			wantChange(t, rep, "g84-web", "Deployment/g84/web", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g84-web", "Service/g84/web", diffing.ActionUnchanged, diffing.ActionUnchanged)
		},
	},
	// The same bump through an Argo CD Application's chart + targetRevision.
	{
		name: "51-argo-helmrepo-chart-bump",
		must: []string{"rename StatefulSet/g51/db", "prune-cascade CustomResourceDefinition/gadgets.g51.example.com",
			"prune-stateful StatefulSet/g51/db", "prune-stateful CustomResourceDefinition/gadgets.g51.example.com"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g51-db")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.Contains(n, "1.0.0 resolves to 1.0.0 at base; 2.0.0 resolves to 2.0.0 at head")
			}) {
				t.Errorf("the notes do not name the versions at base and head: %q", tr.Notes)
			}
			for _, f := range tr.Findings {
				if f.Rule == diffing.RuleRename && f.Severity != diffing.SeverityError {
					t.Errorf("the StatefulSet rename is %s, want error", f.Severity)
				}
			}
		},
	},
	// The same bump through a Flux Kustomization whose source is an
	// OCIRepository (its artifact pushed to an in-process registry): the tag
	// 1.0.0 → 2.0.0 renames the StatefulSet and drops the CRD the Kustomization
	// applied, while a Widget exists; the inventory holds both.
	{
		name: "80-flux-ocirepository-tag-bump",
		must: []string{"rename StatefulSet/g80/db", "prune-cascade CustomResourceDefinition/widgets.g80.example.com",
			"prune-stateful StatefulSet/g80/db", "prune-stateful CustomResourceDefinition/widgets.g80.example.com"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g80-db")
			if tr.Skipped != "" {
				t.Fatalf("g80-db not rendered: %s", tr.Skipped)
			}
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return regexp.MustCompile(`^OCI artifact oci://\S+/db: 1\.0\.0 resolves to 1\.0\.0@sha256:[0-9a-f]{64} at base; 2\.0\.0 resolves to 2\.0\.0@sha256:[0-9a-f]{64} at head`).MatchString(n)
			}) {
				t.Errorf("the notes do not name the versions at base and head: %q", tr.Notes)
			}
			for _, f := range tr.Findings {
				if f.Rule == diffing.RuleRename && f.Severity != diffing.SeverityError {
					t.Errorf("the StatefulSet rename is %s, want error", f.Severity)
				}
			}
			wantChange(t, rep, "g80-db", "StatefulSet/g80/db", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g80-db", "StatefulSet/g80/db-main", diffing.ActionCreated, diffing.ActionCreated)
			wantChange(t, rep, "g80-db", "CustomResourceDefinition/widgets.g80.example.com", diffing.ActionDeleted, diffing.ActionDeleted)
		},
	},
	// A HelmRelease asks for ">=1.0.0" at base and at head (the PR changes only
	// a README); the cluster runs 1.0.0 (status.history), and the repository has
	// since published 2.0.0, which renames the StatefulSet and drops the CRD.
	// Base and head resolve the range against the same index: the PR changes
	// nothing. What the upgrade does is shown against the live cluster (the
	// StatefulSet the release drops is pruned), with a note that Flux applies
	// it whether or not the PR merges; its findings hold at base
	// (pre-existing), so the check passes. (rename and prune-cascade are
	// base→head findings: with nothing changed between them they are not
	// made; the variant below is the same upgrade made by the PR.)
	{
		name:    "81-flux-helmrepo-range-newer-release",
		must:    []string{"prune-stateful StatefulSet/g81/db"},
		mustNot: []string{"rename"},
		failing: false,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g81-db")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return regexp.MustCompile(`^chart db from http://\S+: >=1\.0\.0 resolves to 2\.0\.0 now; the cluster runs 1\.0\.0 \(the HelmRelease's release history\)\. Flux upgrades it to 2\.0\.0 at its next reconcile whether or not this PR merges; this PR does not change it\.$`).MatchString(n)
			}) {
				t.Errorf("no note that the range resolves to a newer release than the cluster runs: %q", tr.Notes)
			}
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.HasSuffix(n, ": >=1.0.0 resolves to 2.0.0 at base and at head.")
			}) {
				t.Errorf("the notes do not say base and head resolve alike: %q", tr.Notes)
			}
			for _, f := range tr.Findings {
				if f.Severity >= diffing.SeverityWarning && !f.PreExisting {
					t.Errorf("%s %s is blamed on a PR that does not change the release", f.Rule, f.Key)
				}
			}
			// db-main is in base and head alike; db is only live (tracked by
			// helm-controller's labels), which the report lists as deleted.
			wantChange(t, rep, "g81-db", "StatefulSet/g81/db-main", diffing.ActionUnchanged, diffing.ActionCreated)
			wantChange(t, rep, "g81-db", "StatefulSet/g81/db", diffing.ActionDeleted, diffing.ActionDeleted)
		},
		variants: []gitopsVariant{{
			// The PR itself moves the range to the new major: now it changes
			// the release, and the upgrade's findings are its own.
			name: "pr-changes-the-version",
			edits: map[string][2]string{
				"base/clusters/test/g81-db.yaml": {`version: ">=1.0.0"`, "version: 1.0.0"},
			},
			must:    []string{"rename StatefulSet/g81/db", "prune-cascade CustomResourceDefinition/widgets.g81.example.com"},
			failing: true,
		}},
	},
	// A kustomize overlay whose base is another git repository pinned at a
	// tag, served over git's smart HTTP protocol and allowed by the policy: the
	// PR moves the ref v1 → v2, which renames the StatefulSet. Both refs are
	// fetched and rendered.
	{
		name:    "82-argo-remote-base-ref-bump",
		must:    []string{"rename StatefulSet/g82/db", "prune-stateful StatefulSet/g82/db"},
		mustNot: []string{"not-rendered"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g82-db")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return regexp.MustCompile(`^remote base db from http://\S+/platform\.git: v1 resolves to [0-9a-f]{40} at base; v2 resolves to [0-9a-f]{40} at head`).MatchString(n)
			}) {
				t.Errorf("the notes do not name the refs and commits at base and head: %q", tr.Notes)
			}
			wantChange(t, rep, "g82-db", "StatefulSet/g82/db", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g82-db", "StatefulSet/g82/db-main", diffing.ActionCreated, diffing.ActionCreated)
		},
	},
	// A local chart whose dependency is not vendored (Chart.yaml + Chart.lock,
	// no charts/): built like helm dependency build from the served repository
	// at base and head; the PR bumps the locked version 1.0.0 → 2.0.0, which
	// renames the StatefulSet and drops the CRD while a Gizmo exists.
	{
		name: "83-argo-unvendored-dependency-bump",
		must: []string{"rename StatefulSet/g83/app-db", "prune-cascade CustomResourceDefinition/gizmos.g83.example.com",
			"prune-stateful StatefulSet/g83/app-db", "prune-stateful CustomResourceDefinition/gizmos.g83.example.com"},
		mustNot: []string{"not-rendered", "ConfigMap/g83/app-settings"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g83-app")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return regexp.MustCompile(`^chart dependency db from http://\S+: 1\.0\.0 resolves to 1\.0\.0 at base; 2\.0\.0 resolves to 2\.0\.0 at head`).MatchString(n)
			}) {
				t.Errorf("the notes do not name the dependency's versions at base and head: %q", tr.Notes)
			}
			wantChange(t, rep, "g83-app", "StatefulSet/g83/app-db", diffing.ActionDeleted, diffing.ActionDeleted)
			wantChange(t, rep, "g83-app", "StatefulSet/g83/app-db-main", diffing.ActionCreated, diffing.ActionCreated)
			wantChange(t, rep, "g83-app", "ConfigMap/g83/app-settings", diffing.ActionUnchanged, diffing.ActionUnchanged)
		},
		variants: []gitopsVariant{{
			// Chart.yaml bumped without Chart.lock: helm dependency build
			// fails ("the lock file is out of sync"): listed as not rendered
			// with that reason, as any source that cannot be built.
			name:    "lock-out-of-sync",
			edits:   map[string][2]string{"head/charts/app/Chart.lock": {"version: 2.0.0", "version: 1.0.0"}},
			must:    []string{"not-rendered Application/argocd/g83-app"},
			mustNot: []string{"rename", "prune"},
		}},
	},
	// Issue 21: files that repeat a key, as Argo CD deploys them (the last
	// value wins: its repo server decodes with sigs.k8s.io/yaml, go-yaml v2):
	// the Application's second prune: true and the ConfigMap's second
	// LOG_LEVEL count, each with a note naming file and line; the PR's change
	// of TIMEOUT is previewed.
	{
		name:    "85-argo-duplicate-key",
		mustNot: []string{"render-error", "not-rendered", "LOG_LEVEL"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantController(t, js, "g85-web", map[string]any{
				"kind": "Application", "name": "g85-web", "namespace": "argocd", "source": "argocd/g85-web.yaml",
				"autoSync": true, "prune": true, "selfHeal": true,
			})
			wantChange(t, rep, "g85-web", "ConfigMap/g85/web-config", diffing.ActionModified, diffing.ActionModified)
			want := `apps/g85-web/configmap.yaml:8: duplicate key "LOG_LEVEL" (first on line 6): read as Argo CD reads it, the last value wins (kustomize, and so Flux, refuses the file)`
			if tr := targetNamed(t, rep, "g85-web"); !slices.Contains(tr.Notes, want) {
				t.Errorf("g85-web notes %q, want %q", tr.Notes, want)
			}
			md := report.Markdown(rep, report.DefaultOptions())
			if !strings.Contains(md, "argocd/g85-web.yaml:21: duplicate key") {
				t.Errorf("the comment does not name the Application file's duplicate key:\n%s", md)
			}
		},
	},
	// Issue 21: kustomize helmCharts with a chart from an OCI registry (the
	// scenario's ocicharts/ folder), which Argo CD builds with --enable-helm
	// (argocd-cm in the Application's namespace): a Renovate-style bump
	// 1.0.0 → 1.1.0 renders in process, valuesInline over the chart's
	// values, .Release.Namespace the kustomization's, the pre-upgrade hook
	// left out as Argo CD runs it.
	{
		name:    "88-argo-kustomize-helmcharts-oci",
		mustNot: []string{"not-rendered", "render-error"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g88-web", "Deployment/g88/web", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g88-web", "ConfigMap/g88/web-settings", diffing.ActionCreated, diffing.ActionCreated)
			tr := targetNamed(t, rep, "g88-web")
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.Contains(n, "1.0.0 resolves to 1.0.0 at base; 1.1.0 resolves to 1.1.0 at head")
			}) {
				t.Errorf("the notes do not name the chart versions at base and head: %q", tr.Notes)
			}
		},
		variants: []gitopsVariant{{
			// Without --enable-helm Argo CD fails to build it: a render
			// error naming Argo CD's refusal, not a preview.
			name:  "no-enable-helm",
			edits: map[string][2]string{"live/argocd-cm.yaml": {"kustomize.buildOptions: --enable-helm", "kustomize.buildOptions: --load-restrictor LoadRestrictionsRootOnly"}},
			must:  []string{"render-error"},
		}},
	},
	// Issue 21: a Flux Kustomization whose kustomization gains helmCharts:
	// kustomize-controller builds without Helm, so the finding is its
	// refusal, not a render of the chart.
	{
		name:    "89-flux-kustomization-helmcharts",
		must:    []string{"render-error"},
		mustNot: []string{"Service/g89/web"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g89-web")
			if !slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool {
				return f.Rule == diffing.RuleRenderError && strings.Contains(f.Message, "Flux's kustomize-controller builds kustomizations without Helm, so this fails there as in kustomize: \"must specify --enable-helm\"")
			}) {
				t.Errorf("no render-error naming kustomize-controller's refusal: %+v", tr.Findings)
			}
		},
	},
	{
		name: "44-argo-csa-changes",
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g44-web", "Deployment/g44/web", diffing.ActionModified, diffing.ActionModified)
			for _, c := range targetNamed(t, rep, "g44-web").Changes {
				if c.Key.String() != "Deployment/g44/web" {
					continue
				}
				if !strings.Contains(c.LiveDiff, "-    team: shop") {
					t.Errorf("kubectl's three-way merge removes the label git dropped; live diff:\n%s", c.LiveDiff)
				}
				for _, def := range []string{"progressDeadlineSeconds", "revisionHistoryLimit", "dnsPolicy", "schedulerName", "terminationGracePeriodSeconds"} {
					if strings.Contains(c.LiveDiff, "-  "+def) || strings.Contains(c.LiveDiff, "-      "+def) {
						t.Errorf("the server default %s is shown removed; a client-side apply keeps it:\n%s", def, c.LiveDiff)
					}
				}
			}
		},
		mustNot: []string{"field-conflict", "live-drift"},
	},
	{
		name:    "45-quantities",
		mustNot: []string{"field-conflict", "live-drift"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g45-web", "Deployment/g45/web", diffing.ActionModified, diffing.ActionUnchanged)
		},
	},
	{
		name: "46-secret-stringdata-drift",
		must: []string{"live-drift Secret/g46/db-creds /data/password kubectl-client-side-apply"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			md := report.Markdown(rep, report.DefaultOptions())
			for _, out := range []string{md, string(js)} {
				if strings.Contains(out, "SECRET-VALUE") || strings.Contains(out, "aGFuZC1yb3RhdGVkLVNFQ1JFVC1WQUxVRQ") {
					t.Errorf("a Secret value leaked into the output:\n%s", out)
				}
			}
		},
	},
	// Issue 24: kustomize-controller's per-object marks. ssa: IfNotPresent
	// objects are created only (cainjector's CA stays, the PR's change to
	// seeded is not applied), ssa: Ignore (any case, as a label) is never
	// applied, prune: Disabled (any case) keeps a removed object.
	{
		name: "30-flux-ssa-policies",
		must: []string{
			"sync-disabled ConfigMap/g30/seeded",
			"sync-disabled ConfigMap/g30/legacy",
			"orphan ConfigMap/g30/keep-me",
		},
		mustNot: []string{"field-conflict", "prune ", "ConfigMap/g30/settings", "ConfigMap/g30/ca-bundle"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g30-app", "ConfigMap/g30/seeded", diffing.ActionModified, diffing.ActionUnchanged)
			wantChange(t, rep, "g30-app", "ConfigMap/g30/legacy", diffing.ActionModified, diffing.ActionUnchanged)
			wantChange(t, rep, "g30-app", "ConfigMap/g30/settings", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g30-app", "ConfigMap/g30/keep-me", diffing.ActionDeleted, diffing.ActionUnchanged)
			for _, f := range targetNamed(t, rep, "g30-app").Findings {
				want := map[string]string{"seeded": "`kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`", "legacy": "`kustomize.toolkit.fluxcd.io/ssa: Ignore`",
					"keep-me": "`kustomize.toolkit.fluxcd.io/prune: disabled`"}[f.Key.Name]
				if want != "" && !strings.Contains(f.Message, want) {
					t.Errorf("%s %s does not name the mark %s: %s", f.Rule, f.Key, want, f.Message)
				}
			}
		},
		variants: []gitopsVariant{{
			// Without the marks Flux applies both: the CA cainjector wrote is
			// overwritten, and the PR's change to seeded is applied.
			name: "without-ssa-marks",
			edits: map[string][2]string{
				"base/apps/g30-app/ca-bundle.yaml": {"  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", ""},
				"head/apps/g30-app/ca-bundle.yaml": {"  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", ""},
				"base/apps/g30-app/seeded.yaml":    {"  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", ""},
				"head/apps/g30-app/seeded.yaml":    {"  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n", ""},
			},
			must:    []string{"field-conflict ConfigMap/g30/ca-bundle /data/ca.crt cainjector", "sync-disabled ConfigMap/g30/legacy"},
			mustNot: []string{"ConfigMap/g30/seeded"},
		}},
	},
	// Issue 24: an immutable-field change under kustomize-controller's force.
	// The Job marked force: enabled is deleted and created again (it runs
	// again): a warning, not a failed sync. The StatefulSet, unmarked, fails
	// the sync; with the Kustomization's spec.force it is recreated with all
	// its pods instead, its own risk.
	{
		name:    "31-flux-force-recreate",
		must:    []string{"immutable-field Job/g31/migrate /spec/template", "immutable-field StatefulSet/g31/db /spec/volumeClaimTemplates"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			for _, f := range targetNamed(t, rep, "g31-jobs").Findings {
				switch f.Key.Kind {
				case "Job":
					if f.Severity != diffing.SeverityWarning || !strings.Contains(f.Message, "`kustomize.toolkit.fluxcd.io/force: enabled` makes kustomize-controller delete the Job and create it again: the Job runs again") {
						t.Errorf("the forced Job is a recreate warning naming the mark; got %s: %s", f.Severity, f.Message)
					}
				case "StatefulSet":
					if f.Severity != diffing.SeverityError || !strings.Contains(f.Message, "the sync will fail") {
						t.Errorf("the unforced StatefulSet fails the sync; got %s: %s", f.Severity, f.Message)
					}
				}
			}
			wantChange(t, rep, "g31-jobs", "Job/g31/migrate", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g31-jobs", "StatefulSet/g31/db", diffing.ActionModified, diffing.ActionUnchanged)
		},
		variants: []gitopsVariant{{
			name: "with-spec-force",
			edits: map[string][2]string{
				"base/clusters/test/g31-jobs.yaml": {"  prune: true\n", "  prune: true\n  force: true\n"},
				"head/clusters/test/g31-jobs.yaml": {"  prune: true\n", "  prune: true\n  force: true\n"},
			},
			must: []string{"immutable-field Job/g31/migrate /spec/template", "immutable-field StatefulSet/g31/db /spec/volumeClaimTemplates"},
		}},
	},
	// Issue 24: helm-controller's options on a chart bump. The changed CRD of
	// the chart's crds/ directory is not applied (upgrade.crds unset: Create,
	// which never updates an existing CRD); the ConfigMap the chart drops stays
	// (helm.sh/resource-policy: keep); upgrade.force does not recreate the
	// Deployment whose selector changes, so the upgrade fails; and the
	// upgrade applies the chart's replicas over the hand scale although drift
	// detection ignores /spec/replicas.
	{
		name: "120-flux-helm-options",
		must: []string{
			"sync-disabled CustomResourceDefinition/widgets.g120.example.com",
			"immutable-field Deployment/g120/web-api /spec/selector",
			"live-drift Deployment/g120/web /spec/replicas kubectl-scale",
			"orphan ConfigMap/g120/web-reports",
		},
		mustNot: []string{"prune", "stateful-change"},
		failing: true,
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			tr := targetNamed(t, rep, "g120-web")
			for _, want := range []string{"spec.upgrade.force does not recreate objects", "spec.driftDetection.ignore (/spec/replicas) applies to helm-controller's drift detection and correction only"} {
				if !slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.Contains(n, want) }) {
					t.Errorf("no note %q in %q", want, tr.Notes)
				}
			}
			for _, f := range tr.Findings {
				if f.Rule == diffing.RuleSyncDisabled && !strings.Contains(f.Message, "`spec.upgrade.crds (default Create)`") {
					t.Errorf("the CRD finding does not name the policy: %s", f.Message)
				}
				if f.Rule == diffing.RuleOrphan && !strings.Contains(f.Message, "`helm.sh/resource-policy: keep`") {
					t.Errorf("the orphan does not name the annotation: %s", f.Message)
				}
			}
			wantChange(t, rep, "g120-web", "CustomResourceDefinition/widgets.g120.example.com", diffing.ActionModified, diffing.ActionUnchanged)
			wantChange(t, rep, "g120-web", "ConfigMap/g120/web-reports", diffing.ActionDeleted, diffing.ActionUnchanged)
		},
		variants: []gitopsVariant{{
			name: "crds-create-replace",
			edits: map[string][2]string{
				"base/clusters/test/g120-web.yaml": {"    force: true\n", "    force: true\n    crds: CreateReplace\n"},
				"head/clusters/test/g120-web.yaml": {"    force: true\n", "    force: true\n    crds: CreateReplace\n"},
			},
			must:    []string{"immutable-field Deployment/g120/web-api /spec/selector"},
			mustNot: []string{"sync-disabled"},
			failing: true,
		}},
	},
	// Issue 24: suspended Flux objects apply nothing until they are resumed: a
	// Kustomization suspended in git (the hand edit is not reverted, the
	// removed ConfigMap is pruned only once it is resumed) and a HelmRelease
	// suspended on the cluster only (the hand scale stays).
	{
		name: "32-flux-suspended",
		must: []string{
			"sync-disabled Kustomization/flux-system/g32-app",
			"sync-disabled HelmRelease/flux-system/g32-web",
			"prune ConfigMap/g32/old-job-config",
		},
		mustNot: []string{"live-drift", "field-conflict"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			for _, name := range []string{"g32-app", "g32-web"} {
				tr := targetNamed(t, rep, name)
				if tr.LiveChecked || tr.Controller == nil || !tr.Controller.Suspended {
					t.Errorf("%s: live checked %t, controller %+v; want no live prediction of a suspended target", name, tr.LiveChecked, tr.Controller)
				}
				for _, c := range tr.Changes {
					if c.LiveAction != "" {
						t.Errorf("%s: %s has live action %s; nothing is predicted", name, c.Key, c.LiveAction)
					}
				}
			}
			for _, f := range targetNamed(t, rep, "g32-app").Findings {
				if f.Rule == diffing.RulePrune && !strings.HasPrefix(f.Message, "Not on merge: Kustomization `flux-system/g32-app` is suspended; once it is resumed:") {
					t.Errorf("the prune of a suspended Kustomization must say it waits for the resume: %s", f.Message)
				}
			}
		},
	},
	// Issue 24: a Kustomization's build options (targetNamespace, namePrefix,
	// images, patches, components with ignoreMissingComponents,
	// commonMetadata) as kustomize-controller builds them. The PR bumps the
	// image and adds a commonMetadata annotation, which Flux puts on each
	// object's own metadata only: no pod template change, no rollout for it.
	{
		name:    "121-flux-ks-render-options",
		mustNot: []string{"render-error", "field-conflict", "live-drift", "prune"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g121-web", "Deployment/g121/prod-web", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g121-web", "ConfigMap/g121/prod-extra", diffing.ActionModified, diffing.ActionModified)
			tr := targetNamed(t, rep, "g121-web")
			for _, c := range tr.Changes {
				if c.Key.Name != "prod-web" {
					continue
				}
				if strings.Count(c.LiveDiff, "owner: team-web") != 1 || !strings.Contains(c.LiveDiff, "+      - image: nginx:1.27.2") {
					t.Errorf("the live diff must add the annotation once (object metadata) and bump the image:\n%s", c.LiveDiff)
				}
				if strings.Contains(c.LiveDiff, "replicas") {
					t.Errorf("the patch keeps replicas at 3:\n%s", c.LiveDiff)
				}
			}
			if !slices.ContainsFunc(tr.Notes, func(n string) bool {
				return strings.Contains(n, "g121-missing does not exist and spec.ignoreMissingComponents is set")
			}) {
				t.Errorf("no note on the skipped component: %q", tr.Notes)
			}
		},
	},
	// Issue 24: a HelmRelease whose only change is a post-renderer patch. No
	// chart file changes; helm-controller runs the patch over the chart's
	// output, so the Deployment's replicas change.
	{
		name: "92-flux-helmrelease-postrender-patch",
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g92-web", "Deployment/g92/web", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g92-web", "Service/g92/web", diffing.ActionUnchanged, diffing.ActionUnchanged)
			if md := report.Markdown(rep, report.DefaultOptions()); !strings.Contains(md, "replicas") {
				t.Errorf("the comment does not show the patched field:\n%s", md)
			}
		},
	},
	// Issue 21: a shared component holds HelmRelease ${APP}-anubis; the app's
	// Kustomization includes it with postBuild APP=g93-web and nested defaults
	// (${CLAIM:-${APP}}). The PR edits the component.
	{
		name:    "93-flux-substituted-component",
		mustNot: []string{"${"},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g93-web", "HelmRelease/g93/g93-web-anubis", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g93-web", "ConfigMap/g93/g93-web-settings", diffing.ActionUnchanged, diffing.ActionUnchanged)
			wantChange(t, rep, "g93-web-anubis", "ConfigMap/g93/g93-web-anubis-policy", diffing.ActionModified, diffing.ActionModified)
			for _, tr := range rep.Targets {
				if strings.Contains(tr.Name, "${") {
					t.Errorf("target %q is named by an unsubstituted variable", tr.Name)
				}
				for _, c := range tr.Changes {
					if strings.Contains(c.Key.String(), "${") {
						t.Errorf("%s: object %s is named by an unsubstituted variable", tr.Name, c.Key)
					}
				}
			}
		},
	},
	// Issue 21: HelmRelease valuesFrom a ConfigMap (values.yaml, and a key at a
	// targetPath, typed as an integer) and a Secret key at a targetPath. The PR
	// changes both; the Secret's values appear nowhere.
	{
		name: "94-flux-helmrelease-valuesfrom",
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g94-web", "ConfigMap/g94/web-config", diffing.ActionModified, diffing.ActionModified)
			md := report.Markdown(rep, report.DefaultOptions())
			for _, out := range []string{md, string(js)} {
				if strings.Contains(out, "SECRET-VALUE") {
					t.Errorf("a Secret value leaked into the output:\n%s", out)
				}
			}
		},
	},
	// Issue 21: valuesFrom and substituteFrom objects that only the cluster
	// holds are read there, as helm-controller and kustomize-controller read
	// them: the renders use their values (the Secret's hidden), not empty ones.
	{
		name: "95-flux-values-from-live",
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "g95-web", "ConfigMap/g95/web-config", diffing.ActionModified, diffing.ActionModified)
			wantChange(t, rep, "g95-app", "ConfigMap/g95/app-settings", diffing.ActionModified, diffing.ActionModified)
			md := report.Markdown(rep, report.DefaultOptions())
			for _, out := range []string{md, string(js)} {
				if strings.Contains(out, "SECRET-VALUE") {
					t.Errorf("a Secret value leaked into the output:\n%s", out)
				}
			}
			for _, c := range targetNamed(t, rep, "g95-web").Changes {
				if c.Key.Name == "web-config" && (!strings.Contains(c.Diff, " LOG_LEVEL: debug") || strings.Contains(c.LiveDiff, "-  LOG_LEVEL")) {
					t.Errorf("web-config must render with the live values (LOG_LEVEL debug, the token set):\n%s\n%s", c.Diff, c.LiveDiff)
				}
			}
			for _, c := range targetNamed(t, rep, "g95-app").Changes {
				if c.Key.Name == "app-settings" && (!strings.Contains(c.Diff, " cluster: test-cluster") || strings.Contains(c.LiveDiff, "-  cluster:")) {
					t.Errorf("app-settings must render with the live variables:\n%s\n%s", c.Diff, c.LiveDiff)
				}
			}
		},
	},
	// Issue 26: the drift scenarios (testDrift) as pull requests that change
	// nothing: the preview shows the same live drift, none of it the PR's.
	{
		name: "115-drift-argo-hand-edits-hpa",
		must: []string{
			"field-conflict Deployment/g115/web /spec/replicas kube-controller-manager",
			"live-drift ConfigMap/g115/web-settings /data/LOG_LEVEL kubectl-edit",
			"live-drift ConfigMap/g115a/api-settings /data/MODE kubectl-edit",
			// The operator's field is hidden from Argo CD's diff by
			// ignoreDifferences, but a sync without RespectIgnoreDifferences
			// applies the whole object and takes it back.
			"field-conflict ConfigMap/g115/web-tuning /data/PROFILE tuning-operator",
		},
	},
	{
		name: "116-drift-flux-suspended-warn",
		must: []string{
			"live-drift ConfigMap/g116/settings /data/LOG_LEVEL kubectl-edit",
			"sync-disabled Kustomization/flux-system/g116-paused",
			"live-drift Deployment/g116h/web /spec/replicas kubectl-scale",
		},
	},
	{
		name:    "117-drift-in-sync",
		mustNot: []string{"live-drift", "field-conflict"},
		check:   wantNoOp,
	},
	{
		// A home-lab layout (issue 25): the HelmRelease lounge's values
		// change; its chart's ConfigMap with it. Which targets a PR of each
		// shape touches is TestOwnership's.
		name: "100-flux-apps-directory-one-app",
		// The fixture's cluster has none of its Flux objects.
		must: []string{
			"controller-missing Kustomization/g100/g100-echo",
			"controller-missing Kustomization/g100/g100-lounge",
			"controller-missing HelmRelease/g100/lounge",
		},
		check: func(t *testing.T, rep *diffing.Report, js []byte) {
			wantChange(t, rep, "lounge", "ConfigMap/g100/lounge-limits", diffing.ActionModified, diffing.ActionCreated)
		},
	},
}

// ignoreReplicas is the ignoreDifferences of 04-argo-ignore-differences.
const ignoreReplicas = `    - group: apps
      kind: Deployment
      jsonPointers:
        - /spec/replicas
`

// TestGitOpsScenarios runs each folder of fixtures/gitops-scenarios through the whole
// pipeline with no .driftpreview.yaml, against live Applications and Kustomizations
// on the test cluster, and compares the comment with comment.golden.md.
func TestGitOpsScenarios(t *testing.T) {
	installGitOpsCRDs(t)
	dirs, err := filepath.Glob("../../fixtures/gitops-scenarios/[0-9]*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no GitOps scenarios found: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		i := slices.IndexFunc(gitopsCases, func(c gitopsCase) bool { return c.name == name })
		if i < 0 {
			t.Errorf("scenario %s has no entry in gitopsCases", name)
			continue
		}
		tc := gitopsCases[i]
		t.Run(name, func(t *testing.T) {
			rep, md, js := runGitOps(t, dir)
			assertFindings(t, rep, tc.must, tc.mustNot, tc.failing)
			if tc.check != nil {
				tc.check(t, rep, js)
			}
			golden.Check(t, filepath.Join(dir, "comment.golden.md"), []byte(md))
			for _, v := range tc.variants {
				t.Run(v.name, func(t *testing.T) {
					rep, _, _ := runGitOps(t, copyTree(t, dir, v.edits))
					assertFindings(t, rep, v.must, v.mustNot, v.failing)
				})
			}
		})
	}
	for _, c := range gitopsCases {
		if !slices.ContainsFunc(dirs, func(d string) bool { return filepath.Base(d) == c.name }) {
			t.Errorf("gitopsCases lists %s, which has no folder", c.name)
		}
	}
	t.Run("drift", testDrift)
	t.Run("argocd-hub-and-spoke", testHubAndSpoke)
	t.Run("appset-clusters-source", testAppSetClustersSource)
}

// installGitOpsCRDs installs the Argo CD and Flux CRDs of fixtures/crds.
func installGitOpsCRDs(t *testing.T) {
	t.Helper()
	crds, err := filepath.Glob("../../fixtures/crds/*.yaml")
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs in fixtures/crds: %v", err)
	}
	for _, f := range crds {
		for _, crd := range docs(t, f) {
			cluster.InstallCRD(t.Context(), t, crd)
		}
	}
}

// testHubAndSpoke: an Application that deploys to another cluster lives where Argo
// CD runs. Unless that cluster is configured, its live state is not read (a note,
// never a false controller-missing); once it is, the Application is read there.
func testHubAndSpoke(t *testing.T) {
	dir := "../../fixtures/gitops-scenarios/05-sync-disabled"
	toSpoke := [2]string{"server: https://kubernetes.default.svc", "name: spoke"}
	src := copyTree(t, dir, map[string][2]string{
		"base/argocd/g05-missing.yaml": toSpoke, "head/argocd/g05-missing.yaml": toSpoke,
	})
	repo := gitRepo(t, filepath.Join(src, "base"), filepath.Join(src, "head"))
	gitopsNamespaces(t, dir)
	for _, s := range gitopsSteps(t, dir) {
		seedGitOps(t, dir, s)
	}
	test := Cluster{Name: "test", Config: cluster.Config(), LiveMode: "simulate"}
	spoke := Cluster{Name: "spoke", Config: cluster.Config(), LiveMode: "simulate"}
	run := func(argo *Cluster) *diffing.Report {
		rep, err := Run(t.Context(), Request{
			RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL},
			DefaultCluster: &test, Clusters: map[string]Cluster{"spoke": spoke}, ArgoCDCluster: argo,
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	rep := run(nil)
	assertFindings(t, rep, nil, []string{"controller-missing"}, false)
	tr := targetNamed(t, rep, "g05-missing")
	if tr.Cluster != "spoke" || !slices.ContainsFunc(tr.Notes, func(n string) bool { return strings.Contains(n, "the cluster Argo CD runs in is not configured") }) {
		t.Errorf("a spoke Application without a configured Argo CD cluster must say it was not read; cluster %q, notes %q", tr.Cluster, tr.Notes)
	}

	rep = run(&test)
	assertFindings(t, rep, []string{"controller-missing Application/argocd/g05-missing"}, nil, false)
}

// runGitOps seeds the cluster from dir's live/steps.yaml, runs the preview with no
// config and returns the report, its stable Markdown and its JSON.
func runGitOps(t *testing.T, dir string) (*diffing.Report, string, []byte) {
	t.Helper()
	ctx := t.Context()
	// A scenario with repo/, oci/ or git/ folders serves them (remotefixture_test.go).
	var sf *servedFixture
	var fetcher *remote.Fetcher
	if hasRemoteFolders(dir) {
		sf = remoteFixture(t, dir)
		dir, fetcher = sf.Dir, sf.Fetcher
	}
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	gitopsNamespaces(t, dir)
	for _, s := range gitopsSteps(t, dir) {
		seedGitOps(t, dir, s)
	}
	// Every target is compared (AllTargets), as in runScenario: the no-op
	// scenarios (40-43) check the live comparison of targets the PR does not touch.
	rep, err := Run(ctx, Request{
		RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}, AllTargets: true,
		DefaultCluster: &Cluster{Name: "test", Config: cluster.Config(), LiveMode: "simulate"},
		Remote:         fetcher,
	})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	js, err := report.JSON(rep)
	if err != nil {
		t.Fatal(err)
	}
	md := stable(report.Markdown(rep, report.DefaultOptions()))
	if sf != nil {
		md = sf.Unplace(md)
	}
	return rep, md, js
}

func assertFindings(t *testing.T, rep *diffing.Report, must, mustNot []string, failing bool) {
	t.Helper()
	got := findingLines(rep)
	for _, want := range must {
		if !slices.ContainsFunc(got, func(g string) bool { return matches(want, g) }) {
			t.Errorf("missing finding %q; got:\n  %s", want, strings.Join(got, "\n  "))
		}
	}
	for _, bad := range mustNot {
		for _, g := range got {
			if strings.Contains(g, bad) {
				t.Errorf("unexpected finding %q (no finding may contain %q)", g, bad)
			}
		}
	}
	if rep.Failing != failing {
		t.Errorf("report failing = %v, want %v; findings:\n  %s", rep.Failing, failing, strings.Join(got, "\n  "))
	}
}

// findingOf is target's finding of rule on key ("Kind/ns/name").
func findingOf(t *testing.T, rep *diffing.Report, target string, rule diffing.Rule, key string) diffing.Finding {
	t.Helper()
	for _, f := range targetNamed(t, rep, target).Findings {
		if f.Rule == rule && f.Key.String() == key {
			return f
		}
	}
	t.Errorf("%s: no %s finding on %s", target, rule, key)
	return diffing.Finding{}
}

// wantLiveDiff checks the live diff of one object: it has every line of want
// and none of the texts of not.
func wantLiveDiff(t *testing.T, rep *diffing.Report, target, key string, want, not []string) {
	t.Helper()
	for _, c := range targetNamed(t, rep, target).Changes {
		if c.Key.String() != key {
			continue
		}
		for _, w := range want {
			if !strings.Contains(c.LiveDiff, w) {
				t.Errorf("%s %s: live diff lacks %q:\n%s", target, key, w, c.LiveDiff)
			}
		}
		for _, n := range not {
			if strings.Contains(c.LiveDiff, n) {
				t.Errorf("%s %s: live diff shows %q:\n%s", target, key, n, c.LiveDiff)
			}
		}
		return
	}
	t.Errorf("%s: no change for %s", target, key)
}

// wantMessage checks that target has a finding on key whose message holds text.
func wantMessage(t *testing.T, rep *diffing.Report, target, key, text string) {
	t.Helper()
	var got []string
	for _, f := range targetNamed(t, rep, target).Findings {
		if f.Key.String() == key {
			if strings.Contains(f.Message, text) {
				return
			}
			got = append(got, string(f.Rule)+": "+f.Message)
		}
	}
	t.Errorf("%s %s: no finding says %q; got %q", target, key, text, got)
}

func targetNamed(t *testing.T, rep *diffing.Report, name string) diffing.TargetReport {
	t.Helper()
	for _, tr := range rep.Targets {
		if tr.Name == name {
			return tr
		}
	}
	var names []string
	for _, tr := range rep.Targets {
		names = append(names, tr.Name)
	}
	t.Fatalf("no target %s in the report (have %v)", name, names)
	return diffing.TargetReport{}
}

// wantChange checks one object's action in git and on the cluster.
func wantChange(t *testing.T, rep *diffing.Report, target, key string, action, liveAction diffing.Action) {
	t.Helper()
	tr := targetNamed(t, rep, target)
	for _, c := range tr.Changes {
		if c.Key.String() == key {
			if c.Action != action || c.LiveAction != liveAction {
				t.Errorf("%s %s: action %s, live %s; want %s, live %s", target, key, c.Action, c.LiveAction, action, liveAction)
			}
			return
		}
	}
	t.Errorf("%s: no change for %s", target, key)
}

// wantDeleted checks that targets[].controller.deleted is true for target and
// for no other target.
func wantDeleted(t *testing.T, js []byte, target string) {
	t.Helper()
	var doc struct {
		Targets []struct {
			Name       string         `json:"name"`
			Controller map[string]any `json:"controller"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("reading report JSON: %v", err)
	}
	for _, tr := range doc.Targets {
		if got := tr.Controller["deleted"] == true; got != (tr.Name == target) {
			t.Errorf("targets[%s].controller.deleted = %v", tr.Name, tr.Controller["deleted"])
		}
	}
}

// wantController checks targets[].controller of the report JSON, the contract CI
// jobs script against.
func wantController(t *testing.T, js []byte, target string, want map[string]any) {
	t.Helper()
	var doc struct {
		Targets []struct {
			Name       string         `json:"name"`
			Controller map[string]any `json:"controller"`
		} `json:"targets"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("reading report JSON: %v", err)
	}
	for _, tr := range doc.Targets {
		if tr.Name == target {
			if diff := cmp.Diff(want, tr.Controller); diff != "" {
				t.Errorf("targets[%s].controller (-want +got):\n%s", target, diff)
			}
			return
		}
	}
	t.Errorf("no target %s in the report JSON", target)
}

func gitopsSteps(t *testing.T, dir string) []gitopsStep {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "live", "steps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var steps []gitopsStep
	if err := yaml.UnmarshalStrict(b, &steps); err != nil {
		t.Fatalf("%s/live/steps.yaml: %v", dir, err)
	}
	return steps
}

// gitopsNamespaces creates the controllers' namespaces and every gNN namespace the
// scenario names.
func gitopsNamespaces(t *testing.T, dir string) {
	t.Helper()
	seen := map[string]bool{"argocd": true, "flux-system": true}
	nsRef := regexp.MustCompile(`(?m)^\s*(?:namespace|targetNamespace): (g\d\d[\w-]*)$`)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range nsRef.FindAllStringSubmatch(string(b), -1) {
			seen[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ns := range seen {
		_, err := cluster.Kube().CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", ns, err)
		}
	}
}

func seedGitOps(t *testing.T, dir string, s gitopsStep) {
	t.Helper()
	ctx := t.Context()
	manager := s.Manager
	if manager == "" {
		t.Fatalf("%s/live/steps.yaml: every step needs a manager", dir)
	}
	switch {
	case s.Apply != "":
		for _, obj := range docs(t, filepath.Join(dir, s.Apply)) {
			releaseFinalizers(t, obj)
			if s.ClientSide {
				cluster.ClientSideApplyAs(ctx, t, obj, manager)
				continue
			}
			cluster.ApplyAs(ctx, t, obj, manager)
			if st, ok := obj.Object["status"].(map[string]any); ok {
				cluster.SetStatusAs(ctx, t, obj, st, manager)
			}
		}
	case s.Render != "":
		opts := render.DefaultOptions()
		opts.Namespace = s.Namespace
		if s.ReleaseName != "" {
			opts.Renderer = render.RendererHelm
			opts.Helm.ReleaseName = s.ReleaseName
		}
		set, err := render.Render(ctx, filepath.Join(dir, "base"), s.Render, opts)
		if err != nil {
			t.Fatalf("rendering %s for the live state: %v", s.Render, err)
		}
		for _, o := range set.Objects {
			obj := o.Obj.DeepCopy()
			markTracking(obj, s)
			releaseFinalizers(t, obj)
			if s.ClientSide {
				cluster.ClientSideApplyAs(ctx, t, obj, manager)
				continue
			}
			cluster.ApplyAs(ctx, t, obj, manager)
		}
	case s.Scale != nil:
		cluster.ScaleAs(ctx, t, s.Scale.object(), s.Replicas, manager)
	case s.Edit != nil:
		cluster.EditAs(ctx, t, s.Edit.object(), manager, func(u *unstructured.Unstructured) {
			for p, v := range s.Set {
				if err := setPointer(u.Object, p, v); err != nil {
					t.Fatalf("%s/live/steps.yaml: %v", dir, err)
				}
			}
		})
	default:
		t.Fatalf("empty step in %s/live/steps.yaml", dir)
	}
}

// releaseFinalizers removes, when the test ends, the finalizers obj is seeded
// with (an Application's resources finalizer), as the controller that owns them
// would: no controller runs on the test cluster, and an object that keeps a
// finalizer would leave its CRD terminating when the test deletes it, failing
// every later test that installs that CRD again.
func releaseFinalizers(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	if len(obj.GetFinalizers()) == 0 {
		return
	}
	ref := obj.DeepCopy()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cluster.PatchAs(ctx, t, ref, map[string]any{"metadata": map[string]any{"finalizers": nil}}, "argocd-controller")
	})
}

// TestUnknownRepoURLIsNoted checks that a repository with no origin remote and no
// RepoURLs says in the report that Argo CD sources were matched by path only.
func TestUnknownRepoURLIsNoted(t *testing.T) {
	src := filepath.Join("..", "..", "fixtures", "repos", "argocd")
	repo := gitRepo(t, src, src)
	const note = "no repository URL is known"
	for _, tc := range []struct {
		urls []string
		want bool
	}{{nil, true}, {[]string{argoFixtureURL}, false}} {
		rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: tc.urls})
		if err != nil {
			t.Fatalf("preview: %v", err)
		}
		got := slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, note) })
		if got != tc.want {
			t.Errorf("RepoURLs %v: note %q present = %v, want %v; notes: %q", tc.urls, note, got, tc.want, rep.Notes)
		}
	}
}

// markTracking adds a step's tracking labels and annotations to obj.
func markTracking(obj *unstructured.Unstructured, s gitopsStep) {
	ns := obj.GetNamespace()
	if ns == "" {
		ns = s.Namespace
	}
	expand := strings.NewReplacer("{group}", obj.GroupVersionKind().Group, "{kind}", obj.GetKind(),
		"{namespace}", ns, "{name}", obj.GetName()).Replace
	add := func(have, marks map[string]string) map[string]string {
		if have == nil {
			have = map[string]string{}
		}
		for k, v := range marks {
			have[k] = expand(v)
		}
		return have
	}
	if len(s.Labels) > 0 {
		obj.SetLabels(add(obj.GetLabels(), s.Labels))
	}
	if len(s.Annotations) > 0 {
		obj.SetAnnotations(add(obj.GetAnnotations(), s.Annotations))
	}
}

// setPointer sets the value at a JSON pointer whose parents exist (list items by
// index).
func setPointer(obj map[string]any, pointer string, v any) error {
	segs := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	var cur any = obj
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				c[seg] = v
				return nil
			}
			cur = c[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(c) {
				return fmt.Errorf("%s: no list item %q", pointer, seg)
			}
			if last {
				c[n] = v
				return nil
			}
			cur = c[n]
		default:
			return fmt.Errorf("%s: %q is not in the object", pointer, seg)
		}
	}
	return nil
}

// wantNoOp checks that a report changes nothing, in git or live, and finds
// nothing.
func wantNoOp(t *testing.T, rep *diffing.Report, _ []byte) {
	t.Helper()
	for _, tr := range rep.Targets {
		if !tr.LiveChecked {
			t.Errorf("%s: no complete live comparison", tr.Name)
		}
		for _, c := range tr.Changes {
			if c.Action != diffing.ActionUnchanged || (c.LiveAction != "" && c.LiveAction != diffing.ActionUnchanged) {
				t.Errorf("%s: %s is %s, live %s, in a no-op PR:\n%s", tr.Name, c.Key, c.Action, c.LiveAction, c.LiveDiff)
			}
		}
	}
	if got := findingLines(rep); len(got) > 0 {
		t.Errorf("findings in a no-op PR:\n  %s", strings.Join(got, "\n  "))
	}
}

// wantNote checks that the report's notes hold one note exactly.
func wantNote(t *testing.T, notes []string, want string) {
	t.Helper()
	if !slices.Contains(notes, want) {
		t.Errorf("no note %q; notes:\n  %s", want, strings.Join(notes, "\n  "))
	}
}

// testAppSetClustersSource: the clusters generator reads Argo CD's cluster Secrets
// from the live cluster (scenario 60); the server config's argocd.clusters names
// them instead; with neither (live mode off, no static list) the ApplicationSet is
// listed as not rendered with the reason, and none of its Applications is
// reported deleted.
func testAppSetClustersSource(t *testing.T) {
	dir := "../../fixtures/gitops-scenarios/60-appset-adds-cluster"
	repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
	gitopsNamespaces(t, dir)
	for _, s := range gitopsSteps(t, dir) {
		seedGitOps(t, dir, s)
	}
	run := func(def Cluster, static []gitops.ArgoCluster) *diffing.Report {
		rep, err := Run(t.Context(), Request{
			RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL},
			DefaultCluster: &def, ArgoClusters: static,
		})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	live := Cluster{Name: "test", Config: cluster.Config(), LiveMode: "simulate"}
	labels := func(env string) map[string]string {
		return map[string]string{"g60.example.com/fleet": "addons", "g60.example.com/env": env}
	}
	// The static list replaces the live Secrets: west is not in it, south is.
	static := []gitops.ArgoCluster{
		{Name: "east", Server: "https://east.g60.example.com", Labels: labels("production")},
		{Name: "south", Server: "https://south.g60.example.com", Labels: labels("staging")},
		{Name: "lab", Server: "https://lab.g60.example.com", Labels: labels("lab")},
	}
	var names []string
	for _, tr := range run(live, static).Targets {
		names = append(names, tr.Name)
	}
	if want := []string{"g60-metrics-east", "g60-metrics-south"}; !slices.Equal(names, want) {
		t.Errorf("with argocd.clusters the targets are %v, want %v", names, want)
	}

	off := live
	off.LiveMode = "off"
	rep := run(off, nil)
	assertFindings(t, rep, []string{"not-rendered ApplicationSet/argocd/g60-addons"}, []string{"prune", "orphan"}, false)
	tr := targetNamed(t, rep, "g60-addons")
	if !strings.Contains(tr.Skipped, "live mode is off for cluster test, where Argo CD runs") {
		t.Errorf("skipped = %q, want the reason the cluster Secrets were not read", tr.Skipped)
	}
}

// TestControllerChangesWithoutLive previews the scenarios of issue 21 (items 4
// and 5) with no live comparison, as the CLI runs by default: a deleted
// controller object whose source is not rendered still fails the check and
// says that what it deployed is unknown; a new HelmRelease or child
// Application shows everything it deploys as created, never "No changes".
func TestControllerChangesWithoutLive(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing bool
		// cascade is a text the target's prune-cascade must hold; created are
		// "target key" changes that must be created.
		target, cascade string
		created         []string
	}{
		{name: "22-argo-app-remote-chart-deleted", failing: true, target: "g22-operator",
			cascade: "which objects is unknown: its source is not rendered (source outside this repo: https://charts.invalid/g22"},
		{name: "23-appset-loses-app-render-gap", failing: true, target: "g23-b", cascade: "1 object"},
		{name: "24-flux-ks-deleted-prune", failing: true, target: "g24-gizmos",
			cascade: ") and no live comparison was made"},
		{name: "25-argo-new-child-app", created: []string{"g25-api ConfigMap/g25/api-config", "g25-api Deployment/g25/api"}},
		{name: "26-flux-new-helmrelease", created: []string{"g26-api Deployment/g26/api", "g26-api Service/g26/api"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("..", "..", "fixtures", "gitops-scenarios", tc.name)
			repo := gitRepo(t, filepath.Join(dir, "base"), filepath.Join(dir, "head"))
			rep, err := Run(t.Context(), Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow, RepoURLs: []string{gitopsRepoURL}})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Failing != tc.failing {
				t.Errorf("failing = %v, want %v; findings:\n  %s", rep.Failing, tc.failing, strings.Join(findingLines(rep), "\n  "))
			}
			if tc.cascade != "" {
				tr := targetNamed(t, rep, tc.target)
				if !slices.ContainsFunc(tr.Findings, func(f diffing.Finding) bool {
					return f.Rule == diffing.RulePruneCascade && f.Severity == diffing.SeverityError && strings.Contains(f.Message, tc.cascade)
				}) {
					t.Errorf("%s: no prune-cascade saying %q; findings:\n  %s", tc.target, tc.cascade, strings.Join(findingLines(rep), "\n  "))
				}
			}
			for _, c := range tc.created {
				target, key, _ := strings.Cut(c, " ")
				wantChange(t, rep, target, key, diffing.ActionCreated, "")
			}
			if md := report.Markdown(rep, report.DefaultOptions()); len(tc.created) > 0 && strings.Contains(md, "No changes") {
				t.Errorf("the comment says No changes:\n%s", md)
			}
		})
	}
}
