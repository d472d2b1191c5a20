package live_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live"
	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
)

// BenchmarkRead reads a target of 200 live objects (120 ConfigMaps, 40 Deployments,
// 40 Secrets) whose head changes every object, in both modes with warm caches, and
// in simulate mode with a new Reader each time. ns/object is the cost of one
// object's server-side-apply simulation (or dry-run), its share of the LISTs
// included. simulate-unchanged reads the same target with head equal to what is
// live (the common object of a PR), whose applies simulate finds to be no-ops,
// and simulate-unchanged-full the same without that shortcut.
//
//	go test ./diffing/live -run '^$' -bench Read -benchtime 5x
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	ns := cluster.Namespace(b)
	var base, head []*unstructured.Unstructured
	add := func(live, next *unstructured.Unstructured) {
		cluster.ApplyAs(ctx, b, live, "kustomize-controller")
		base, head = append(base, live), append(head, next)
	}
	for i := range 120 {
		name := fmt.Sprintf("cm-%03d", i)
		add(configMap(b, ns, name, map[string]any{"k": "v", "n": fmt.Sprint(i)}),
			configMap(b, ns, name, map[string]any{"k": "changed", "n": fmt.Sprint(i)}))
	}
	for i := range 40 {
		d := deployment(b, ns, 2, fmt.Sprintf("app-%d", i))
		d.SetName(fmt.Sprintf("web-%02d", i))
		next := d.DeepCopy()
		_ = unstructured.SetNestedField(next.Object, int64(3), "spec", "replicas")
		add(d, next)
	}
	for i := range 40 {
		s := testcluster.FromYAML(b, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s-%02d, namespace: %s}, stringData: {p: one}}`, i, ns))
		next := testcluster.FromYAML(b, fmt.Sprintf(`{apiVersion: v1, kind: Secret, metadata: {name: s-%02d, namespace: %s}, stringData: {p: two}}`, i, ns))
		add(s, next)
	}
	baseSet, headSet := set(base...), set(head...)
	// cold: a new Reader each time, so discovery and OpenAPI schemas are read and
	// built again, as for the first preview against a cluster.
	b.Run("simulate-cold", func(b *testing.B) {
		for b.Loop() {
			if st := reader(b, nil).Read(ctx, baseSet, headSet, opts(ns)); st.Err != nil {
				b.Fatal(st.Err)
			}
		}
	})
	for _, full := range []bool{false, true} {
		name := "simulate-unchanged"
		if full {
			name += "-full"
		}
		b.Run(name, func(b *testing.B) {
			defer live.SetShortcuts(!full)()
			r := reader(b, nil)
			o := opts(ns)
			mustRead(b, r, baseSet, baseSet, o)
			_, before := live.Simulations()
			for b.Loop() {
				st := r.Read(ctx, baseSet, baseSet, o)
				if st.Err != nil {
					b.Fatal(st.Err)
				}
				for k, p := range st.Predictions {
					if p.Err != nil {
						b.Fatalf("%s: %v", k, p.Err)
					}
				}
			}
			_, after := live.Simulations()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/object")
			b.ReportMetric(float64(after-before)/float64(b.N), "noops/op")
		})
	}
	for _, mode := range []diffing.LiveMode{live.ModeSimulate, live.ModeDryRun} {
		b.Run(string(mode), func(b *testing.B) {
			r := reader(b, nil)
			o := opts(ns)
			o.Mode = mode
			mustRead(b, r, baseSet, headSet, o) // warm the discovery and schema caches
			for b.Loop() {
				st := r.Read(ctx, baseSet, headSet, o)
				if st.Err != nil {
					b.Fatal(st.Err)
				}
				if len(st.Predictions) != 200 {
					b.Fatalf("%d predictions, want 200", len(st.Predictions))
				}
				for k, p := range st.Predictions {
					if p.Err != nil {
						b.Fatalf("%s: %v", k, p.Err)
					}
				}
			}
			// the SSA simulation (or dry-run) per object, LISTs included
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*200), "ns/object")
		})
	}
}

// BenchmarkList decodes a LIST of 300 ConfigMaps (with their managed fields) the
// way Read does (one pass) and the way client-go's dynamic client does.
//
//	go test ./diffing/live -run '^$' -bench List -benchtime 20x
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	ns := cluster.Namespace(b)
	for i := range 300 {
		cm := configMap(b, ns, fmt.Sprintf("cm-%03d", i), map[string]any{"k": "v", "n": fmt.Sprint(i), "text": strings.Repeat("x", 200)})
		cluster.ApplyAs(ctx, b, cm, "kustomize-controller")
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	opts := metav1.ListOptions{Limit: 500}
	b.Run("one-pass", func(b *testing.B) {
		r := reader(b, nil)
		for b.Loop() {
			if items, _, err := live.ListPage(ctx, r, gvr, ns, opts); err != nil || len(items) != 300 {
				b.Fatal(len(items), err)
			}
		}
	})
	b.Run("dynamic", func(b *testing.B) {
		dyn := cluster.Dynamic()
		for b.Loop() {
			if l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, opts); err != nil || len(l.Items) != 300 {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCanonical compares what a changed Deployment's prediction costs in
// canonical form: canonical on the field manager's answer (as large as the live
// object: defaults, status, managed fields), which simulate skips when head is
// canonical, and isCanonical on head, which decides that.
//
//	go test ./diffing/live -run '^$' -bench Canonical
func BenchmarkCanonical(b *testing.B) {
	ctx := context.Background()
	ns := cluster.Namespace(b)
	head := testcluster.FromYAML(b, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: `+ns+`, labels: {app: web, tier: backend}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}, annotations: {checksum/config: abc}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, name: http}, {containerPort: 9090, name: metrics}]
        env: [{name: A, value: "1"}, {name: B, value: "2"}, {name: C, value: "3"}]
        resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {cpu: "1", memory: 512Mi}}
        readinessProbe: {httpGet: {path: /healthz, port: http}, periodSeconds: 5}
        volumeMounts: [{name: config, mountPath: /etc/web}]
      volumes: [{name: config, configMap: {name: web}}]
`)
	merged := cluster.ApplyAs(ctx, b, head, "kustomize-controller")
	if !live.IsCanonical(head) {
		b.Fatal("head is not canonical")
	}
	b.Run("canonical-merged", func(b *testing.B) {
		for b.Loop() {
			live.Canonical(merged.DeepCopy())
		}
	})
	b.Run("deepcopy-merged", func(b *testing.B) {
		for b.Loop() {
			merged.DeepCopy()
		}
	})
	b.Run("is-canonical-head", func(b *testing.B) {
		for b.Loop() {
			live.IsCanonical(head)
		}
	})
}

