package diffing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

const dbBase = `
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  namespace: shop
spec:
  replicas: 1
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - {name: db, image: "postgres:16"}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Gi}}
`

func TestDiffImmutableAndStateful(t *testing.T) {
	dbHead := strings.Replace(dbBase, "storage: 10Gi", "storage: 20Gi", 1)
	pvcShrunk := strings.Replace(pvcCache, "storage: 10Gi", "storage: 5Gi", 1)
	runDiffCases(t, []diffCase{
		{
			name: "immutable volumeClaimTemplates against base",
			in:   func(t *testing.T) Input { return Input{Base: set(t, dbBase), Head: set(t, dbHead)} },
			want: []string{
				// No stateful-change: it would say "applied in place" of a field that
				// cannot be updated.
				"error immutable-field StatefulSet/shop/db /spec/volumeClaimTemplates",
			},
			check: func(t *testing.T, got TargetReport) {
				want := "`/spec/volumeClaimTemplates` cannot be updated, so the sync will fail until the StatefulSet is recreated."
				if got.Findings[0].Message != want {
					t.Errorf("message:\n got %s\nwant %s", got.Findings[0].Message, want)
				}
			},
		},
		{
			name: "stateful-change names the changed fields",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, dbBase), Head: set(t, strings.Replace(strings.Replace(dbBase, "replicas: 1", "replicas: 3", 1), "postgres:16", "postgres:17", 1))}
			},
			want: []string{"warning stateful-change StatefulSet/shop/db"},
			check: func(t *testing.T, got TargetReport) {
				if !strings.Contains(got.Findings[0].Message, "`/spec/replicas` and `/spec/template`") {
					t.Errorf("stateful-change must name the fields: %s", got.Findings[0].Message)
				}
			},
		},
		{
			// A label added to a Namespace or to a StatefulSet's own metadata is not a
			// change to its data (issue 23); a change to its spec still is.
			name: "labels and annotations of a stateful object are not a stateful-change",
			in: func(t *testing.T) Input {
				ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n"
				nsHead := ns + "  labels: {team: payments}\n  annotations: {owner: ops}\n"
				dbHead := strings.Replace(dbBase, "  name: db\n", "  name: db\n  labels: {tier: data}\n", 1)
				if dbHead == dbBase {
					t.Fatal("the StatefulSet fixture changed: no label added")
				}
				return Input{Base: set(t, ns+"---\n"+dbBase), Head: set(t, nsHead+"---\n"+dbHead)}
			},
			want: []string{},
		},
		{
			name: "immutable checks against live tolerate server defaults",
			in: func(t *testing.T) Input {
				live := strings.Replace(dbBase, "      resources: {requests: {storage: 10Gi}}", "      resources: {requests: {storage: 10Gi}}\n      volumeMode: Filesystem\n    status: {phase: Pending}", 1)
				live = strings.Replace(live, "serviceName: db", "serviceName: db\n  podManagementPolicy: OrderedReady", 1)
				ls := liveState(t, live)
				predict(t, ls, live)
				return Input{Base: set(t, dbBase), Head: set(t, dbBase), Live: ls}
			},
			want: []string{},
		},
		{
			name: "immutable selector against live",
			in: func(t *testing.T) Input {
				head := strings.ReplaceAll(webBase, "{app: web}", "{app: web, tier: front}")
				ls := liveState(t, webLive)
				predict(t, ls, webLive)
				return Input{Base: set(t, webBase), Head: set(t, head), Live: ls}
			},
			want: []string{"error immutable-field Deployment/shop/web /spec/selector"},
		},
		{
			name: "a refused update leaves the live object as it is",
			in: func(t *testing.T) Input {
				head := strings.ReplaceAll(webBase, "{app: web}", "{app: web, tier: front}")
				ls := liveState(t, webLive)
				predict(t, ls, strings.ReplaceAll(webLive, "{app: web}", "{app: web, tier: front}"))
				return Input{Base: set(t, webBase), Head: set(t, head), Live: ls}
			},
			want: []string{"error immutable-field Deployment/shop/web /spec/selector"},
			check: func(t *testing.T, got TargetReport) {
				if c := got.Changes[0]; c.LiveAction != ActionUnchanged || c.LiveDiff != "" {
					t.Errorf("the sync fails, so nothing changes live; got %s with diff:\n%s", c.LiveAction, c.LiveDiff)
				}
			},
		},
		{
			name: "immutable PVC fields and shrink",
			in: func(t *testing.T) Input {
				base := strings.Replace(pvcCache, "accessModes", "storageClassName: standard\n  accessModes", 1)
				head := strings.Replace(strings.Replace(pvcShrunk, "accessModes", "storageClassName: fast\n  accessModes", 1), "ReadWriteOnce", "ReadWriteMany", 1)
				return Input{Base: set(t, base), Head: set(t, head)}
			},
			want: []string{
				"error immutable-field PersistentVolumeClaim/shop/cache /spec/accessModes",
				"error immutable-field PersistentVolumeClaim/shop/cache /spec/resources/requests/storage",
				"error immutable-field PersistentVolumeClaim/shop/cache /spec/storageClassName",
				"warning stateful-change PersistentVolumeClaim/shop/cache",
			},
		},
		{
			name: "replace recreates a PVC whose volume is deleted",
			in: func(t *testing.T) Input {
				ls := liveState(t, pvcCache)
				predict(t, ls, pvcShrunk)
				ls.Volumes[key("", "PersistentVolumeClaim", "shop", "cache")] = obj(t, pvCache)
				return Input{Base: set(t, pvcCache), Head: set(t, pvcShrunk), Live: ls}
			},
			opts: func(o *Options) { o.Replace = true },
			want: []string{
				"error data-loss PersistentVolumeClaim/shop/cache",
				"warning immutable-field PersistentVolumeClaim/shop/cache /spec/resources/requests/storage",
				"warning stateful-change PersistentVolumeClaim/shop/cache /spec/resources",
			},
		},
		{
			name: "immutable service clusterIP, roleRef and immutable ConfigMap",
			in: func(t *testing.T) Input {
				base := `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.0.0.10, ports: [{port: 80}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: readers, namespace: shop}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
subjects: [{kind: Group, name: devs}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: frozen, namespace: shop}
immutable: true
data: {A: "1"}
`
				head := strings.NewReplacer("10.0.0.10", "10.0.0.11", "name: reader}", "name: admin}", `A: "1"`, `A: "2"`).Replace(base)
				return Input{Base: set(t, base), Head: set(t, head)}
			},
			want: []string{
				"error immutable-field ConfigMap/shop/frozen /data",
				"error immutable-field Service/shop/web /spec/clusterIP",
				"error immutable-field RoleBinding/shop/readers /roleRef",
			},
		},
		{
			name: "a Service without a clusterIP in head is no change",
			in: func(t *testing.T) Input {
				live := "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {clusterIP: 10.0.0.10, clusterIPs: [10.0.0.10], ports: [{port: 80}]}\n"
				head := "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n"
				ls := liveState(t, live)
				predict(t, ls, live)
				return Input{Base: set(t, head), Head: set(t, head), Live: ls}
			},
			want: []string{},
		},
		{
			name: "immutable error from dry-run",
			in: func(t *testing.T) Input {
				ls := liveState(t, webLive)
				ls.Predictions[keyWeb] = Prediction{Err: errors.New(`Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web2"}}: field is immutable`)}
				return Input{Base: set(t, webBase), Head: set(t, webBase), Live: ls}
			},
			want: []string{"error immutable-field Deployment/shop/web /spec/selector"},
		},
	})
}

