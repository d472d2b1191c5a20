package live_test

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestSharedListsHoldJSON: a Reader that shares its LISTs (ShareLists) keeps
// them for the whole job as the JSON the server sent, not decoded: an object
// decoded into maps takes several times its JSON (a map per managed field), and
// at 20,000 live objects that was most of a preview's live heap (issue 25). The
// heap the Reader keeps after its reads is measured against the JSON of every
// ConfigMap in the cluster (what its LISTs can hold: four namespaces on their
// own, then all of them cluster-wide, so up to twice each object). Memory, not
// time: the measure does not depend on the machine's load.
func TestSharedListsHoldJSON(t *testing.T) {
	ctx := t.Context()
	const perNamespace, keys = 40, 150
	data := map[string]any{}
	for i := range keys {
		data[fmt.Sprintf("key-%03d", i)] = "v"
	}
	var namespaces []string
	var targets [][]*unstructured.Unstructured
	for range 6 {
		ns := cluster.Namespace(t)
		var objs []*unstructured.Unstructured
		for i := range perNamespace {
			objs = append(objs, cluster.ApplyAs(ctx, t, configMap(t, ns, fmt.Sprintf("cm-%02d", i), data), "kustomize-controller"))
		}
		namespaces = append(namespaces, ns)
		targets = append(targets, objs)
	}
	all, err := cluster.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jsonBytes := 0
	for i := range all.Items {
		b, err := json.Marshal(all.Items[i].Object)
		if err != nil {
			t.Fatal(err)
		}
		jsonBytes += len(b)
	}

	r := reader(t, nil)
	r.ShareLists()
	for i, objs := range targets {
		st := mustRead(t, r, set(objs...), set(objs...), opts(namespaces[i]))
		if len(st.Objects) != perNamespace {
			t.Fatalf("target %d: %d live objects, want %d", i, len(st.Objects), perNamespace)
		}
	}
	with := liveHeap()
	runtime.KeepAlive(r)
	without := liveHeap()
	held := int64(with) - int64(without)
	t.Logf("the Reader holds %d KiB after its reads; the cluster's ConfigMaps are %d KiB of JSON", held>>10, jsonBytes>>10)
	// Up to twice the JSON (about 2.1 × with slice headers); decoded it
	// was about 12 ×.
	if limit := int64(jsonBytes) * 4; held > limit {
		t.Errorf("the Reader holds %d KiB of shared LISTs, more than %d KiB (4 × the %d KiB of the listed objects' JSON): it keeps them decoded", held>>10, limit>>10, jsonBytes>>10)
	}
	if held < int64(jsonBytes)/2 {
		t.Errorf("the Reader holds %d KiB after its reads, less than the %d KiB of JSON it listed: the measure does not see the shared LISTs", held>>10, jsonBytes>>10)
	}
}

// liveHeap is the heap's live bytes after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
