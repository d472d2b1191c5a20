package diffing

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

const webBase = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

// webLive is web as the cluster holds it: scaled to 7 by an HPA
// (kube-controller-manager owns spec.replicas) with an injected sidecar.
const webLive = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  uid: 3f1c2b8a-0000-4000-8000-000000000001
  resourceVersion: "981"
  generation: 4
  creationTimestamp: "2026-10-01T10:00:00Z"
  annotations:
    deployment.kubernetes.io/revision: "4"
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: apps/v1
    time: "2026-10-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:selector: {}
        f:template:
          f:metadata:
            f:labels:
              f:app: {}
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:image: {}
                f:name: {}
  - manager: kube-controller-manager
    operation: Update
    apiVersion: apps/v1
    subresource: scale
    time: "2026-11-28T09:30:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
spec:
  replicas: 7
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
status:
  replicas: 7
`

const settingsBase = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  LOG_LEVEL: info
  REGION: eu
`

// settingsLive was hand-edited: kubectl-edit owns data.LOG_LEVEL.
const settingsLive = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
  resourceVersion: "77"
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    apiVersion: v1
    time: "2026-10-01T10:00:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        f:REGION: {}
  - manager: kubectl-edit
    operation: Update
    apiVersion: v1
    time: "2026-11-02T03:14:00Z"
    fieldsType: FieldsV1
    fieldsV1:
      f:data:
        f:LOG_LEVEL: {}
data:
  LOG_LEVEL: debug
  REGION: eu