const credsBase = `
apiVersion: v1
kind: Secret
metadata:
  name: api-creds
  namespace: shop
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"data":{"password":"aHVudGVyMi1TRUNSRVQ="}}'
type: Opaque
data:
  password: aHVudGVyMi1TRUNSRVQ=
  user: YWRtaW4tU0VDUkVULXVzZXI=
  legacy: b2xkLVNFQ1JFVC12YWx1ZQ==
`

// secretValuesInTests are the plain and base64 forms of every value above; none
// may appear anywhere in a report.
var secretValuesInTests = []string{
	"hunter2-SECRET", "aHVudGVyMi1TRUNSRVQ", "admin-SECRET-user", "YWRtaW4tU0VDUkVULXVzZXI",
	"old-SECRET-value", "b2xkLVNFQ1JFVC12YWx1ZQ", "new-SECRET-token", "correct-horse-SECRET", "Y29ycmVjdC1ob3JzZS1TRUNSRVQ",
}

func TestDiffSecrets(t *testing.T) {
	head := strings.NewReplacer(
		"password: aHVudGVyMi1TRUNSRVQ=", "password: Y29ycmVjdC1ob3JzZS1TRUNSRVQ=",
		"  legacy: b2xkLVNFQ1JFVC12YWx1ZQ==\n", "",
	).Replace(credsBase) + "stringData:\n  token: new-SECRET-token\n"
	liveEdited := strings.Replace(credsBase, "name: api-creds\n", `name: api-creds
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: v1
    time: "2026-10-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:password": {}, "f:legacy": {}}, "f:type": {}}
  - manager: kubectl-edit
    operation: Update
    apiVersion: v1
    time: "2026-11-02T03:14:00Z"
    fieldsType: FieldsV1
    fieldsV1: {"f:data": {"f:user": {}}}
`, 1)
	liveEdited = strings.Replace(liveEdited, "user: YWRtaW4tU0VDUkVULXVzZXI=", "user: aHVudGVyMi1TRUNSRVQ=", 1)
	noLeak := func(t *testing.T, got TargetReport) {
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range secretValuesInTests {
			if strings.Contains(string(b), v) {
				t.Errorf("secret value %q leaked into the report JSON", v)
			}
		}
	}
	runDiffCases(t, []diffCase{
		{
			name: "secret-change hides values",
			in:   func(t *testing.T) Input { return Input{Base: set(t, credsBase), Head: set(t, head)} },
			want: []string{"info secret-change Secret/shop/api-creds"},
			check: func(t *testing.T, got TargetReport) {
				noLeak(t, got)
				want := "Key `password` changed, key `token` added, key `legacy` removed (values hidden)."
				if got.Findings[0].Message != want {
					t.Errorf("message:\n got %s\nwant %s", got.Findings[0].Message, want)
				}
				if !strings.Contains(got.Changes[0].Diff, "+  password: <hidden>  # changed (value hidden)\n") {
					t.Errorf("diff does not mark the changed value:\n%s", got.Changes[0].Diff)
				}
			},
		},
		{
			name: "secret drift hides values",
			in: func(t *testing.T) Input {
				ls := liveState(t, liveEdited)
				p := obj(t, liveEdited)
				ls.Predictions[key("", "Secret", "shop", "api-creds")] = Prediction{Object: Mask(p), Conflicts: []Conflict{{
					Path: "/data/user", Manager: "kubectl-edit", Time: ts("2026-11-02T03:14:00Z"), Live: MaskedValue, Head: MaskedValue,
				}}}
				return Input{Base: set(t, credsBase), Head: set(t, credsBase), Live: ls}
			},
			want:  []string{"warning live-drift Secret/shop/api-creds /data/user by kubectl-edit"},
			check: noLeak,
		},
		{
			name: "secret apply error is scrubbed",
			in: func(t *testing.T) Input {
				ls := liveState(t, credsBase)
				ls.Predictions[key("", "Secret", "shop", "api-creds")] = Prediction{Err: errors.New(`Secret "api-creds" is invalid: data[password]: Invalid value: "hunter2-SECRET": bad`)}
				return Input{Base: set(t, credsBase), Head: set(t, credsBase), Live: ls}
			},
			want:  []string{"error apply-error Secret/shop/api-creds"},
			check: noLeak,
		},
	})
}

