package preview

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// writeFleet writes n kustomize apps of four objects each (ConfigMap, Service,
// Deployment, PVC) under root/apps/app-N, with a config naming them as targets.
func writeFleet(b testing.TB, root string, n int, image string) {
	b.Helper()
	var cfg strings.Builder
	cfg.WriteString("version: 1\ntargets:\n")
	for i := range n {
		dir := filepath.Join(root, "apps", fmt.Sprintf("app-%03d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		ns := fmt.Sprintf("bench-%03d", i)
		files := map[string]string{
			"kustomization.yaml": "resources: [app.yaml]\nnamespace: " + ns + "\nnamePrefix: prod-\n",
			"app.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {LOG_LEVEL: info, REGION: eu-west-1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "` + image + `"}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
`,
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		fmt.Fprintf(&cfg, "  - {name: app-%03d, path: apps/app-%03d, sync: {prune: true, manager: kustomize-controller}}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(root, ".driftpreview.yaml"), []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkPreview runs the whole pipeline (git checkouts, config, render of 50
// kustomize targets × 4 objects at base and head, diff, report) on a PR that bumps
// every image; "live" adds the read-only simulation against the real test cluster
// (objects absent live, so it measures discovery, 50 namespaces × 4 LISTs and
// predictions).
func BenchmarkPreview(b *testing.B) {
	base, head := b.TempDir(), b.TempDir()
	writeFleet(b, base, 50, "nginx:1.25")
	writeFleet(b, head, 50, "nginx:1.27")
	repo := gitfixture.BaseHead(b, base, head)
	for _, mode := range []diffing.LiveMode{diffing.LiveOff, diffing.LiveSimulate} {
		b.Run("live="+string(mode), func(b *testing.B) {
			req := Request{RepoDir: repo, Base: "base", Head: "head", Now: scenarioNow}
			if mode != diffing.LiveOff {
				req.DefaultCluster = &Cluster{Name: "bench", Config: cluster.Config(), LiveMode: mode}
			}
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Run(b.Context(), req)
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Targets) != 50 || rep.Targets[0].Summary.Modified != 1 {
					b.Fatalf("unexpected report: %d targets, %+v", len(rep.Targets), rep.Targets[0].Summary)
				}
			}
		})
	}
}
