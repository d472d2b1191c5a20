package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

var generatedAt = time.Date(2026, 11, 29, 14, 2, 37, 0, time.UTC)

func key(group, kind, ns, name string) render.ObjectKey {
	return render.ObjectKey{Group: group, Kind: kind, Namespace: ns, Name: name}
}

var (
	pvcCache  = key("", "PersistentVolumeClaim", "shop", "cache")
	stsDB     = key("apps", "StatefulSet", "shop", "db")
	deployWeb = key("apps", "Deployment", "shop", "web")
	cmSet     = key("", "ConfigMap", "shop", "settings")
	cmLegacy  = key("", "ConfigMap", "shop", "legacy-flags")
	secCreds  = key("", "Secret", "shop", "api-creds")
	svcCanary = key("", "Service", "shop", "web-canary")
)

// exampleReport is the report behind /work/shared/COMMENT-EXAMPLE.md: two targets,
// seven findings, PR diffs, live diffs and one reverted hand edit.
func exampleReport() *diffing.Report {
	editedAt := time.Date(2026, 11, 2, 3, 14, 0, 0, time.FixedZone("CET", 3600)).Add(time.Hour)
	return &diffing.Report{
		Base:        "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
		Head:        "e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3",
		GeneratedAt: generatedAt.In(time.FixedZone("PST", -8*3600)),
		Worst:       diffing.SeverityError,
		Failing:     true,
		Targets: []diffing.TargetReport{
			{
				Name: "shop-prod", Path: "apps/shop/overlays/prod", Cluster: "prod",
				LiveChecked: true, LiveMode: "simulate", Manager: "kustomize-controller",
				Summary: diffing.Summary{Created: 1, Modified: 3, Deleted: 2, Unchanged: 14, IgnoredLines: 4},
				Worst:   diffing.SeverityError,
				Changes: []diffing.Change{
					{Key: stsDB, Action: diffing.ActionModified, Source: "apps/shop/base/db.yaml",
						Diff:       " spec:\n   volumeClaimTemplates:\n   - metadata:\n       name: data\n     spec:\n       resources:\n         requests:\n-          storage: 10Gi\n+          storage: 20Gi\n",
						LiveAction: diffing.ActionModified,
						LiveDiff:   " spec:\n   volumeClaimTemplates:\n   - metadata:\n       name: data\n     spec:\n       resources:\n         requests:\n-          storage: 10Gi\n+          storage: 20Gi\n"},
					{Key: deployWeb, Action: diffing.ActionModified, Source: "apps/shop/base/web.yaml",
						Diff: " spec:\n-  replicas: 2\n+  replicas: 3\n   template:\n     spec:\n       containers:\n-      - image: nginx:1.25\n+      - image: nginx:1.27\n         name: web\n",
						Fields: []diffing.FieldChange{
							{Path: "spec.replicas", Before: "2", After: "3"},
							{Path: "spec.template.spec.containers[name=web].image", Before: "nginx:1.25", After: "nginx:1.27"},
						},
						LiveAction: diffing.ActionModified,
						LiveDiff:   " spec:\n   template:\n     spec:\n       containers:\n-      - image: nginx:1.25\n+      - image: nginx:1.27\n         name: web\n"},
					{Key: cmSet, Action: diffing.ActionUnchanged, LiveAction: diffing.ActionModified, RevertsDrift: true,
						LiveDiff: " data:\n-  LOG_LEVEL: debug   # kubectl-edit, 2026-11-02 03:14 UTC\n+  LOG_LEVEL: info\n"},
					{Key: cmLegacy, Action: diffing.ActionDeleted, LiveAction: diffing.ActionDeleted,
						Diff:     "-apiVersion: v1\n-data:\n-  NEW_CHECKOUT: \"false\"\n-kind: ConfigMap\n-metadata:\n-  name: legacy-flags\n-  namespace: shop\n",
						LiveDiff: "-apiVersion: v1\n-data:\n-  NEW_CHECKOUT: \"false\"\n-kind: ConfigMap\n-metadata:\n-  name: legacy-flags\n-  namespace: shop\n"},
					{Key: pvcCache, Action: diffing.ActionDeleted, LiveAction: diffing.ActionDeleted,
						Diff:     "-apiVersion: v1\n-kind: PersistentVolumeClaim\n-metadata:\n-  name: cache\n-  namespace: shop\n-spec:\n-  accessModes:\n-  - ReadWriteOnce\n-  resources:\n-    requests:\n-      storage: 10Gi\n",
						LiveDiff: "-apiVersion: v1\n-kind: PersistentVolumeClaim\n-metadata:\n-  annotations:\n-    kubectl.kubernetes.io/last-applied-configuration: (hidden)\n-  name: cache\n-  namespace: shop\n-spec:\n-  accessModes:\n-  - ReadWriteOnce\n-  resources:\n-    requests:\n-      storage: 10Gi\n-  volumeName: pv-cache\n-status:\n-  phase: Bound\n"},
					{Key: secCreds, Action: diffing.ActionModified,
						Diff: " data:\n-  password: (hidden, changed)\n+  password: (hidden, changed)\n"},
					{Key: svcCanary, Action: diffing.ActionCreated, LiveAction: diffing.ActionCreated,
						Diff: "+apiVersion: v1\n+kind: Service\n+metadata:\n+  name: web-canary\n+  namespace: shop\n+spec:\n+  ports:\n+  - port: 80\n"},
				},
				Findings: []diffing.Finding{
					{Rule: diffing.RuleSecretChange, Severity: diffing.SeverityInfo, Key: secCreds, Path: "/data/password",
						Message: "Key `password` changed (values hidden)."},
					{Rule: diffing.RulePrune, Severity: diffing.SeverityWarning, Key: cmLegacy,
						Message: "Removed from git while prune is on: the controller deletes it."},
					{Rule: diffing.RuleLiveDrift, Severity: diffing.SeverityWarning, Key: cmSet, Path: "/data/LOG_LEVEL",
						Manager: "kubectl-edit", Since: &editedAt,
						Message: "`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-02 03:14 UTC. This merge reverts it to `info`."},
					{Rule: diffing.RuleFieldConflict, Severity: diffing.SeverityWarning, Key: deployWeb, Path: "/spec/replicas",
						Manager: "kube-controller-manager",
						Message: "`/spec/replicas` is owned by `kube-controller-manager` (an HPA). The PR sets 3 and live is 7, so the two controllers will fight."},
					{Rule: diffing.RulePruneStateful, Severity: diffing.SeverityError, Key: pvcCache, Failing: true,
						Message: "Removed from git while prune is on: the controller deletes it."},
					{Rule: diffing.RuleImmutableField, Severity: diffing.SeverityError, Key: stsDB, Path: "/spec/volumeClaimTemplates", Failing: true,
						Message: "`/spec/volumeClaimTemplates` cannot be updated, so the sync will fail until the StatefulSet is recreated."},
					{Rule: diffing.RuleDataLoss, Severity: diffing.SeverityError, Key: pvcCache, Failing: true,
						Message: "Pruned. Its volume `pv-cache` (10Gi) has reclaimPolicy **Delete**, so the data is destroyed."},
				},
			},
			{
				Name: "payments-prod", Path: "apps/payments", Cluster: "prod",
				LiveChecked: true, LiveMode: "simulate", Manager: "argocd-controller",
				Controller: &diffing.Controller{Kind: "Application", Name: "payments", Namespace: "argocd",
					Source: "clusters/prod/payments.yaml", AutoSync: true, Prune: true, SelfHeal: true},
				Summary: diffing.Summary{Unchanged: 9},
				Changes: []diffing.Change{{Key: key("apps", "Deployment", "payments", "api"), Action: diffing.ActionUnchanged}},
			},
		},
	}
}