func TestRenderError(t *testing.T) {
	runDiffCases(t, []diffCase{
		{
			name: "render-error in head",
			in: func(t *testing.T) Input {
				return Input{
					Base:    set(t, settingsBase),
					HeadErr: fmt.Errorf("rendering shop-prod: %w", &render.Error{File: "apps/shop/overlays/prod/kustomization.yaml", Line: 7, Err: errors.New("unknown field \"patchez\"")}),
				}
			},
			want: []string{"error render-error /"},
			check: func(t *testing.T, got TargetReport) {
				if !strings.Contains(got.Findings[0].Message, "apps/shop/overlays/prod/kustomization.yaml:7: unknown field") {
					t.Errorf("render-error must carry file:line: %s", got.Findings[0].Message)
				}
				if got.Error == "" || len(got.Changes) != 0 {
					t.Errorf("a failing head must set Error and show no changes: %q %v", got.Error, got.Changes)
				}
			},
		},
	})
}

func TestIgnoreRules(t *testing.T) {
	webHead := strings.Replace(strings.Replace(webBase, "replicas: 2", "replicas: 3", 1), "nginx:1.25", "nginx:1.27", 1)
	webPredicted := strings.Replace(strings.Replace(webLive, "replicas: 7\n  selector", "replicas: 3\n  selector", 1), "image: nginx:1.25", "image: nginx:1.27", 1)
	hpa := Conflict{Path: "/spec/replicas", Manager: "kube-controller-manager", Live: int64(7), Head: int64(3)}
	istio := Conflict{Path: "/spec/template/metadata/annotations/sidecar.istio.io~1status", Manager: "istio-sidecar-injector", Live: "a", Head: "b"}
	in := func(t *testing.T) Input {
		ls := liveState(t, webLive+"---\n"+cmLegacy)
		predict(t, ls, webPredicted, hpa, istio)
		return Input{Base: set(t, webBase+"---\n"+cmLegacy), Head: set(t, webHead), Live: ls}
	}
	runDiffCases(t, []diffCase{
		{
			name: "no ignore rules",
			in:   in,
			want: []string{
				"warning field-conflict Deployment/shop/web /spec/replicas by kube-controller-manager",
				"warning field-conflict Deployment/shop/web /spec/template/metadata/annotations/sidecar.istio.io~1status by istio-sidecar-injector",
				"warning prune ConfigMap/shop/legacy-flags",
			},
		},
		{
			name: "ignore paths hides diff lines and findings",
			in:   in,
			opts: func(o *Options) {
				o.Ignore = []IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}, Reason: "HPA owns replicas", Expires: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)}}
			},
			want: []string{
				"warning field-conflict Deployment/shop/web /spec/template/metadata/annotations/sidecar.istio.io~1status by istio-sidecar-injector",
				"warning prune ConfigMap/shop/legacy-flags",
			},
			check: func(t *testing.T, got TargetReport) {
				web := got.Changes[1]
				if strings.Contains(web.Diff, "replicas") || strings.Contains(web.LiveDiff, "replicas") {
					t.Errorf("ignored path still in diff:\n%s\n%s", web.Diff, web.LiveDiff)
				}
				want := Summary{Modified: 1, Deleted: 1, IgnoredFindings: 1, IgnoredLines: 4}
				if diff := cmp.Diff(want, got.Summary); diff != "" {
					t.Errorf("summary (-want +got):\n%s", diff)
				}
			},
		},
		{
			// Argo CD ignoreDifferences jqPathExpressions: del(expr) on both sides
			// (argo-cd util/argo/normalizers/diff_normalizer.go).
			name: "a jq path hides the selected container image",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, webBase), Head: set(t, webHead)}
			},
			opts: func(o *Options) {
				o.Ignore = []IgnoreRule{{Group: "apps", Kind: "Deployment", Origin: "apps/shop.yaml:3", Reason: "Argo CD",
					JQ: []string{`.spec.template.spec.containers[] | select(.name == "web") | .image`}}}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				d := got.Changes[0].Diff
				if strings.Contains(d, "nginx") || !strings.Contains(d, "+  replicas: 3") {
					t.Errorf("want the replicas change without the image:\n%s", d)
				}
				if got.Summary.IgnoredLines != 2 || len(got.Notes) != 0 {
					t.Errorf("IgnoredLines = %d, notes %q; want 2 and none", got.Summary.IgnoredLines, got.Notes)
				}
			},
		},
		{
			// An expression that does not parse, or fails on the object, is not
			// applied (as in Argo CD) and a note names it and its origin.
			name: "bad jq paths are notes and hide nothing",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, webBase), Head: set(t, webHead)}
			},
			opts: func(o *Options) {
				o.Ignore = []IgnoreRule{{Kind: "Deployment", Origin: "apps/shop.yaml:3", Reason: "Argo CD",
					JQ: []string{`.spec.template.spec.containers[] | select(.name ==`, `.spec.replicas[]`}}}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				if d := got.Changes[0].Diff; !strings.Contains(d, "nginx:1.27") || !strings.Contains(d, "replicas: 3") {
					t.Errorf("a bad expression hid lines:\n%s", d)
				}
				notes := strings.Join(got.Notes, "\n")
				for _, w := range []string{
					"jqPathExpressions '.spec.template.spec.containers[] | select(.name ==' in apps/shop.yaml:3 is not valid jq",
					"jqPathExpressions '.spec.replicas[]' in apps/shop.yaml:3 failed on an object (cannot iterate over",
				} {
					if !strings.Contains(notes, w) {
						t.Errorf("notes lack %q:\n%s", w, notes)
					}
				}
			},
		},
		{
			// Nothing is left to show, yet the hidden lines are counted.
			name: "a change only in ignored paths",
			in: func(t *testing.T) Input {
				replicasOnly := strings.Replace(webBase, "replicas: 2", "replicas: 3", 1)
				return Input{Base: set(t, webBase), Head: set(t, replicasOnly)}
			},
			opts: func(o *Options) {
				o.Ignore = []IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}, Reason: "HPA owns replicas"}}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				want := Summary{Unchanged: 1, IgnoredLines: 2}
				if diff := cmp.Diff(want, got.Summary); diff != "" {
					t.Errorf("summary (-want +got):\n%s", diff)
				}
				if c := got.Changes[0]; c.Action != ActionUnchanged || c.Diff != "" {
					t.Errorf("change = %s with diff %q, want unchanged without one", c.Action, c.Diff)
				}
			},
		},
		{
			name: "ignore managers and rules with globs",
			in:   in,
			opts: func(o *Options) {
				o.Ignore = []IgnoreRule{
					{Managers: []string{"istio-*"}, Reason: "mesh injects sidecars"},
					{Kind: "ConfigMap", Name: "legacy-*", Rules: []Rule{RulePrune}, Reason: "retired"},
				}
			},
			want: []string{"warning field-conflict Deployment/shop/web /spec/replicas by kube-controller-manager"},
			check: func(t *testing.T, got TargetReport) {
				if got.Summary.IgnoredFindings != 2 {
					t.Errorf("IgnoredFindings = %d, want 2", got.Summary.IgnoredFindings)
				}
			},
		},
		{
			name: "expired ignore rule no longer applies",
			in:   in,
			opts: func(o *Options) {
				// The pipeline judges expiry once per report (JudgeIgnores)
				// and gives Diff only the rules in force.
				o.Ignore, _ = JudgeIgnores([]IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}, Reason: "HPA owns replicas", Origin: ".driftpreview.yaml:12", Expires: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}}, testNow)
			},
			want: []string{
				"warning field-conflict Deployment/shop/web /spec/replicas by kube-controller-manager",
				"warning field-conflict Deployment/shop/web /spec/template/metadata/annotations/sidecar.istio.io~1status by istio-sidecar-injector",
				"warning prune ConfigMap/shop/legacy-flags",
			},
		},
	})
}

func TestPolicyOverridesOnDiff(t *testing.T) {
	tr := Diff(Input{Name: "shop", Base: set(t, cmLegacy)}, testOptions())
	r := &Report{Targets: []TargetReport{tr}}
	Finish(r, Policy{Severity: map[Rule]Severity{RulePrune: SeverityError}})
	got := []string{fmt.Sprint(r.Worst, r.Failing, r.Targets[0].Findings[0].Failing)}
	if diff := cmp.Diff([]string{"error true true"}, got); diff != "" {
		t.Errorf("policy override (-want +got):\n%s", diff)
	}
}