// BenchmarkDryRunWide reads a target of 200 live ConfigMaps of which head changes
// one in five (the shape of the bench's PR-wide: an image tag moves, the rest
// stays) in simulate mode, in dry-run mode, and in dry-run mode as it was before
// issue 25 (every object sent, behind client-go's client-side limit of QPS 50,
// burst 100). dryruns/op counts the dry-run requests the apiserver receives,
// cpu-ms/op the user+sys CPU of this process (the client; the apiserver is
// another process), which on a loaded machine says more than ns/op.
//
//	go test ./diffing/live -run '^$' -bench DryRunWide -benchtime 3x
func BenchmarkDryRunWide(b *testing.B) {
	ctx := context.Background()
	ns := cluster.Namespace(b)
	var base, head []*unstructured.Unstructured
	for i := range 200 {
		name := fmt.Sprintf("cm-%03d", i)
		cm := configMap(b, ns, name, map[string]any{"k": "v", "n": fmt.Sprint(i)})
		cluster.ApplyAs(ctx, b, cm, "kustomize-controller")
		next := cm.DeepCopy()
		if i%5 == 0 {
			_ = unstructured.SetNestedField(next.Object, "changed", "data", "k")
		}
		base, head = append(base, cm), append(head, next)
	}
	baseSet, headSet := set(base...), set(head...)
	for _, c := range []struct {
		name   string
		mode   diffing.LiveMode
		before bool
	}{{"simulate", live.ModeSimulate, false}, {"dry-run", live.ModeDryRun, false}, {"dry-run-before", live.ModeDryRun, true}} {
		b.Run(c.name, func(b *testing.B) {
			if c.before {
				defer live.SetShortcuts(false)()
			}
			d := &dryRuns{}
			cfg := cluster.Config()
			cfg.QPS, cfg.Burst = 0, 0
			if c.before {
				cfg.QPS, cfg.Burst = 50, 100
			}
			cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { d.next = rt; return d }
			r := reader(b, cfg)
			o := opts(ns)
			o.Mode = c.mode
			mustRead(b, r, baseSet, headSet, o) // warm the discovery and schema caches
			warm := len(d.requests())
			cpu0 := cpuTime()
			for b.Loop() {
				st := r.Read(ctx, baseSet, headSet, o)
				if st.Err != nil {
					b.Fatal(st.Err)
				}
				for k, p := range st.Predictions {
					if p.Err != nil {
						b.Fatalf("%s: %v", k, p.Err)
					}
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(d.requests())-warm)/float64(b.N), "dryruns/op")
		})
	}
}

// cpuTime is the user+sys CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeSchemas decodes the core group's OpenAPI v3 document (the
// largest a simulation reads, about 1 MB) as a Read does for its type
// converter (issue 25: every preview with a live cluster reads it once).
//
//	go test ./diffing/live -run '^$' -bench DecodeSchemas
func BenchmarkDecodeSchemas(b *testing.B) {
	disc, err := discovery.NewDiscoveryClientForConfig(cluster.Config())
	if err != nil {
		b.Fatal(err)
	}
	paths, err := disc.OpenAPIV3().Paths()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := paths["api/v1"].Schema("application/json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if s, err := live.DecodeSchemas(raw); err != nil || s == nil || len(*s) < 100 {
			b.Fatalf("%v schemas, %v", s, err)
		}
	}
}
