package preview

import (
	"reflect"
	"testing"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
)

// TestPutPairOneResult: a pull request of inert files shares the base's
// search with the head (discover's sharedSearch), and PutPair is given one
// Result for both sides, which it encodes once. The pair comes back whole
// for both sides; and a Result naming the head's checkout is not kept,
// though the base's is not named.
func TestPutPairOneResult(t *testing.T) {
	disk, err := OpenDiskCache(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	const base, head = "/tmp/co-1/base", "/tmp/co-1/head"
	memo := func() *discoveryMemo {
		return &discoveryMemo{disk: disk, renders: newRenderCache(), keys: map[string]string{base: "kb", head: "kh"}}
	}
	res := &gitops.Result{Targets: []config.Target{{Name: "apps", Path: "kubernetes/apps"}}, Notes: []string{"a note"}}
	m := memo()
	m.PutPair(base, head, res, res)
	b, h, ok := memo().GetPair(base, head)
	if !ok {
		t.Fatal("the pair of one Result was not kept")
	}
	if !reflect.DeepEqual(b, res) || !reflect.DeepEqual(h, res) {
		t.Errorf("the pair came back as %+v and %+v, want %+v for both", b, h, res)
	}

	naming := &gitops.Result{Notes: []string{"read " + head + "/x.yaml"}}
	const base2, head2 = "/tmp/co-2/base", "/tmp/co-2/head"
	m2 := &discoveryMemo{disk: disk, renders: newRenderCache(), keys: map[string]string{base2: "kb2", head2: "kh2"}}
	naming.Notes[0] = "read " + head2 + "/x.yaml"
	m2.PutPair(base2, head2, naming, naming)
	if _, _, ok := m2.GetPair(base2, head2); ok {
		t.Error("a Result that names the head's checkout was kept")
	}
}
