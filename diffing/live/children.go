package live

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

var (
	namespaceGK = schema.GroupKind{Kind: "Namespace"}
	crdGK       = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	pvcGK       = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	pvGK        = schema.GroupKind{Kind: "PersistentVolume"}
)

// derived are namespaced types not counted as children: events are history, and
// endpoints are derived from Services.
var derived = map[schema.GroupResource]bool{
	{Resource: "events"}:                                    true,
	{Group: "events.k8s.io", Resource: "events"}:            true,
	{Resource: "endpoints"}:                                 true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}: true,
}

// builtinChild reports objects every namespace gets from the cluster itself (the
// root CA ConfigMap and the default ServiceAccount), which say nothing about what a
// prune takes with it.
func builtinChild(gr schema.GroupResource, name string) bool {
	return (gr == schema.GroupResource{Resource: "configmaps"} && name == "kube-root-ca.crt") ||
		(gr == schema.GroupResource{Resource: "serviceaccounts"} && name == "default")
}

// children counts, for every Namespace and CRD that is in base or live but not in
// head, the live objects it would take with it when pruned.
func (st *read) children(ctx context.Context, base, head render.ObjectSet, out *diffing.LiveState) error {
	inHead := map[render.ObjectKey]bool{}
	for _, o := range head.Objects {
		inHead[o.Key] = true
	}
	candidates := map[render.ObjectKey]bool{}
	for _, o := range base.Objects {
		candidates[o.Key] = true
	}
	for k := range out.Objects {
		candidates[k] = true
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(st.r.parallel)
	count := func(k render.ObjectKey, gvr schema.GroupVersionResource, kind, ns string) {
		g.Go(func() error {
			n, err := st.count(gctx, gvr, ns)
			if err != nil {
				return fmt.Errorf("counting children of %s: %w", k, err)
			}
			mu.Lock()
			defer mu.Unlock()
			c := out.Children[k]
			if c.ByKind == nil {
				c.ByKind = map[string]int{}
			}
			if n > 0 {
				c.ByKind[kind] += n
				c.Total += n
			}
			out.Children[k] = c
			return nil
		})
	}
	for k := range candidates {
		live := out.Objects[k]
		if inHead[k] || live == nil {
			continue
		}
		switch k.GroupKind() {
		case namespaceGK:
			mu.Lock() // counts of earlier keys are being written concurrently
			out.Children[k] = diffing.Children{ByKind: map[string]int{}}
			mu.Unlock()
			for _, res := range st.cat.all {
				if !res.namespaced || !res.can("list") || derived[res.gvr.GroupResource()] {
					continue
				}
				count(k, res.gvr, res.kind, live.GetName())
			}
		case crdGK:
			mu.Lock() // counts of earlier keys are being written concurrently
			out.Children[k] = diffing.Children{ByKind: map[string]int{}}
			mu.Unlock()
			group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(live.Object, "spec", "names", "kind")
			res, ok := st.cat.lookup(schema.GroupKind{Group: group, Kind: kind}, "")
			if !ok {
				continue // defined but not served: no instances can exist
			}
			count(k, res.gvr, res.kind, "")
		}
	}
	return g.Wait()
}

// count counts the objects of gvr in ns ("" for all namespaces) with metadata-only
// LISTs, leaving out what the cluster itself puts in every namespace.
func (st *read) count(ctx context.Context, gvr schema.GroupVersionResource, ns string) (int, error) {
	n := 0
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		var l *metav1.PartialObjectMetadataList
		var err error
		if ns != "" {
			l, err = st.r.meta.Resource(gvr).Namespace(ns).List(ctx, opts)
		} else {
			l, err = st.r.meta.Resource(gvr).List(ctx, opts)
		}
		if err != nil {
			return 0, st.listError(listing{res: resource{gvr: gvr}, ns: ns}, err)
		}
		for _, it := range l.Items {
			if !builtinChild(gvr.GroupResource(), it.Name) {
				n++
			}
		}
		if l.Continue == "" {
			return n, nil
		}
		opts.Continue = l.Continue
	}
}

// volumes finds the PersistentVolume bound to every live PVC of base or head, with
// one LIST of PersistentVolumes (reused when the plan listed them already).
func (st *read) volumes(ctx context.Context, base, head render.ObjectSet, out *diffing.LiveState) error {
	claims := map[render.ObjectKey]*unstructured.Unstructured{}
	for _, s := range []render.ObjectSet{base, head} {
		for _, o := range s.Objects {
			if o.Key.GroupKind() != pvcGK {
				continue
			}
			if live := out.Objects[o.Key]; live != nil {
				if v, _, _ := unstructured.NestedString(live.Object, "spec", "volumeName"); v != "" {
					claims[o.Key] = live
				}
			}
		}
	}
	if len(claims) == 0 {
		return nil
	}
	res, ok := st.cat.lookup(pvGK, "")
	if !ok {
		return nil
	}
	pvs, listed := st.listed[listKey{gvr: res.gvr}]
	if !listed {
		var err error
		if pvs, err = st.list(ctx, listing{res: res}); err != nil {
			return err
		}
	}
	byName := make(map[string]*unstructured.Unstructured, len(pvs))
	for _, pv := range pvs {
		byName[pv.GetName()] = pv
	}
	for k, pvc := range claims {
		name, _, _ := unstructured.NestedString(pvc.Object, "spec", "volumeName")
		pv := byName[name]
		if pv == nil {
			continue
		}
		ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
		claim, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "name")
		if ns != pvc.GetNamespace() || claim != pvc.GetName() {
			continue // the PV is bound to another claim
		}
		out.Volumes[k] = pv
	}
	return nil
}
