package live_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/render"
)

// dryRuns is a RoundTripper that records the dry-run requests a Reader sends
// ("PATCH configmaps/name") and answers the first throttle of them with 429
// Too Many Requests and Retry-After: 1, as API Priority and Fairness rejects a
// request, without passing it on.
type dryRuns struct {
	mu       sync.Mutex
	sent     []string
	throttle int
	next     http.RoundTripper
}

func (d *dryRuns) RoundTrip(req *http.Request) (*http.Response, error) {
	if !slices.Contains(req.URL.Query()["dryRun"], "All") {
		return d.next.RoundTrip(req)
	}
	segs := strings.Split(req.URL.Path, "/")
	d.mu.Lock()
	d.sent = append(d.sent, req.Method+" "+strings.Join(segs[len(segs)-2:], "/"))
	throttled := d.throttle > 0
	if throttled {
		d.throttle--
	}
	d.mu.Unlock()
	if throttled {
		if req.Body != nil {
			_, _ = io.Copy(io.Discard, req.Body)
			_ = req.Body.Close()
		}
		body := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","code":429}`
		return &http.Response{
			StatusCode: http.StatusTooManyRequests,
			Header:     http.Header{"Content-Type": {"application/json"}, "Retry-After": {"1"}},
			Body:       io.NopCloser(strings.NewReader(body)),
			Request:    req,
		}, nil
	}
	return d.next.RoundTrip(req)
}

func (d *dryRuns) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.sent)
	slices.Sort(out)
	return out
}

// dryRunReader is a Reader on the admin config whose dry-run requests d records.
func dryRunReader(t *testing.T, d *dryRuns) *live.Reader {
	cfg := cluster.Config()
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { d.next = rt; return d }
	return reader(t, cfg)
}

// TestDryRunSendsOnlyChanges: dry-run mode sends the apiserver only the applies
// simulate cannot prove to be no-ops: of a PR that changes 1 of 12 live
// ConfigMaps and adds one, exactly the changed one and the created one, plus an
// object head leaves as it is but a kubectl edit made differ from head. The predictions are
// those of a dry-run of every object (the shortcut off), so the apiserver
// answers a skipped object with live itself.
func TestDryRunSendsOnlyChanges(t *testing.T) {
	ns := cluster.Namespace(t)
	const manager = "kustomize-controller"
	var base, head []*unstructured.Unstructured
	for i := range 12 {
		b := configMap(t, ns, fmt.Sprintf("cm-%02d", i), map[string]any{"n": fmt.Sprint(i)})
		cluster.ApplyAs(t.Context(), t, b, manager)
		base = append(base, b)
		h := b.DeepCopy()
		if i == 3 {
			_ = unstructured.SetNestedField(h.Object, "changed", "data", "n")
		}
		head = append(head, h)
	}
	cluster.EditAs(t.Context(), t, base[7], "kubectl-edit", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "edited", "data", "n")
	})
	head = append(head, configMap(t, ns, "new", map[string]any{"n": "new"}))
	o := opts(ns)
	o.Mode = live.ModeDryRun

	d := &dryRuns{}
	got := mustRead(t, dryRunReader(t, d), set(base...), set(head...), o)
	// cm-07 twice: its apply conflicts with kubectl-edit, then the forced one.
	want := []string{"PATCH configmaps/cm-03", "PATCH configmaps/cm-07", "PATCH configmaps/cm-07", "PATCH configmaps/new"}
	if diff := cmp.Diff(want, d.requests()); diff != "" {
		t.Errorf("dry-run requests (-want +got):\n%s", diff)
	}

	restore := live.SetShortcuts(false)
	all := &dryRuns{}
	oracle := mustRead(t, dryRunReader(t, all), set(base...), set(head...), o)
	restore()
	if n := len(all.requests()); n != len(head)+1 {
		t.Fatalf("without the shortcut %d dry-run requests, want one per head object and cm-07's forced one (%d)", n, len(head)+1)
	}
	for _, h := range head {
		k := render.KeyOf(h)
		g, w := got.Predictions[k], oracle.Predictions[k]
		if (g.Err == nil) != (w.Err == nil) || len(g.Conflicts) != len(w.Conflicts) {
			t.Errorf("%s: prediction %+v, the apiserver's %+v", k, g, w)
			continue
		}
		wo, gobj := w.Object.Object, g.Object.Object
		if slices.Contains(d.requests(), "PATCH configmaps/"+h.GetName()) {
			// Sent in both runs: the apiserver stamps the applying manager's
			// entry with the time of each request, which may be a second
			// apart. A skipped no-op must keep live's times, as the
			// server's dry-run does, so those are compared as they are.
			wo, gobj = runtime.DeepCopyJSON(wo), runtime.DeepCopyJSON(gobj)
			dropApplyTime(wo, o.Manager)
			dropApplyTime(gobj, o.Manager)
		}
		if diff := cmp.Diff(wo, gobj); diff != "" {
			t.Errorf("%s: predicted object differs from the apiserver's dry-run (-server +got):\n%s", k, diff)
		}
	}
}

