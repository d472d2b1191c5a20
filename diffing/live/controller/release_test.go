package controller_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/live/controller"
	"github.com/driftpreview/driftpreview/render"
)

// TestReleaseObjects: the objects a deleted HelmRelease's uninstall deletes are
// read from its newest release, kept in a Secret on the test cluster as Helm's storage driver writes it
// (sh.helm.release.v1.NAME.vN, named by the live
// HelmRelease's status.history and status.storageNamespace); only names leave
// the record, never a value of the release (issue 21, item 4).
func TestReleaseObjects(t *testing.T) {
	installCRDs(t)
	ctx := t.Context()
	ns := "rel-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if _, err := cluster.Kube().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manifest := `---
# Source: operator/templates/crd.yaml
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.rel.example.com
---
# Source: operator/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: operator-token
stringData:
  token: SECRET-VALUE-rel
---
# Source: operator/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: operator
  namespace: ` + ns + `
`
	for v := 1; v <= 2; v++ {
		m := manifest
		if v == 1 {
			m = strings.Replace(manifest, "name: operator\n", "name: operator-old\n", 1)
		}
		rel := &rspb.Release{Name: "operator", Namespace: ns, Version: v, Manifest: m,
			Config: map[string]any{"password": "SECRET-VALUE-rel"},
			Info:   &rspb.Info{Status: common.StatusDeployed}}
		storeRelease(t, ns, fmt.Sprintf("sh.helm.release.v1.operator.v%d", v), rel)
	}
	hr := seed(t, ns, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: operator
spec:
  chart: {spec: {chart: operator, sourceRef: {kind: HelmRepository, name: charts}}}
status:
  storageNamespace: `+ns+`
  history:
    - {name: operator, namespace: `+ns+`, version: 2, chartName: operator, chartVersion: 1.4.0, status: deployed}
    - {name: operator, namespace: `+ns+`, version: 1, chartName: operator, chartVersion: 1.3.0, status: superseded}
`)
	st, err := controller.Read(ctx, cluster.Config(), diffing.Controller{Kind: "HelmRelease", Name: hr.GetName(), Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	want := controller.Release{Name: "operator", StorageNamespace: ns, Version: 2}
	if st.Release != want {
		t.Fatalf("release %+v, want %+v", st.Release, want)
	}
	keys, err := controller.ReleaseObjects(ctx, cluster.Config(), st.Release)
	if err != nil {
		t.Fatal(err)
	}
	wantKeys := []render.ObjectKey{
		{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.rel.example.com"},
		{Kind: "Secret", Name: "operator-token"},
		{Group: "apps", Kind: "Deployment", Namespace: ns, Name: "operator"},
	}
	if diff := cmp.Diff(sorted(wantKeys), keys); diff != "" {
		t.Errorf("objects of release v2 (-want +got):\n%s", diff)
	}

	// A record that inflates past the cap is refused, and no error quotes it.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	fmt.Fprintf(zw, `{"manifest":"SECRET-VALUE-rel`)
	zeros := make([]byte, 1<<20)
	for range controller.MaxReleaseBytes>>20 + 1 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	_, err = cluster.Kube().CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.bomb.v1"},
		Data:       map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(bomb.Bytes()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = controller.ReleaseObjects(ctx, cluster.Config(), controller.Release{Name: "bomb", StorageNamespace: ns, Version: 1})
	if err == nil || !strings.Contains(err.Error(), "over 64 MiB unpacked") {
		t.Errorf("an inflating record gave %v, want the cap named", err)
	}
	// A release Secret that is missing says which.
	_, err = controller.ReleaseObjects(ctx, cluster.Config(), controller.Release{Name: "operator", StorageNamespace: ns, Version: 7})
	if err == nil || !strings.Contains(err.Error(), "sh.helm.release.v1.operator.v7") {
		t.Errorf("a missing release gave %v, want the Secret named", err)
	}
	for _, e := range []error{err} {
		if e != nil && strings.Contains(e.Error(), "SECRET-VALUE") {
			t.Errorf("an error quotes the release: %v", e)
		}
	}
}

func sorted(keys []render.ObjectKey) []render.ObjectKey {
	set := render.ObjectSet{}
	for _, k := range keys {
		set.Objects = append(set.Objects, render.Object{Key: k})
	}
	set.Sort()
	out := make([]render.ObjectKey, len(keys))
	for i, o := range set.Objects {
		out[i] = o.Key
	}
	return out
}

// storeRelease writes rel as Helm's Secrets storage driver does: the release's
// JSON, gzipped, base64 in data.release, labelled owner=helm (helm
// pkg/storage/driver/util.go encodeRelease, secrets.go newSecretsObject; the
// driver itself is not imported, it pulls in the SQL driver's modules).
func storeRelease(t *testing.T, ns, name string, rel *rspb.Release) {
	t.Helper()
	b, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(b)
	_ = zw.Close()
	_, err = cluster.Kube().CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"owner": "helm", "name": rel.Name, "status": string(rel.Info.Status), "version": fmt.Sprint(rel.Version)}},
		Type:       "helm.sh/release.v1",
		Data:       map[string][]byte{"release": []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}