`

func ts(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// predict sets the prediction of head applied onto live for one key: the live
// object with head's fields over it (enough for these tests' flat changes).
func predict(t *testing.T, ls *LiveState, predicted string, conflicts ...Conflict) {
	t.Helper()
	o := obj(t, predicted)
	ls.Predictions[render.KeyOf(o)] = Prediction{Object: o, Conflicts: conflicts}
}

var (
	keyWeb      = key("apps", "Deployment", "shop", "web")
	keySettings = key("", "ConfigMap", "shop", "settings")
)

func TestDiffLive(t *testing.T) {
	webHead := strings.Replace(strings.Replace(webBase, "replicas: 2", "replicas: 3", 1), "nginx:1.25", "nginx:1.27", 1)
	webPredicted := strings.Replace(strings.Replace(webLive, "replicas: 7\n  selector", "replicas: 3\n  selector", 1), "image: nginx:1.25", "image: nginx:1.27", 1)
	settingsPredicted := strings.Replace(settingsLive, "LOG_LEVEL: debug", "LOG_LEVEL: info", 1)
	hpa := Conflict{Path: "/spec/replicas", Manager: "kube-controller-manager", Operation: "Update", Time: ts("2026-11-28T09:30:00Z"), Live: int64(7), Head: int64(3)}
	edit := Conflict{Path: "/data/LOG_LEVEL", Manager: "kubectl-edit", Operation: "Update", Time: ts("2026-11-02T03:14:00Z"), Live: "debug", Head: "info"}

	runDiffCases(t, []diffCase{
		{
			name: "field-conflict with an HPA",
			in: func(t *testing.T) Input {
				ls := liveState(t, webLive)
				predict(t, ls, webPredicted, hpa)
				return Input{Base: set(t, webBase), Head: set(t, webHead), Live: ls}
			},
			want: []string{"warning field-conflict Deployment/shop/web /spec/replicas by kube-controller-manager"},
			check: func(t *testing.T, got TargetReport) {
				f := got.Findings[0]
				want := "`/spec/replicas` is owned by `kube-controller-manager` (an HPA). The PR sets `3` and live is `7`, so the two controllers will fight."
				if f.Message != want {
					t.Errorf("message:\n got %s\nwant %s", f.Message, want)
				}
				if f.Since == nil || !f.Since.Equal(*hpa.Time) {
					t.Errorf("Since = %v, want %v", f.Since, hpa.Time)
				}
				if !got.LiveChecked || got.LiveMode != "simulate" || got.Cluster != "prod" {
					t.Errorf("LiveChecked %v LiveMode %q Cluster %q", got.LiveChecked, got.LiveMode, got.Cluster)
				}
				if diff := cmp.Diff([]string{"modified Deployment/shop/web live:modified"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
				wantLive := "@@ -4,7 +4,7 @@\n   name: web\n   namespace: shop\n spec:\n-  replicas: 7\n+  replicas: 3\n   selector:\n     matchLabels:\n       app: web\n@@ -14,5 +14,5 @@\n         app: web\n     spec:\n       containers:\n-      - image: nginx:1.25\n+      - image: nginx:1.27\n         name: web\n"
				if diff := cmp.Diff(wantLive, got.Changes[0].LiveDiff); diff != "" {
					t.Errorf("LiveDiff (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "field-conflicts name webhooks and skip the own manager and equal values",
			in: func(t *testing.T) Input {
				ls := liveState(t, webLive)
				predict(t, ls, webPredicted,
					Conflict{Path: "/spec/template/metadata/annotations/sidecar.istio.io~1status", Manager: "istio-sidecar-injector", Live: "a", Head: "b"},
					Conflict{Path: "/spec/template/spec/containers/0/resources", Manager: "vpa-updater", Live: map[string]any{"cpu": "1"}, Head: map[string]any{"cpu": "2"}},
					Conflict{Path: "/metadata/labels/tier", Manager: "policy-webhook", Live: "x", Head: "y"},
					Conflict{Path: "/spec/paused", Manager: "kustomize-controller", Live: true, Head: false},
					Conflict{Path: "/spec/minReadySeconds", Manager: "other-operator", Live: int64(5), Head: float64(5)},
				)
				return Input{Base: set(t, webBase), Head: set(t, webHead), Live: ls}
			},
			want: []string{
				"warning field-conflict Deployment/shop/web /metadata/labels/tier by policy-webhook",
				"warning field-conflict Deployment/shop/web /spec/template/metadata/annotations/sidecar.istio.io~1status by istio-sidecar-injector",
				"warning field-conflict Deployment/shop/web /spec/template/spec/containers/0/resources by vpa-updater",
			},
		},
		{
			name: "live-drift from a kubectl-edit conflict",
			in: func(t *testing.T) Input {
				ls := liveState(t, settingsLive)
				predict(t, ls, settingsPredicted, edit)
				return Input{Base: set(t, settingsBase), Head: set(t, settingsBase), Live: ls}
			},
			want: []string{"warning live-drift ConfigMap/shop/settings /data/LOG_LEVEL by kubectl-edit"},
			check: func(t *testing.T, got TargetReport) {
				want := "`/data/LOG_LEVEL` was changed to `debug` by `kubectl-edit` on 2026-11-02 03:14 UTC. This merge reverts it to `info`."
				if got.Findings[0].Message != want {
					t.Errorf("message:\n got %s\nwant %s", got.Findings[0].Message, want)
				}
				if diff := cmp.Diff([]string{"unchanged ConfigMap/shop/settings live:modified reverts-drift"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "live-drift found from managedFields without a conflict",
			in: func(t *testing.T) Input {
				ls := liveState(t, settingsLive)
				predict(t, ls, settingsPredicted) // a forced apply reports no conflicts
				return Input{Base: set(t, settingsBase), Head: set(t, settingsBase), Live: ls}
			},
			want: []string{"warning live-drift ConfigMap/shop/settings /data/LOG_LEVEL by kubectl-edit"},
		},
		{
			name: "a PR change to a human-owned field is not drift",
			in: func(t *testing.T) Input {
				live := strings.Replace(settingsLive, "LOG_LEVEL: debug", "LOG_LEVEL: info", 1)
				head := strings.Replace(settingsBase, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1)
				ls := liveState(t, live)
				predict(t, ls, strings.Replace(live, "LOG_LEVEL: info", "LOG_LEVEL: warn", 1),
					Conflict{Path: "/data/LOG_LEVEL", Manager: "kubectl-edit", Live: "info", Head: "warn"})
				return Input{Base: set(t, settingsBase), Head: set(t, head), Live: ls}
			},
			want: []string{},
		},
		{
			name: "a merge that keeps the hand edit is not drift",
			in: func(t *testing.T) Input {
				head := strings.Replace(settingsBase, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)
				ls := liveState(t, settingsLive)
				predict(t, ls, settingsLive)
				return Input{Base: set(t, settingsBase), Head: set(t, head), Live: ls}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"modified ConfigMap/shop/settings live:unchanged"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "a proven no-op keeps the hand edit",
			in: func(t *testing.T) Input {
				head := strings.Replace(settingsBase, "LOG_LEVEL: info", "LOG_LEVEL: debug", 1)
				ls := liveState(t, settingsLive)
				// The prediction is live itself, as simulate gives a proven no-op.
				ls.Predictions[keySettings] = Prediction{Object: ls.Objects[keySettings]}
				return Input{Base: set(t, settingsBase), Head: set(t, head), Live: ls}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"modified ConfigMap/shop/settings live:unchanged"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "configured human manager",
			in: func(t *testing.T) Input {
				ls := liveState(t, strings.ReplaceAll(settingsLive, "kubectl-edit", "k9s"))
				predict(t, ls, settingsPredicted, Conflict{Path: "/data/LOG_LEVEL", Manager: "k9s", Live: "debug", Head: "info"})
				return Input{Base: set(t, settingsBase), Head: set(t, settingsBase), Live: ls}
			},
			opts: func(o *Options) { o.HumanManagers = []string{"k9s"} },
			want: []string{"warning live-drift ConfigMap/shop/settings /data/LOG_LEVEL by k9s"},
		},
		{
			name: "live-unavailable shows no live diff",
			in: func(t *testing.T) Input {
				ls := liveState(t, webLive)
				predict(t, ls, webPredicted, hpa)
				ls.Err = errors.New("listing deployments.apps in shop: connection refused")
				return Input{Base: set(t, webBase+"---\n"+pvcCache), Head: set(t, webHead), Live: ls}
			},
			want: []string{"error live-unavailable /", "error prune-stateful PersistentVolumeClaim/shop/cache"},
			check: func(t *testing.T, got TargetReport) {
				if got.LiveChecked {
					t.Error("LiveChecked with an unreadable cluster")
				}
				for _, c := range got.Changes {
					if c.LiveDiff != "" || c.LiveAction != "" || c.RevertsDrift {
						t.Errorf("%s has live results although live failed: %+v", c.Key, c)
					}
				}
				if !strings.Contains(got.Findings[0].Message, "`prod`") || !strings.Contains(got.Findings[0].Message, "connection refused") {
					t.Errorf("live-unavailable must name cluster and error: %s", got.Findings[0].Message)
				}
			},
		},
		{
			name: "a missing prediction is reported, not skipped",
			in: func(t *testing.T) Input {
				return Input{Base: set(t, webBase), Head: set(t, webHead), Live: liveState(t, webLive)}
			},
			want: []string{"error live-unavailable Deployment/shop/web"},
			check: func(t *testing.T, got TargetReport) {
				if got.LiveChecked {
					t.Error("LiveChecked with a missing prediction")
				}
			},
		},
		{
			name: "created live object",
			in: func(t *testing.T) Input {
				return Input{Head: set(t, settingsBase), Live: liveState(t, "")}
			},
			want: []string{},
			check: func(t *testing.T, got TargetReport) {
				if diff := cmp.Diff([]string{"created ConfigMap/shop/settings live:created"}, actions(got.Changes)); diff != "" {
					t.Errorf("changes (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "apply-error from admission",
			in: func(t *testing.T) Input {
				ls := liveState(t, settingsLive)
				ls.Predictions[keySettings] = Prediction{Err: errors.New(`admission webhook "validate.kyverno.svc" denied the request: label team is required`)}
				return Input{Base: set(t, settingsBase), Head: set(t, settingsBase), Live: ls}
			},
			want: []string{"error apply-error ConfigMap/shop/settings"},
		},
	})
}

func TestFieldOwners(t *testing.T) {
	owners := fieldOwners(obj(t, webLive))
	got := map[string]string{}
	for p, os := range owners {
		for _, o := range os {
			got[p] += o.Manager
		}
	}
	want := map[string]string{
		"/spec/selector":                         "kustomize-controller",
		"/spec/template/metadata/labels/app":     "kustomize-controller",
		"/spec/template/spec/containers/0":       "kustomize-controller",
		"/spec/template/spec/containers/0/image": "kustomize-controller",
		"/spec/template/spec/containers/0/name":  "kustomize-controller",
		"/spec/replicas":                         "kube-controller-manager",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fieldOwners (-want +got):\n%s", diff)
	}
}

func TestErrorPath(t *testing.T) {
	tests := map[string]string{
		`Deployment.apps "web" is invalid: spec.selector: Invalid value: v1.LabelSelector{}: field is immutable`:                        "/spec/selector",
		`StatefulSet.apps "db" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas' are forbidden`: "/spec",
		`Job.batch "x" is invalid: spec.template.spec.containers[0].image: Invalid value: "a": field is immutable`:                      "/spec/template/spec/containers/0/image",
		`something else entirely`: "",
	}
	for in, want := range tests {
		if got := errorPath(in); got != want {
			t.Errorf("errorPath(%q) = %q, want %q", in, got, want)
		}
	}
}