// TestDryRunSendsWhatAdmissionMayRefuse: an unchanged object that a
// ValidatingAdmissionPolicy installed since refuses is no proven no-op: the
// apiserver runs admission on every update, and only a dry-run shows the
// refusal. With a policy on ConfigMap updates in the cluster, every ConfigMap of
// the target goes to the server, and the unchanged one is refused as the
// apiserver refuses it.
func TestDryRunSendsWhatAdmissionMayRefuse(t *testing.T) {
	ctx := t.Context()
	ns := cluster.Namespace(t)
	const manager = "kustomize-controller"
	debug := configMap(t, ns, "debug", map[string]any{"LOG_LEVEL": "debug"})
	plain := configMap(t, ns, "plain", map[string]any{"LOG_LEVEL": "info"})
	cluster.ApplyAs(ctx, t, debug, manager)
	cluster.ApplyAs(ctx, t, plain, manager)

	policy := testcluster.FromYAML(t, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: `+ns+`-no-debug}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
  - expression: "!has(object.data) || !('LOG_LEVEL' in object.data) || object.data['LOG_LEVEL'] != 'debug'"
    message: debug logging is not allowed
`)
	binding := testcluster.FromYAML(t, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: `+ns+`-no-debug}
spec:
  policyName: `+ns+`-no-debug
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {kubernetes.io/metadata.name: `+ns+`}
`)
	for _, u := range []*unstructured.Unstructured{policy, binding} {
		cluster.CreateAs(ctx, t, u, "test")
		t.Cleanup(func() {
			_ = cluster.Resource(t, u).Delete(context.Background(), u.GetName(), metav1.DeleteOptions{})
		})
	}
	// The apiserver enforces a new policy a moment after it is created.
	probe := configMap(t, ns, "probe", map[string]any{"LOG_LEVEL": "debug"})
	ri := cluster.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := ri.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy is not enforced after 30s (last answer: %v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}

	o := opts(ns)
	o.Mode = live.ModeDryRun
	d := &dryRuns{}
	objs := set(debug, plain)
	st := mustRead(t, dryRunReader(t, d), objs, objs, o)
	if diff := cmp.Diff([]string{"PATCH configmaps/debug", "PATCH configmaps/plain"}, d.requests()); diff != "" {
		t.Errorf("dry-run requests (-want +got):\n%s", diff)
	}
	p := st.Predictions[render.KeyOf(debug)]
	if p.Refusal == nil || p.Refusal.Kind != diffing.RefusalAdmission {
		t.Errorf("unchanged ConfigMap the policy refuses: prediction %+v, want an admission refusal", p)
	}
	if p := st.Predictions[render.KeyOf(plain)]; p.Err != nil {
		t.Errorf("unchanged ConfigMap the policy admits: %v", p.Err)
	}
}

// TestDryRunRetriesThrottled: a dry-run request that API Priority and Fairness
// rejects with 429 and Retry-After is sent again after the wait the server asks
// for (client-go's rest.Request), and the prediction is the apiserver's answer,
// not an error.
func TestDryRunRetriesThrottled(t *testing.T) {
	ns := cluster.Namespace(t)
	b := configMap(t, ns, "settings", map[string]any{"a": "1"})
	cluster.ApplyAs(t.Context(), t, b, "kustomize-controller")
	h := configMap(t, ns, "settings", map[string]any{"a": "2"})
	o := opts(ns)
	o.Mode = live.ModeDryRun
	d := &dryRuns{throttle: 1}
	start := time.Now()
	st := mustRead(t, dryRunReader(t, d), set(b), set(h), o)
	p := st.Predictions[render.KeyOf(h)]
	if p.Err != nil {
		t.Fatalf("throttled dry-run: %v", p.Err)
	}
	if v, _, _ := unstructured.NestedString(p.Object.Object, "data", "a"); v != "2" {
		t.Errorf("predicted data.a = %q, want 2", v)
	}
	if diff := cmp.Diff([]string{"PATCH configmaps/settings", "PATCH configmaps/settings"}, d.requests()); diff != "" {
		t.Errorf("dry-run requests (-want +got):\n%s", diff)
	}
	// Not a speed assertion: the retry must wait at least the Retry-After the
	// server gave.
	if el := time.Since(start); el < time.Second {
		t.Errorf("the retry came after %v, before the server's Retry-After of 1s", el)
	}
}
