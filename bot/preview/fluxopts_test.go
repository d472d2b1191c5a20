package preview

import (
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// TestFluxForceAgainstAPIServer proves on the apiserver what the report of
// 31-flux-force-recreate and 120-flux-helm-options says (issue 24), with the
// scenario's own Job and StatefulSet:
//   - a server-side apply of the head object is refused as immutable: the
//     dry run kustomize-controller makes first (fluxcd/pkg ssa/manager_apply.go
//     ApplyAll), so without force the sync fails;
//   - a replace (PUT, what Helm's ForceReplace sends for HelmRelease
//     spec.upgrade.force without server-side apply) is refused just the same,
//     so upgrade.force recreates nothing;
//   - deleting the object and applying head again, what force does, succeeds:
//     a new object (new UID), the Job runs again.
func TestFluxForceAgainstAPIServer(t *testing.T) {
	ctx := t.Context()
	dir := "../../fixtures/gitops-scenarios/31-flux-force-recreate"
	ns := cluster.Namespace(t)
	for _, file := range []string{"apps/g31-jobs/migrate.yaml", "apps/g31-jobs/db.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			base := docs(t, filepath.Join(dir, "base", file))[0]
			head := docs(t, filepath.Join(dir, "head", file))[0]
			base.SetNamespace(ns)
			head.SetNamespace(ns)
			live := cluster.ApplyAs(ctx, t, base, "kustomize-controller")
			res := cluster.Resource(t, head)
			body, err := yaml.Marshal(head.Object)
			if err != nil {
				t.Fatal(err)
			}
			body, err = yaml.YAMLToJSON(body)
			if err != nil {
				t.Fatal(err)
			}
			force := true
			_, err = res.Patch(ctx, head.GetName(), types.ApplyPatchType, body,
				metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force, DryRun: []string{metav1.DryRunAll}})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") && !strings.Contains(err.Error(), "Forbidden") {
				t.Fatalf("server-side apply of the changed %s: want an immutable-field refusal, got %v", head.GetKind(), err)
			}

			put := head.DeepCopy()
			put.SetResourceVersion(live.GetResourceVersion())
			if _, err := res.Update(ctx, put, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "helm-controller"}); !apierrors.IsInvalid(err) {
				t.Fatalf("replace (PUT) of the changed %s: want it refused like the patch, got %v", head.GetKind(), err)
			}

			bg := metav1.DeletePropagationBackground
			if err := res.Delete(ctx, head.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
				t.Fatalf("deleting %s: %v", head.GetName(), err)
			}
			again := cluster.ApplyAs(ctx, t, head, "kustomize-controller")
			if again.GetUID() == live.GetUID() {
				t.Errorf("the recreated %s kept its UID %s", head.GetKind(), again.GetUID())
			}
		})
	}
}