// cleanReport changes one image and finds nothing.
func cleanReport() *diffing.Report {
	d := " spec:\n   template:\n     spec:\n       containers:\n-      - image: nginx:1.25\n+      - image: nginx:1.27\n         name: web\n"
	return &diffing.Report{
		Base: "1111111111111111111111111111111111111111", Head: "2222222222222222222222222222222222222222",
		GeneratedAt: generatedAt,
		Targets: []diffing.TargetReport{{
			Name: "shop-prod", Path: "apps/shop/overlays/prod", Cluster: "prod",
			LiveChecked: true, LiveMode: "dry-run", Manager: "kustomize-controller",
			Summary: diffing.Summary{Modified: 1, Unchanged: 4},
			Changes: []diffing.Change{{Key: deployWeb, Action: diffing.ActionModified, Diff: d,
				LiveAction: diffing.ActionModified, LiveDiff: d}},
		}},
	}
}

// noLiveReport has no live comparison: one target names no cluster, the other
// runs with live mode off.
func noLiveReport() *diffing.Report {
	return &diffing.Report{
		Base: "main", Head: "feature/rename", GeneratedAt: generatedAt,
		Worst: diffing.SeverityWarning,
		Targets: []diffing.TargetReport{
			{
				Name: "shop-staging", Path: "apps/shop/overlays/staging",
				Summary: diffing.Summary{Created: 1, Deleted: 1, Unchanged: 3},
				Worst:   diffing.SeverityWarning,
				Changes: []diffing.Change{
					{Key: key("apps", "Deployment", "shop", "web"), Action: diffing.ActionDeleted, Diff: "-kind: Deployment\n-metadata:\n-  name: web\n"},
					{Key: key("apps", "Deployment", "shop", "storefront"), Action: diffing.ActionCreated, Diff: "+kind: Deployment\n+metadata:\n+  name: storefront\n"},
				},
				Findings: []diffing.Finding{{Rule: diffing.RuleRename, Severity: diffing.SeverityWarning,
					Key:     key("apps", "Deployment", "shop", "web"),
					Message: "Looks renamed to Deployment `shop/storefront`: the controller deletes `web` and creates `storefront`, so pods restart."}},
				Notes: []string{"skipped README.md: not a Kubernetes object"},
			},
			{
				Name: "docs", Path: "apps/docs", Cluster: "prod", LiveMode: "off",
				Summary: diffing.Summary{Unchanged: 2},
			},
		},
	}
}

