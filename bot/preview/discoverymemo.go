package preview

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/bot/gitops"
	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
	"github.com/driftpreview/driftpreview/render/remote"
)

// discoveryMemo keeps GitOps discovery's Results in the render cache on disk
// (gitops.Options.Memo), so that a run whose checkouts were discovered before
// renders nothing to find its targets: a README-only PR against a base
// previewed before renders nothing at all (issue 25). A Result is kept under
// a key of its checkout's git tree (every path, mode and blob id: the whole
// checkout) and of the options discovery takes from the run; discovery reads
// nothing else when no cluster is read (live data, Argo CD's clusters and
// build options) and every render it ran was keyed by content (no remote
// source, no failure, within the budget). A Result that does not come back
// whole from its encoding, or that names the checkout's temp dir, is not
// kept.
type discoveryMemo struct {
	disk    *DiskCache
	renders *renderCache
	// keys are the checkouts' keys by root; a root without one is not kept.
	keys map[string]string
}

// discoveryMagic starts every kept Result, with the format's version.
const discoveryMagic = "driftpreview-discovery-v1 "

// newDiscoveryMemo returns the memo for the run's checkouts (root → git
// tree), or nil when discovery's Results cannot be kept: no disk cache, or
// discovery reads a cluster (one with live mode on, or Argo CD's cluster
// list given). The clusters' names and modes are part of the key (the
// notes that say a cluster is not read name it), and so is the remote
// policy, which decides which charts discovery lists as rendered.
func newDiscoveryMemo(req Request, renders *renderCache, opts gitops.Options, trees map[string]render.GitTree) gitops.Memo {
	disk := req.RenderCache
	if disk == nil || req.ArgoClusters != nil {
		return nil
	}
	var clusters []string
	for _, c := range append([]*Cluster{req.DefaultCluster, req.ArgoCDCluster}, mapPointers(req.Clusters)...) {
		switch {
		case c == nil:
			clusters = append(clusters, "")
		case c.Config != nil && c.LiveMode != diffing.LiveOff:
			return nil
		default:
			clusters = append(clusters, fmt.Sprintf("%q %q %v", c.Name, c.LiveMode, c.Config != nil))
		}
	}
	policy := "off"
	if req.Remote != nil {
		p, err := json.Marshal(req.Remote.Policy())
		if err != nil {
			return nil
		}
		policy = string(p)
	}
	o, err := json.Marshal(struct {
		RepoURLs                []string
		ClusterNames            map[string]string
		Branch                  string
		MaxDepth, MaxAppsPerSet int
		TemplateLimits          render.TemplateLimits
		ArgoDefaultBuildOptions *string
		Policy                  string
		Clusters                []string
	}{opts.RepoURLs, opts.ClusterNames, opts.Branch, opts.MaxDepth, opts.MaxAppsPerSet, opts.TemplateLimits, opts.ArgoDefaultBuildOptions, policy, clusters})
	if err != nil {
		return nil
	}
	m := &discoveryMemo{disk: disk, renders: renders, keys: map[string]string{}}
	for root, tree := range trees {
		if t := treeKey(root, tree); t != "" {
			m.keys[root] = remote.Key(discoveryMagic, t, string(o), disk.exe)
		}
	}
	return m
}

