package controller

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render"
)

// MaxReleaseBytes caps a Helm release record once decompressed: the Secret
// holding it is at most 1 MiB (etcd's object limit), and a record that
// inflates past this is refused rather than read whole.
const MaxReleaseBytes = 64 << 20

// ReleaseObjects reads the Helm release r from its Secret in storage and
// returns the key of every object its manifest holds: what `helm uninstall`
// deletes (helm pkg/action/uninstall.go deletes the release manifest's
// resources, except those annotated helm.sh/resource-policy: keep; CRDs of the
// chart's crds/ directory are not in the manifest and stay). Only apiVersion,
// kind and metadata name and namespace are read: no value of the release (its
// config, a rendered Secret) leaves this function, errors included.
// Namespaced objects without a namespace are Helm's release namespace's, which
// the caller's live read fills in.
func ReleaseObjects(ctx context.Context, cfg *rest.Config, r Release) ([]render.ObjectKey, error) {
	if r.Name == "" || r.StorageNamespace == "" || r.Version <= 0 {
		return nil, fmt.Errorf("the HelmRelease has no release in its status.history")
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading release %s: creating client: %w", r.Name, err)
	}
	s, err := kc.CoreV1().Secrets(r.StorageNamespace).Get(ctx, r.SecretName(), metav1.GetOptions{})
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			// The API's own message names the Secret, never its data.
			return nil, fmt.Errorf("reading Secret %s/%s: %s", r.StorageNamespace, r.SecretName(), status.Status().Message)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", r.StorageNamespace, r.SecretName(), err)
	}
	keys, err := decodeReleaseManifest(s.Data["release"])
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", r.StorageNamespace, r.SecretName(), err)
	}
	return keys, nil
}

// decodeReleaseManifest reads the object keys of a stored release: base64 of
// gzip of the release's JSON (helm pkg/storage/driver/util.go decodeRelease;
// records written before compression are plain JSON). Its errors never quote
// the data.
func decodeReleaseManifest(data []byte) ([]render.ObjectKey, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(data)))
	n, err := base64.StdEncoding.Decode(b, data)
	if err != nil {
		return nil, errors.New("the release record is not base64")
	}
	b = b[:n]
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b, 0x08}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, errors.New("the release record is not gzip")
		}
		defer zr.Close()
		b, err = io.ReadAll(io.LimitReader(zr, MaxReleaseBytes+1))
		if err != nil {
			return nil, errors.New("the release record is not gzip")
		}
		if len(b) > MaxReleaseBytes {
			return nil, fmt.Errorf("the release record is over %d MiB unpacked", MaxReleaseBytes>>20)
		}
	}
	var rel struct {
		Manifest string `json:"manifest"`
	}
	if err := json.Unmarshal(b, &rel); err != nil {
		return nil, errors.New("the release record is not a Helm release")
	}
	var keys []render.ObjectKey
	for _, doc := range splitDocuments(rel.Manifest) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil || head.Kind == "" || head.Metadata.Name == "" {
			continue // not an object Helm applied (a comment, an empty document)
		}
		group, _, found := bytes.Cut([]byte(head.APIVersion), []byte("/"))
		k := render.ObjectKey{Kind: head.Kind, Namespace: head.Metadata.Namespace, Name: head.Metadata.Name}
		if found {
			k.Group = string(group)
		}
		keys = append(keys, k)
	}
	sortKeys(keys)
	return keys, nil
}

// splitDocuments splits a release manifest at its "---" lines, as Helm's
// releaseutil.SplitManifests does.
func splitDocuments(manifest string) []string {
	var docs []string
	var cur bytes.Buffer
	for line := range bytes.Lines([]byte(manifest)) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	return append(docs, cur.String())
}