// renderErrorReport has a target that failed to render, a broken repo config, an
// expired ignore rule, and a policy that fails a warning.
func renderErrorReport() *diffing.Report {
	return &diffing.Report{
		Base: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Head: "e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3",
		GeneratedAt: generatedAt, Worst: diffing.SeverityError, Failing: true,
		Findings: []diffing.Finding{
			{Rule: diffing.RuleConfigError, Severity: diffing.SeverityError, Path: "policy.severity", Failing: true,
				Message: ".driftpreview.yaml:14: policy.severity: unknown rule \"prunes\" (did you mean \"prune\"?)"},
			{Rule: diffing.RuleIgnoreExpired, Severity: diffing.SeverityWarning,
				Message: ".driftpreview.yaml:22: the ignore rule \"HPA owns replicas\" expired on 2026-11-01 and no longer applies."},
		},
		Targets: []diffing.TargetReport{
			{
				Name: "shop-prod", Path: "apps/shop/overlays/prod", Cluster: "prod",
				Error: "apps/shop/overlays/prod/kustomization.yaml:7: accumulating resources: file `deployment.yaml` not found\n```\nresources:\n- deployment.yaml\n```",
				Worst: diffing.SeverityError,
				Findings: []diffing.Finding{{Rule: diffing.RuleRenderError, Severity: diffing.SeverityError, Failing: true,
					Path:    "apps/shop/overlays/prod/kustomization.yaml",
					Message: "apps/shop/overlays/prod/kustomization.yaml:7: accumulating resources: file `deployment.yaml` not found"}},
			},
			{
				Name: "payments-prod", Path: "apps/payments", Cluster: "prod",
				LiveChecked: true, LiveMode: "simulate", Manager: "kustomize-controller",
				Controller: &diffing.Controller{Kind: "Kustomization", Name: "payments", Namespace: "flux-system", Prune: true, AutoSync: true},
				Summary:    diffing.Summary{Modified: 1, Unchanged: 6, IgnoredFindings: 1},
				Worst:      diffing.SeverityWarning,
				Changes: []diffing.Change{{Key: key("apps", "Deployment", "payments", "api"), Action: diffing.ActionModified,
					Diff: " spec:\n-  replicas: 2\n+  replicas: 4\n", LiveAction: diffing.ActionModified, LiveDiff: " spec:\n-  replicas: 6\n+  replicas: 4\n"}},
				Findings: []diffing.Finding{{Rule: diffing.RuleFieldConflict, Severity: diffing.SeverityWarning, Failing: true,
					Key: key("apps", "Deployment", "payments", "api"), Path: "/spec/replicas", Manager: "kube-controller-manager",
					Message: "`/spec/replicas` is owned by `kube-controller-manager` (an HPA). The PR sets 4 and live is 6, so the two controllers will fight."}},
			},
		},
	}
}

