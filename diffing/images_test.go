package diffing

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/render"
)

// TestImageChanges: Diff lists the images a PR changes, adds and removes, in
// containers and initContainers of every workload kind's pod template
// (CronJob's two levels down), and none of an unchanged image (issue 23).
func TestImageChanges(t *testing.T) {
	base := set(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      initContainers: [{name: migrate, image: "ghcr.io/acme/web:1.4.0"}]
      containers:
      - {name: app, image: "ghcr.io/acme/web:1.4.0"}
      - {name: proxy, image: "envoyproxy/envoy:v1.30"}
      - {name: old, image: "busybox:1.36"}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: shop}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: dump, image: "registry:5000/tools/pgdump@sha256:aaa"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data: {image: "x:1"}
`)
	head := set(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      initContainers: [{name: migrate, image: "ghcr.io/acme/web:1.5.0"}]
      containers:
      - {name: app, image: "ghcr.io/acme/web:1.5.0"}
      - {name: proxy, image: "envoyproxy/envoy:v1.30"}
      - {name: sidecar, image: "fluent/fluent-bit:3.0"}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: shop}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: dump, image: "registry:5000/tools/pgdump@sha256:bbb"}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
data: {image: "x:2"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: cache, namespace: shop}
spec:
  template:
    spec:
      containers: [{name: redis, image: "redis:7.2"}]
`)
	tr := Diff(Input{Name: "t", Base: base, Head: head}, DefaultOptions())
	cron := render.ObjectKey{Group: "batch", Kind: "CronJob", Namespace: "shop", Name: "backup"}
	sts := render.ObjectKey{Group: "apps", Kind: "StatefulSet", Namespace: "shop", Name: "cache"}
	dep := render.ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	want := []ImageChange{
		{Object: dep, List: "initContainers", Container: "migrate", Before: "ghcr.io/acme/web:1.4.0", After: "ghcr.io/acme/web:1.5.0"},
		{Object: dep, List: "containers", Container: "app", Before: "ghcr.io/acme/web:1.4.0", After: "ghcr.io/acme/web:1.5.0"},
		{Object: dep, List: "containers", Container: "sidecar", After: "fluent/fluent-bit:3.0"},
		{Object: dep, List: "containers", Container: "old", Before: "busybox:1.36"},
		{Object: sts, List: "containers", Container: "redis", After: "redis:7.2"},
		{Object: cron, List: "containers", Container: "dump", Before: "registry:5000/tools/pgdump@sha256:aaa", After: "registry:5000/tools/pgdump@sha256:bbb"},
	}
	if diff := cmp.Diff(want, tr.Images); diff != "" {
		t.Errorf("Images (-want +got):\n%s", diff)
	}
}

func TestSplitImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"redis":                      {"redis", ""},
		"redis:7.2":                  {"redis", ":7.2"},
		"registry:5000/tools/pg":     {"registry:5000/tools/pg", ""},
		"registry:5000/tools/pg:16":  {"registry:5000/tools/pg", ":16"},
		"ghcr.io/a/b:1.0@sha256:abc": {"ghcr.io/a/b:1.0", "@sha256:abc"},
		"ghcr.io/a/b@sha256:abc":     {"ghcr.io/a/b", "@sha256:abc"},
	} {
		repo, v := SplitImage(ref)
		if repo != want[0] || v != want[1] {
			t.Errorf("SplitImage(%q) = %q, %q; want %q, %q", ref, repo, v, want[0], want[1])
		}
	}
}
