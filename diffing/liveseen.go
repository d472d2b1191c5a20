package diffing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/driftpreview/driftpreview/render"
)

// LiveObject records one live object a target's preview compared, as it was read:
// what the bot's watch (bot/watch) needs to tell whether a later change to the
// object can alter the preview, and what the next preview needs to say what
// changed since this one (LiveChanges).
type LiveObject struct {
	Cluster   string `json:"cluster"`
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Absent is true when the preview found no live object (head creates it).
	Absent          bool   `json:"absent,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Fields are the object's leaves as the preview compares them (status and
	// the metadata the apiserver sets left out), by JSON pointer: a hash of the
	// value (never the value: Secrets) and the manager that owns it live.
	Fields map[string]LiveField `json:"fields,omitempty"`
}

// LiveField is one leaf of a LiveObject.
type LiveField struct {
	Hash    string     `json:"h"`
	Manager string     `json:"m,omitempty"`
	Time    *time.Time `json:"t,omitempty"`
}

// Key is the object's key.
func (o *LiveObject) Key() render.ObjectKey {
	return render.ObjectKey{Group: o.Group, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// SameAs reports whether o and other show the preview the same object: both
// absent, or both present with the same fields, values and owning managers. A
// change of status, resourceVersion or managedFields timestamps alone is the
// same object.
func (o *LiveObject) SameAs(other *LiveObject) bool {
	if o.Absent || other.Absent {
		return o.Absent == other.Absent
	}
	return maps.EqualFunc(o.Fields, other.Fields, func(a, b LiveField) bool {
		return a.Hash == b.Hash && a.Manager == b.Manager
	})
}

// SeenLive records u (nil: not found) as a LiveObject of cluster. version is the
// API version to record when u is nil.
func SeenLive(cluster string, k render.ObjectKey, version string, u *unstructured.Unstructured) LiveObject {
	o := LiveObject{Cluster: cluster, Group: k.Group, Version: version, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
	if u == nil {
		o.Absent = true
		return o
	}
	if gv := u.GroupVersionKind(); gv.Version != "" {
		o.Version = gv.Version
	}
	o.ResourceVersion = u.GetResourceVersion()
	owners := fieldOwners(u)
	// A Secret's values are hashed with its UID, so equal values of two Secrets
	// do not hash alike.
	salt := ""
	if isSecretKey(k) {
		salt = string(u.GetUID())
	}
	o.Fields = map[string]LiveField{}
	walkLeaves(normalizedView(u).Object, nil, func(p string, v any) {
		f := LiveField{Hash: leafHash(salt, v)}
		for _, ow := range ownersOf(owners, p) {
			if f.Manager == "" || later(ow.Time, f.Time) {
				f.Manager, f.Time = ow.Manager, ow.Time
			}
		}
		o.Fields[p] = f
	})
	return o
}

// walkLeaves calls fn for every scalar, empty map and empty list of v.
func walkLeaves(v any, prefix []string, fn func(string, any)) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			fn(joinPointer(prefix), t)
		}
		for _, k := range sortedKeys(t) {
			walkLeaves(t[k], append(prefix[:len(prefix):len(prefix)], k), fn)
		}
	case []any:
		if len(t) == 0 {
			fn(joinPointer(prefix), t)
		}
		for i, e := range t {
			walkLeaves(e, append(prefix[:len(prefix):len(prefix)], strconv.Itoa(i)), fn)
		}
	default:
		fn(joinPointer(prefix), v)
	}
}

func leafHash(salt string, v any) string {
	b, _ := json.Marshal(v)
	h := sha256.New()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// seenLive records the live objects of every base and head key of the target.
func (d *differ) seenLive() {
	live := d.in.Live
	cluster := d.tr.Cluster
	version := map[render.ObjectKey]string{}
	for _, set := range []render.ObjectSet{d.in.Base, d.in.Head} {
		for _, o := range set.Objects {
			if o.Obj != nil {
				version[o.Key] = o.Obj.GroupVersionKind().Version
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(version), compareKeys)
	d.tr.Live = make([]LiveObject, 0, len(keys))
	for _, k := range keys {
		d.tr.Live = append(d.tr.Live, SeenLive(cluster, k, version[k], live.Objects[k]))
	}
}

func compareKeys(a, b render.ObjectKey) int {
	return strings.Compare(a.Group+"\x00"+a.Kind+"\x00"+a.Namespace+"\x00"+a.Name, b.Group+"\x00"+b.Kind+"\x00"+b.Namespace+"\x00"+b.Name)
}

// LiveChange is one difference between the live sides of two previews of a pull
// request (LiveChanges): what someone changed in the cluster in between.
type LiveChange struct {
	Cluster string
	Key     render.ObjectKey
	// What is "changed", "added", "removed" (a field), "took over" (the same value,
	// a new manager), "created" or "deleted" (the object).
	What string
	// Path is the field's JSON pointer; empty for created and deleted.
	Path string
	// Manager owns the field now (empty when unknown, e.g. a removed field).
	Manager string
	Time    *time.Time
}

// LiveChanges lists what changed between the live objects prev and cur of two
// previews, in key and path order. Objects only one side compared are not
// changes of the cluster (the pull request changed) and are left out.
func LiveChanges(prev, cur []LiveObject) []LiveChange {
	type id struct {
		cluster string
		key     render.ObjectKey
	}
	before := map[id]*LiveObject{}
	for i := range prev {
		before[id{prev[i].Cluster, prev[i].Key()}] = &prev[i]
	}
	var out []LiveChange
	for i := range cur {
		c := &cur[i]
		p := before[id{c.Cluster, c.Key()}]
		if p == nil || p.SameAs(c) {
			continue
		}
		base := LiveChange{Cluster: c.Cluster, Key: c.Key()}
		switch {
		case p.Absent:
			ch := base
			ch.What = "created"
			for _, f := range c.Fields {
				if f.Manager != "" && (ch.Manager == "" || later(f.Time, ch.Time)) {
					ch.Manager, ch.Time = f.Manager, f.Time
				}
			}
			out = append(out, ch)
			continue
		case c.Absent:
			ch := base
			ch.What = "deleted"
			out = append(out, ch)
			continue
		}
		paths := slices.Sorted(maps.Keys(c.Fields))
		for q := range p.Fields {
			if _, ok := c.Fields[q]; !ok {
				paths = append(paths, q)
			}
		}
		slices.Sort(paths)
		for _, q := range paths {
			pf, inPrev := p.Fields[q]
			cf, inCur := c.Fields[q]
			ch := base
			ch.Path, ch.Manager, ch.Time = q, cf.Manager, cf.Time
			switch {
			case !inPrev:
				ch.What = "added"
			case !inCur:
				ch.What = "removed"
				ch.Manager, ch.Time = "", nil
			case pf.Hash != cf.Hash:
				ch.What = "changed"
			case pf.Manager != cf.Manager:
				ch.What = "took over"
			default:
				continue
			}
			out = append(out, ch)
		}
	}
	return out
}