// bigReport has n modified ConfigMaps with large diffs; every 60th object has a
// finding, so its diff must survive the budget.
func bigReport(n int) *diffing.Report {
	t := diffing.TargetReport{Name: "platform", Path: "platform", Cluster: "prod", LiveChecked: true,
		LiveMode: "simulate", Manager: "kustomize-controller", Summary: diffing.Summary{Modified: n}}
	for i := range n {
		k := key("", "ConfigMap", "platform", fmt.Sprintf("cm-%03d", i))
		var d strings.Builder
		d.WriteString(" data:\n")
		for j := range 40 + i%7 {
			fmt.Fprintf(&d, "-  key-%02d: old value number %d of object %d\n+  key-%02d: new value number %d of object %d\n", j, j, i, j, j, i)
		}
		t.Changes = append(t.Changes, diffing.Change{Key: k, Action: diffing.ActionModified, Diff: d.String(),
			LiveAction: diffing.ActionModified, LiveDiff: d.String()})
		if i%60 == 7 {
			t.Findings = append(t.Findings, diffing.Finding{Rule: diffing.RuleStatefulChange, Severity: diffing.SeverityWarning,
				Key: k, Message: fmt.Sprintf("finding number %d: a change that a reviewer must see.", i)})
		}
	}
	return &diffing.Report{Base: "main", Head: "big", GeneratedAt: generatedAt, Worst: diffing.SeverityWarning,
		Targets: []diffing.TargetReport{t}}
}

// manyFindingsReport has n findings whose table alone is larger than a small budget.
func manyFindingsReport(n int) *diffing.Report {
	t := diffing.TargetReport{Name: "cluster-addons", Path: "addons", Cluster: "prod", LiveChecked: true,
		LiveMode: "simulate", Summary: diffing.Summary{Deleted: n}, Worst: diffing.SeverityError}
	for i := range n {
		k := key("", "PersistentVolumeClaim", "data", fmt.Sprintf("vol-%03d", i))
		t.Changes = append(t.Changes, diffing.Change{Key: k, Action: diffing.ActionDeleted,
			Diff: fmt.Sprintf("-kind: PersistentVolumeClaim\n-metadata:\n-  name: vol-%03d\n", i)})
		t.Findings = append(t.Findings, diffing.Finding{Rule: diffing.RulePruneStateful, Severity: diffing.SeverityError, Failing: true,
			Key: k, Message: fmt.Sprintf("Removed from git while prune is on: the controller deletes it (finding %03d).", i)})
	}
	return &diffing.Report{Base: "main", Head: "cleanup", GeneratedAt: generatedAt, Worst: diffing.SeverityError,
		Failing: true, Targets: []diffing.TargetReport{t}}
}

