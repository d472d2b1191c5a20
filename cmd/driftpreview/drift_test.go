package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/fixtures/cluster/testcluster"
	"github.com/driftpreview/driftpreview/fixtures/gitfixture"
)

// TestRunDrift runs `driftpreview drift` as a user does, against the real test
// apiserver: a cluster in sync exits 0 saying "no drift"; after a kubectl edit
// of a field git sets, it exits 1 naming the field, its manager and what
// happens (the target's sync.selfHeal is off: it stays).
func TestRunDrift(t *testing.T) {
	cl, err := testcluster.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Stop() })
	ctx := t.Context()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cl.WriteKubeconfig(kubeconfig, "test"); err != nil {
		t.Fatal(err)
	}
	ns := cl.Namespace(t)
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		".driftpreview.yaml": "version: 1\ntargets:\n  - name: app\n    path: app\n    namespace: " + ns + "\n    sync: {prune: true, selfHeal: false, manager: gitops-applier}\n",
		"app/settings.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  LOG_LEVEL: info\n",
	})
	repo := t.TempDir()
	if err := gitfixture.Make(repo, gitfixture.Commit{Tag: "v1", Tree: os.DirFS(src)}); err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": ns},
		"data":     map[string]any{"LOG_LEVEL": "info"},
	}}
	cl.ApplyAs(ctx, t, cm, "gitops-applier")

	drift := func(format string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"drift", "--repo", repo, "--kubeconfig", kubeconfig, "--format", format, "--quiet", "--cache-dir", "off"}, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := drift("text")
	if code != exitOK || !strings.Contains(out, "no drift in 1 target compared") {
		t.Fatalf("in sync: exit %d, want 0 and no drift:\n%s\n%s", code, out, errOut)
	}

	cl.EditAs(ctx, t, cm, "kubectl-edit", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "debug", "data", "LOG_LEVEL")
	})
	for _, format := range []string{"text", "markdown", "json"} {
		code, out, errOut := drift(format)
		if code != exitFailing {
			t.Errorf("%s after a kubectl edit: exit %d, want 1:\n%s\n%s", format, code, out, errOut)
		}
		for _, want := range []string{"/data/LOG_LEVEL", "kubectl-edit", "debug", "selfHeal is off"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s after a kubectl edit: no %q in\n%s", format, want, out)
			}
		}
	}
	if code, _, errOut := drift("html"); code != exitError || !strings.Contains(errOut, "--format must be text, markdown or json") {
		t.Errorf("--format html: exit %d, %s", code, errOut)
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"drift", "--repo", repo, "--kubeconfig", ""}, &stdout, &stderr); code != exitError || !strings.Contains(stderr.String(), "give --kubeconfig") {
		t.Errorf("no kubeconfig: exit %d, %s", code, stderr.String())
	}
}