// treeKey hashes a checkout's tree: every path with its mode and blob id,
// and for a file whose checkout is not its blob (git converted it: its
// render.GitTree entry has no ID, as with .gitattributes text=auto) the
// bytes the checkout at root holds. "" when the tree is not known or such a
// file is not a regular file of the checkout.
func treeKey(root string, tree render.GitTree) string {
	if tree == nil {
		return ""
	}
	var r *os.Root
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		e := tree[p]
		if e.ID != "" {
			fmt.Fprintf(h, "%q %s %s\n", p, e.Mode, e.ID)
			continue
		}
		if r == nil {
			var err error
			if r, err = os.OpenRoot(root); err != nil {
				return ""
			}
		}
		fi, err := r.Lstat(p)
		if err == nil && fi.Mode()&os.ModeSymlink != 0 {
			// git checks a symlink out as its target, never converted.
			target, err := r.Readlink(p)
			if err != nil {
				return ""
			}
			fmt.Fprintf(h, "%q %s link %q\n", p, e.Mode, target)
			continue
		}
		if err != nil || !fi.Mode().IsRegular() {
			return ""
		}
		b, err := r.ReadFile(p)
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%q %s content %d %x\n", p, e.Mode, len(b), sha256.Sum256(b))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// memoEntry is a kept Result with the controller fields its JSON leaves out.
type memoEntry struct {
	Result      *gitops.Result
	Controllers []controllerExtra
}

type controllerExtra struct {
	Finalizer, GeneratorKeeps bool
	Argo                      *diffing.ArgoSync
	DeletionPolicy            string
}

func (m *discoveryMemo) Get(root string) (*gitops.Result, bool) {
	key := m.keys[root]
	if key == "" {
		return nil, false
	}
	body, ok := m.disk.body(key, discoveryMagic)
	if !ok {
		return nil, false
	}
	res, err := decodeMemo(body)
	if err != nil {
		_ = m.disk.store.Remove(key)
		return nil, false
	}
	return res, true
}

func (m *discoveryMemo) Put(root string, res *gitops.Result) {
	key := m.keys[root]
	if key == "" || m.renders.unsharedIn(root) || m.renders.spent.exceeded() != "" {
		return
	}
	body, err := encodeMemo(res)
	if err != nil || bytes.Contains(body, []byte(root)) {
		return
	}
	// Kept only when it comes back as it is.
	if back, err := decodeMemo(body); err != nil || !reflect.DeepEqual(back, res) {
		return
	}
	m.disk.putBody(key, discoveryMagic, body)
}

// pairMagic starts every kept pair of pruned Results (gitops.PairMemo).
const pairMagic = "driftpreview-discovery-pair-v1 "

// memoPair is a kept pair of Results, each as encodeMemo makes it.
type memoPair struct {
	Base, Head json.RawMessage
}

func (m *discoveryMemo) pairKey(base, head string) string {
	if m.keys[base] == "" || m.keys[head] == "" {
		return ""
	}
	return remote.Key(pairMagic, m.keys[base], m.keys[head])
}

func (m *discoveryMemo) GetPair(base, head string) (*gitops.Result, *gitops.Result, bool) {
	key := m.pairKey(base, head)
	if key == "" {
		return nil, nil, false
	}
	body, ok := m.disk.body(key, pairMagic)
	if !ok {
		return nil, nil, false
	}
	var p memoPair
	err := json.Unmarshal(body, &p)
	var b, h *gitops.Result
	if err == nil {
		b, err = decodeMemo(p.Base)
	}
	if err == nil {
		h, err = decodeMemo(p.Head)
	}
	if err != nil {
		_ = m.disk.store.Remove(key)
		return nil, nil, false
	}
	return b, h, true
}

func (m *discoveryMemo) PutPair(base, head string, b, h *gitops.Result) {
	key := m.pairKey(base, head)
	if key == "" || m.renders.unsharedIn(base) || m.renders.unsharedIn(head) || m.renders.spent.exceeded() != "" {
		return
	}
	var p memoPair
	for _, side := range []struct {
		root string
		res  *gitops.Result
		out  *json.RawMessage
	}{{base, b, &p.Base}, {head, h, &p.Head}} {
		if side.out == &p.Head && h == b {
			// One Result for both sides (a pull request of inert files,
			// the base's search shared): encoded and checked once.
			if bytes.Contains(p.Base, []byte(side.root)) {
				return
			}
			p.Head = p.Base
			continue
		}
		body, err := encodeMemo(side.res)
		if err != nil || bytes.Contains(body, []byte(side.root)) {
			return
		}
		// Kept only when it comes back as it is.
		if back, err := decodeMemo(body); err != nil || !reflect.DeepEqual(back, side.res) {
			return
		}
		*side.out = body
	}
	body, err := json.Marshal(p)
	if err != nil {
		return
	}
	m.disk.putBody(key, pairMagic, body)
}

func encodeMemo(res *gitops.Result) ([]byte, error) {
	e := memoEntry{Result: res}
	for _, t := range slices.Concat(res.Targets, res.NotRendered) {
		var x controllerExtra
		if c := t.Controller; c != nil {
			x = controllerExtra{Finalizer: c.Finalizer, GeneratorKeeps: c.GeneratorKeeps, Argo: c.Argo, DeletionPolicy: c.DeletionPolicy}
		}
		if t.Render.Remote != nil || t.Render.Budget != nil || t.Render.Checkout != "" {
			return nil, fmt.Errorf("target %s holds run state", t.Name)
		}
		e.Controllers = append(e.Controllers, x)
	}
	return json.Marshal(e)
}

func decodeMemo(body []byte) (*gitops.Result, error) {
	var e memoEntry
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	if e.Result == nil || len(e.Controllers) != len(e.Result.Targets)+len(e.Result.NotRendered) {
		return nil, fmt.Errorf("not a discovery entry")
	}
	i := 0
	for _, ts := range [][]config.Target{e.Result.Targets, e.Result.NotRendered} {
		for j := range ts {
			if c := ts[j].Controller; c != nil {
				x := e.Controllers[i]
				c.Finalizer, c.GeneratorKeeps, c.Argo, c.DeletionPolicy = x.Finalizer, x.GeneratorKeeps, x.Argo, x.DeletionPolicy
			}
			i++
		}
	}
	return e.Result, nil
}

// mapPointers is the clusters of m in name order.
func mapPointers(m map[string]Cluster) []*Cluster {
	var out []*Cluster
	for _, name := range slices.Sorted(maps.Keys(m)) {
		c := m[name]
		out = append(out, &c)
	}
	return out
}