// preExistingReport has a chart that fails to render the same way at base and
// head, next to a compared target with live drift on an object the PR does not
// change (both pre-existing) and one new secret change.
func preExistingReport() *diffing.Report {
	cm := key("", "ConfigMap", "shop", "settings")
	return &diffing.Report{
		Base: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Head: "e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3",
		GeneratedAt: generatedAt, Worst: diffing.SeverityError,
		Targets: []diffing.TargetReport{
			{
				Name: "legacy", Path: "charts/legacy", Cluster: "prod",
				Error: "base and head: charts/legacy/Chart.yaml: dependency \"redis\" is not vendored in charts/legacy/charts/",
				Worst: diffing.SeverityError,
				Findings: []diffing.Finding{{Rule: diffing.RuleRenderError, Severity: diffing.SeverityError, PreExisting: true,
					Message: "The target does not render at the base nor at the head (charts/legacy/Chart.yaml: dependency \"redis\" is not vendored in charts/legacy/charts/). The error is the same at both, so it is not this PR's, and the target is not compared."}},
			},
			{
				Name: "shop", Path: "apps/shop", Cluster: "prod",
				LiveChecked: true, LiveMode: "simulate", Manager: "kustomize-controller",
				Controller: &diffing.Controller{Kind: "Kustomization", Name: "shop", Namespace: "flux-system", Prune: true, AutoSync: true, SelfHeal: true},
				Summary:    diffing.Summary{Modified: 1, Unchanged: 1},
				Worst:      diffing.SeverityWarning,
				Changes: []diffing.Change{
					{Key: key("", "Secret", "shop", "api-creds"), Action: diffing.ActionModified, Diff: " data:\n-  password: (hidden, 12 bytes)\n+  password: (hidden, 16 bytes)\n"},
					{Key: cm, Action: diffing.ActionUnchanged, LiveAction: diffing.ActionModified, RevertsDrift: true,
						LiveDiff: " data:\n-  LOG_LEVEL: debug   # kubectl-edit, 2026-11-29 22:46 UTC\n+  LOG_LEVEL: info\n"},
				},
				Findings: []diffing.Finding{
					{Rule: diffing.RuleLiveDrift, Severity: diffing.SeverityWarning, Key: cm, Path: "/data/LOG_LEVEL", Manager: "kubectl-edit", PreExisting: true,
						Message: "`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-29 22:46 UTC. This PR does not change the object; self-heal reverts it to `info` anyway."},
					{Rule: diffing.RuleSecretChange, Severity: diffing.SeverityInfo, Key: key("", "Secret", "shop", "api-creds"),
						Message: "Key `password` changed (values hidden)."},
				},
			},
		},
	}
}

// nothingComparedReport has no target that could be compared: one fails to render
// at base and head alike, the other's source is outside the repository.
func nothingComparedReport() *diffing.Report {
	r := preExistingReport()
	r.Targets[1] = diffing.TargetReport{
		Name: "monitoring", Path: "", Cluster: "prod", Changes: []diffing.Change{},
		Controller: &diffing.Controller{Kind: "Application", Name: "monitoring", Namespace: "argocd"},
		Skipped:    "its source is https://prometheus-community.github.io/helm-charts, outside this repository",
		Worst:      diffing.SeverityInfo,
		Findings: []diffing.Finding{{Rule: diffing.RuleNotRendered, Severity: diffing.SeverityInfo, PreExisting: true,
			Message: "Not rendered: its source is https://prometheus-community.github.io/helm-charts, outside this repository."}},
	}
	return r
}
