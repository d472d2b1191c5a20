package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// cacheTTL is how long discovery and OpenAPI schemas are reused before the Reader
// reads them again, so a long-running bot sees CRDs installed meanwhile.
const cacheTTL = 10 * time.Minute

// resource is one listable resource type of the cluster.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	verbs      []string
}

func (r resource) can(verb string) bool { return slices.Contains(r.verbs, verb) }

// name is how errors name the resource: "deployments.apps", "persistentvolumeclaims".
func (r resource) name() string {
	if r.gvr.Group == "" {
		return r.gvr.Resource
	}
	return r.gvr.Resource + "." + r.gvr.Group
}

// catalog is one discovery snapshot: every served resource by GroupKind, the
// preferred version first.
type catalog struct {
	at     time.Time
	byGK   map[schema.GroupKind][]resource
	failed map[string]error // API groups whose discovery failed (an aggregated API down)
	all    []resource       // preferred version of every resource
}

// lookup finds the resource serving gk, in version when served, else in the
// preferred version. ok is false when the cluster does not serve gk at all.
func (c *catalog) lookup(gk schema.GroupKind, version string) (resource, bool) {
	rs := c.byGK[gk]
	for _, r := range rs {
		if r.gvr.Version == version {
			return r, true
		}
	}
	if len(rs) > 0 {
		return rs[0], true
	}
	return resource{}, false
}

// discover reads the cluster's API groups and resources.
func discover(ctx context.Context, dc *discovery.DiscoveryClient) (*catalog, error) {
	groups, lists, err := dc.ServerGroupsAndResourcesWithContext(ctx)
	c := &catalog{at: time.Now(), byGK: map[schema.GroupKind][]resource{}, failed: map[string]error{}}
	if err != nil {
		var gerr *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gerr) || groups == nil {
			return nil, err
		}
		for gv, e := range gerr.Groups {
			c.failed[gv.Group] = e
		}
	}
	byGV := map[string]*metav1.APIResourceList{}
	for _, l := range lists {
		byGV[l.GroupVersion] = l
	}
	for _, g := range groups {
		versions := make([]metav1.GroupVersionForDiscovery, 0, len(g.Versions))
		versions = append(versions, g.PreferredVersion)
		for _, v := range g.Versions {
			if v.Version != g.PreferredVersion.Version {
				versions = append(versions, v)
			}
		}
		seen := map[string]bool{}
		for _, v := range versions {
			l := byGV[v.GroupVersion]
			if l == nil {
				continue
			}
			for _, ar := range l.APIResources {
				if strings.Contains(ar.Name, "/") {
					continue // a subresource
				}
				r := resource{
					gvr:        schema.GroupVersionResource{Group: g.Name, Version: v.Version, Resource: ar.Name},
					kind:       ar.Kind,
					namespaced: ar.Namespaced,
					verbs:      ar.Verbs,
				}
				gk := schema.GroupKind{Group: g.Name, Kind: ar.Kind}
				c.byGK[gk] = append(c.byGK[gk], r)
				if !seen[ar.Name] {
					seen[ar.Name] = true
					c.all = append(c.all, r)
				}
			}
		}
	}
	return c, nil
}

// cache holds what a Reader reuses across Reads: discovery and per-GroupVersion
// type converters and field managers.
type cache struct {
	mu      sync.Mutex
	catalog *catalog
	schemas *schemaCache
}

// getCatalog returns the discovery snapshot, reading it when missing, older than
// cacheTTL, or when refresh asks for a new one because a kind was not found.
func (r *Reader) getCatalog(ctx context.Context, refresh bool) (*catalog, error) {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	c := r.cache.catalog
	if c != nil && !refresh && time.Since(c.at) < cacheTTL {
		return c, nil
	}
	if c != nil && refresh && time.Since(c.at) < time.Second {
		return c, nil // just read: another Read refreshed it
	}
	nc, err := discover(ctx, r.disc)
	if err != nil {
		return nil, fmt.Errorf("discovering API resources: %w", err)
	}
	r.cache.catalog = nc
	if r.cache.schemas == nil || time.Since(r.cache.schemas.at) >= cacheTTL || refresh {
		r.cache.schemas = newSchemaCache(r.disc)
	}
	return nc, nil
}

// getSchemas returns the schema cache that belongs to the current catalog.
func (r *Reader) getSchemas() *schemaCache {
	r.cache.mu.Lock()
	defer r.cache.mu.Unlock()
	if r.cache.schemas == nil {
		r.cache.schemas = newSchemaCache(r.disc)
	}
	return r.cache.schemas
}
