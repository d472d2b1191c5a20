package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/hasher"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/driftpreview/driftpreview/render/remote"
)

// kustomizeLock serialises kustomize builds: krusty keeps the OpenAPI schema in
// package state. It is a channel so a waiting render still honours its deadline.
var kustomizeLock = make(chan struct{}, 1)

// defaultOpenAPIVersion is what kyaml reports before any kustomization has set
// a schema (read at start-up, before any build).
var defaultOpenAPIVersion = openapi.GetSchemaVersion()

// resetOpenAPISchema puts kyaml's package-level OpenAPI schema back to the
// built-in one after a build that changed it. A kustomization's `openapi:` field
// (kyaml openapi.SetSchema) sets a custom schema in package state; krusty resets
// only the built-in version at the next build (krusty/kustomizer.go Run), and a
// sub-kustomization's schema is not set at all while one is (internal/target
// kusttarget.go, reset=false). A render process serves many renders (pool.go),
// so without this the schema of one target would decide how the next target's
// patches merge. Resetting only after such builds keeps the parsed built-in
// schema for the common case.
func resetOpenAPISchema() {
	if openapi.GetSchemaVersion() != defaultOpenAPIVersion {
		openapi.ResetOpenAPI()
	}
}

const originAnnotation = "config.kubernetes.io/origin"

// With origin annotations on (the wrapper's buildMetadata), kustomize also keeps a
// list of every transformer that touched a resource in its
// alpha.config.kubernetes.io/transformations annotation: after each transformer
// of every kustomization, for each resource, it reads that annotation (YAML),
// appends and writes it back (resmap AddTransformerAnnotation, resource
// AddTransformation). That bookkeeping was about a third of a kustomize build's
// CPU (BenchmarkRenderBenchTarget), and it is thrown away: krusty's Run removes
// the annotation from every resource at the end unless the top kustomization's
// buildMetadata names transformerAnnotations (krusty/kustomizer.go), which the
// wrapper never does, and it overrides the buildMetadata of every kustomization
// below it (internal/target accumulateDirectory). So the list is written empty:
// kyaml.Marshal, kustomize's encoder for it (resource.Transformations.String),
// returns nothing for a Transformations value. The annotation still exists (with
// "" as its value) while kustomize runs, and is removed as before; origins,
// which the report uses, are untouched. The one place its value could matter is
// the hash kustomize's HashTransformer gives a generated object whose kind a
// patch changed (allowKindChange) to neither ConfigMap nor Secret: that hashes
// the whole object, annotations included.
//
// It is set by a variable's initializer, not an init function: those run
// before every init function of the package, and a render process starts
// serving from one (child.go).
var _ = skipTransformations()

func skipTransformations() bool {
	marshal := kyaml.Marshal
	kyaml.Marshal = func(in any) ([]byte, error) {
		if _, ok := in.(*resource.Transformations); ok {
			return nil, nil
		}
		return marshal(in)
	}
	return true
}

// renderKustomize builds the kustomization in dir with krusty over the sandboxed
// filesystem. A directory without a kustomization gets one generated the way
// Flux's kustomize-controller does (see generateKustomization). The target is wrapped in a generated kustomization that applies
// opts.Kustomize and asks for origin annotations, so no file is ever edited.
func renderKustomize(ctx context.Context, sb *sandbox, dir string, opts Options) (ObjectSet, error) {
	kustFile := ""
	for _, n := range kustomizationNames {
		if fi, err := sb.stat(path.Join(dir, n)); err == nil && !fi.IsDir() {
			kustFile = path.Join(dir, n)
			break
		}
	}
	var gen []byte
	if kustFile == "" {
		var err error
		if gen, err = generateKustomization(ctx, sb, dir); err != nil {
			return ObjectSet{}, err
		}
		kustFile = path.Join(dir, "kustomization.yaml")
	}
	if !markersRefused.has(dir) {
		read, out := sb.usage()
		set, final, err := buildKustomize(ctx, sb, dir, kustFile, gen, opts, newSourceMarks())
		if final && err == nil && checkSourceMarkers {
			err = checkMarkedBuild(ctx, sb, dir, kustFile, gen, opts, set)
		}
		if final {
			markedBuilds.Add(1)
			return set, err
		}
		markerFallbacks.Add(1)
		// Built again with origin annotations, as if the first build had not
		// been: what it read and printed is not counted twice.
		sb.setUsage(read, out)
		markersRefused.add(dir)
	}
	set, _, err := buildKustomize(ctx, sb, dir, kustFile, gen, opts, nil)
	return set, err
}

// ambiguousPath reports whether a path segment of dir holds ".." inside it, as
// kustomize's loader refuses for a directory resource (hasAmbiguousPathSegment
// in api/internal/loader).
func ambiguousPath(dir string) bool {
	for _, part := range strings.Split(dir, "/") {
		if part != "" && part != "." && part != ".." && strings.Contains(part, "..") {
			return true
		}
	}
	return false
}

// markersRefused are the targets whose build source markers could not account
// for (markers.go), so their next builds (the other side of the PR) go straight
// to origin annotations. Bounded: past maxOriginMemo targets it starts again.
var markersRefused = dirSet{m: map[string]bool{}}

type dirSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (d *dirSet) has(dir string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m[dir]
}

func (d *dirSet) add(dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.m) >= maxOriginMemo {
		clear(d.m)
	}
	d.m[dir] = true
}

// buildKustomize runs one kustomize build of the target in dir: with source
// markers when marks is set, else with origin annotations. final is false when
// the markers cannot account for the build's objects, or the build failed
// with markers (built again with origin annotations, the error names the
// lines of the files as they are): the caller builds again without them.
func buildKustomize(ctx context.Context, sb *sandbox, dir, kustFile string, gen []byte, opts Options, marks *sourceMarks) (set ObjectSet, final bool, err error) {
	fsys := newKFS(sb)
	fsys.helm = newHelmKustomize(ctx, opts, path.Join(checkoutMount, dir))
	sb.remotes = opts.Kustomize.RemoteBases
	if err := fsys.mountRemotes(opts.Kustomize.RemoteBases); err != nil {
		return ObjectSet{}, true, err
	}
	defer fsys.closeMounts()
	if gen != nil {
		fsys.overlay[path.Join(checkoutMount, kustFile)] = gen
	}
	wrapper, err := wrapperKustomization(sb, dir, opts.Kustomize, marks == nil)
	if err != nil {
		return ObjectSet{}, true, err
	}
	fsys.overlay[wrapperDir+"/kustomization.yaml"] = wrapper
	fsys.helm.noteChildren(fsys, wrapperDir, wrapper)
	fsys.marks = marks
	top := wrapperDir
	if marks != nil && !ambiguousPath(dir) {
		bare, err := wrapperKustomization(sb, dir, KustomizeOptions{}, false)
		if err == nil && bytes.Equal(wrapper, bare) {
			// The wrapper would only list the target: build the target
			// itself, as its controller does. A kustomization level costs
			// (BenchmarkPRWideRenders/kustomize-direct: 9% of PR-wide's
			// builds), and the top level does nothing a level below it does
			// not, but for what refuseUnwrapped refuses (krusty Run and
			// accumulateDirectory in sigs.k8s.io/kustomize/api). A
			// directory whose path kustomize's loader finds ambiguous
			// (FileLoader.New, hasAmbiguousPathSegment: "v1..2") fails
			// under the wrapper, so it keeps the wrapper.
			top = path.Join(checkoutMount, dir)
			marks.top = clean(path.Join(checkoutMount, kustFile))
		}
	}

	select {
	case kustomizeLock <- struct{}{}:
	case <-ctx.Done():
		return ObjectSet{}, true, ctx.Err()
	}
	rm, err := func() (rm resmap.ResMap, err error) {
		defer func() { <-kustomizeLock }()
		defer resetOpenAPISchema()
		if top != wrapperDir {
			// kustomize panics on some inputs at the top that it refuses
			// with an error one level below (two objects renamed onto one
			// id: resmap FromResourceSlice in KustTarget.IgnoreLocal): such
			// a build is made again under the wrapper, which says why.
			defer func() {
				if r := recover(); r != nil {
					rm, err = nil, fmt.Errorf("kustomize build without a wrapper: %v", r)
				}
			}()
		}
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		return k.Run(fsys, top)
	}()
	if err != nil {
		if marks != nil {
			if ctx.Err() != nil {
				return ObjectSet{}, true, ctx.Err()
			}
			return ObjectSet{}, false, nil
		}
		if fsys.violation != nil {
			return ObjectSet{}, true, fsys.violation
		}
		return ObjectSet{}, true, kustomizeError(sb, fsys, kustFile, err)
	}
	if top != wrapperDir {
		unwrappedBuilds.Add(1)
	}
	objs, notes, err := kustomizeOutput(sb, kustFile, rm)
	if err != nil {
		return ObjectSet{}, marks == nil, err
	}
	sources, generators := make([]string, len(objs)), make([]string, len(objs))
	if marks != nil {
		var ok bool
		if sources, generators, ok = marks.sources(rm.Resources(), objs, kustFile); !ok {
			return ObjectSet{}, false, nil
		}
		for _, o := range objs {
			if !annotationsAsWithOrigins(o.Object) {
				return ObjectSet{}, false, nil
			}
		}
	} else {
		for i, o := range objs {
			sources[i], generators[i] = originOf(o.Object, kustFile)
		}
	}
	set = ObjectSet{Notes: append(slices.Clone(fsys.notes), notes...)}
	for i, o := range objs {
		o.Source = sources[i]
		generator := generators[i]
		if kf, ok := fsys.helm.helmSource(o.Source); ok {
			o.Source, generator = kf, "HelmChartInflationGenerator"
		}
		o.HashSuffix = generatedHash(o.Object, generator)
		set.Objects = append(set.Objects, o.Object)
	}
	return set, true, nil
}

// annotationsAsWithOrigins makes an object of a build with source markers
// what the same build with origin annotations gives, and reports false when
// it cannot. With origin annotations, kustomize writes every object's
// annotations back (kyaml RNode.SetAnnotations), as strings, and drops an
// empty map; originOf then drops the map the origin was the only entry of.
// An empty or null map is dropped here too; a value that is not a string
// (which kustomize would have quoted) cannot be made alike, so such a
// build is built again with origin annotations.
func annotationsAsWithOrigins(o Object) bool {
	md, ok := o.Obj.Object["metadata"].(map[string]any)
	if !ok {
		return true
	}
	a, has := md["annotations"]
	if !has {
		return true
	}
	if a == nil {
		delete(md, "annotations")
		return true
	}
	m, ok := a.(map[string]any)
	if !ok {
		return false
	}
	if len(m) == 0 {
		delete(md, "annotations")
		return true
	}
	for _, v := range m {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

// kustomizeOutput turns kustomize's resources into objects as reading the
// YAML that resmap.AsYaml prints would: that YAML is what `kustomize build`
// prints and what Argo CD and Flux's kustomize-controller apply. AsYaml turns
// each resource into JSON (Resource.MarshalJSON), then that JSON into YAML
// (sigs.k8s.io/yaml JSONToYAML), which parse reads back. The objects are read
// straight from the JSON instead, integers as int64 and other numbers as
// float64, as parse types them: the JSON-to-YAML-and-back leg was most of the
// cost of the output (BenchmarkRenderBenchTarget). What parse does beyond
// typing values cannot happen to such JSON except for what jsonObject checks
// (depth, size, a document that is not one object); a resource that fails
// those, or whose JSON cannot be made, takes the YAML way, so its error or
// note is the one parse gives. The output limits count the JSON here (the
// YAML when it takes that way), before it is decoded.
func kustomizeOutput(sb *sandbox, kustFile string, rm resmap.ResMap) ([]parsedObject, []string, error) {
	viaYAML := func(charged bool) ([]parsedObject, []string, error) {
		yml, err := rm.AsYaml()
		if err != nil {
			return nil, nil, &Error{File: kustFile, Err: fmt.Errorf("kustomize output: %w", err)}
		}
		if !charged {
			if err := sb.charge(kustFile, int64(len(yml))); err != nil {
				return nil, nil, err
			}
			if err := sb.output(kustFile, int64(len(yml))); err != nil {
				return nil, nil, err
			}
		}
		objs, notes, err := parse(yml, kustFile)
		if err != nil {
			return nil, nil, &Error{File: kustFile, Err: fmt.Errorf("reading kustomize output: %w", err)}
		}
		return objs, notes, nil
	}
	resources := rm.Resources()
	// Each resource is typed straight from its node (typedObject) when it
	// can be, else through its JSON (resourceJSON, then jsonObject below).
	docs := make([][]byte, len(resources))
	typed := make([]map[string]any, len(resources))
	size := int64(0)
	for i, r := range resources {
		if m, ok := typedObject(r, &size); ok {
			typed[i] = m
			continue
		}
		j, err := resourceJSON(r)
		if err != nil {
			return viaYAML(false)
		}
		docs[i] = j
		size += int64(len(j))
	}
	if err := sb.charge(kustFile, size); err != nil {
		return nil, nil, err
	}
	if err := sb.output(kustFile, size); err != nil {
		return nil, nil, err
	}
	objs := make([]parsedObject, 0, len(docs))
	for i, j := range docs {
		m := typed[i]
		if m == nil {
			var ok bool
			if m, ok = jsonObject(j); !ok {
				return viaYAML(true)
			}
		}
		objs = append(objs, newParsed(m, kustFile, 0))
	}
	return objs, nil, nil
}

// typedObject is resourceJSON then jsonObject without the JSON in between:
// the node decoded as resourceJSON decodes it, typed by jsonTyped, with the
// checks jsonObject makes, adding the JSON's length to *size. False, with
// *size unchanged, for a resource it does not answer for; the JSON way then
// gives that resource's result, note or error. Writing and reading the JSON
// was a twentieth of a render process's CPU on make bench's PR-wide.
func typedObject(r *resource.Resource, size *int64) (map[string]any, bool) {
	m, ok := decodedNode(r)
	if !ok {
		return nil, false
	}
	var sz int64
	if _, ok := jsonTyped(m, &sz); !ok || !jsonReadable(m) {
		return nil, false
	}
	*size += sz
	return m, true
}

// resourceJSON is r.MarshalJSON(), the JSON `kustomize build` prints from:
// kyaml (RNode.MarshalJSON) prints the node as YAML, reads that text back into
// a map with yaml.v3 and writes the map as JSON. The node is decoded into the
// map directly instead (yaml.v3 Node.Decode, the same decoder Unmarshal runs on
// the node it parses from the text): what the printed text would be read back
// as is what the node decodes to, since yaml.v3's encoder quotes or tags every
// scalar whose text would otherwise resolve to another type. Printing and
// re-parsing were a tenth of a render process's CPU on PR-wide at T=200
// (`preview --render-cpuprofile`). A node that is not a mapping, or holds an
// alias (printed, an alias whose anchor is outside the node fails to parse),
// or that fails to decode takes kyaml's way, so its result or error is
// kyaml's. TestResourceJSON holds both ways equal.
func resourceJSON(r *resource.Resource) ([]byte, error) {
	m, ok := decodedNode(r)
	if !ok {
		return r.MarshalJSON()
	}
	return json.Marshal(m)
}

// decodedNode is r's node decoded into a map by yaml.v3 (Node.Decode); false
// for a node that is not a mapping, holds an alias, or does not decode, which
// is left to kyaml (resourceJSON).
func decodedNode(r *resource.Resource) (map[string]any, bool) {
	n := r.YNode()
	if n == nil || n.Kind != yaml.MappingNode || hasAlias(n) {
		return nil, false
	}
	m := map[string]any{}
	if err := n.Decode(&m); err != nil {
		return nil, false
	}
	return m, true
}

// hasAlias reports whether n or a node below it is an alias.
func hasAlias(n *yaml.Node) bool {
	return anyNode(n, func(n *yaml.Node) bool { return n.Kind == yaml.AliasNode })
}

// anyNode reports whether f holds for n or a node below it.
func anyNode(n *yaml.Node, f func(*yaml.Node) bool) bool {
	if f(n) {
		return true
	}
	for _, c := range n.Content {
		if anyNode(c, f) {
			return true
		}
	}
	return false
}

// jsonObject decodes one resource's JSON into the object parse would read from
// its YAML, or reports false when parse might not read it as one object
// without a note: not a mapping, no apiVersion or kind, a List it would
// flatten, nested deeper than MaxDepth or with more than maxExpandedNodes
// values.
func jsonObject(j []byte) (map[string]any, bool) {
	// Only ASCII text is read this way. Some characters that encoding/json
	// writes as they are make the YAML printer fail or change them (NEL, a byte
	// order mark, DEL and other non-printable ones); a resource with any
	// character past ASCII takes the YAML way, so it fails or changes there as
	// it does in `kustomize build`.
	for _, b := range j {
		if b >= 0x7f {
			return nil, false
		}
	}
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(j, &m); err != nil || m == nil || !jsonReadable(m) {
		return nil, false
	}
	return m, true
}

// jsonReadable is what jsonObject asks of a decoded resource beyond its
// JSON: one object (not a List of them) within the depth and size limits.
func jsonReadable(m map[string]any) bool {
	if !isObject(m) {
		return false
	}
	if kind, _ := m["kind"].(string); strings.HasSuffix(kind, "List") {
		if _, isList := m["items"].([]any); isList {
			return false
		}
	}
	nodes := 0
	return withinLimits(m, 0, &nodes)
}

// withinLimits walks v as converter.size counts a document's nodes (a mapping
// counts its keys too) and depth.
func withinLimits(v any, depth int, nodes *int) bool {
	if depth > MaxDepth {
		return false
	}
	*nodes++
	switch v := v.(type) {
	case map[string]any:
		*nodes += len(v)
		for _, x := range v {
			if !withinLimits(x, depth+1, nodes) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !withinLimits(x, depth+1, nodes) {
				return false
			}
		}
	}
	return *nodes <= maxExpandedNodes
}

// generateKustomization writes the kustomization Flux's kustomize-controller
// generates for a directory without one (fluxcd/pkg kustomize,
// findOrGenerateKustomization and scanManifests): its resources are every .yaml and
// .yml file below dir, in walk order, and every subdirectory that holds its own
// kustomization, which is not descended into. An empty directory gets a placeholder
// namespace, as Flux sets, so the build yields nothing instead of failing.
func generateKustomization(ctx context.Context, sb *sandbox, dir string) ([]byte, error) {
	var resources []string
	err := fs.WalkDir(sb.fsys(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return sb.explain(p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := "./" + strings.TrimPrefix(p, dir+"/")
		if dir == "." {
			rel = "./" + p
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			for _, n := range kustomizationNames {
				if fi, err := sb.stat(path.Join(p, n)); err == nil && !fi.IsDir() {
					resources = append(resources, rel)
					return fs.SkipDir
				}
			}
			return nil
		}
		if d.Type().IsRegular() && hasExt(p, ".yaml", ".yml") {
			resources = append(resources, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	k := map[string]any{"apiVersion": types.KustomizationVersion, "kind": types.KustomizationKind}
	if len(resources) == 0 {
		k["namespace"] = "_placeholder"
	} else {
		k["resources"] = resources
	}
	return sigsyaml.Marshal(k)
}

// originOf reads (and removes) kustomize's origin annotation: the file a resource
// came from, or the kustomization whose generator made it, and the kind of that
// generator (ConfigMapGenerator, SecretGenerator) when one made it.
func originOf(o Object, fallback string) (source, generator string) {
	ann := o.Obj.GetAnnotations()
	raw, ok := ann[originAnnotation]
	if !ok {
		return fallback, ""
	}
	delete(ann, originAnnotation)
	if len(ann) == 0 {
		ann = nil
	}
	o.Obj.SetAnnotations(ann)
	p, generator, ok := origins.parse(raw)
	if !ok {
		return fallback, ""
	}
	if p == "" {
		return fallback, generator
	}
	if r, ok := rel(path.Join(wrapperDir, p)); ok {
		return r, generator
	}
	return fallback, generator
}

// originParse is what originOf reads from an origin annotation: the path
// (origin.path, else configuredIn), the builtin generator that made the
// resource, and false when the annotation does not parse or names a remote
// repository.
type originParse struct {
	path, generator string
	ok              bool
}

// origins remembers parsed origin annotations, as the same few values (one per
// file and generator) come back for every resource of a file and every render of
// a base: parsing each with sigs.k8s.io/yaml was about 2% of a render process's
// CPU on PR-wide at T=200. The parse depends on the text alone. Bounded: past
// maxOriginMemo texts it starts again empty.
var origins = originMemo{m: map[string]originParse{}}

const maxOriginMemo = 1 << 14

type originMemo struct {
	mu sync.Mutex
	m  map[string]originParse
}

// originParses counts the annotations parseOrigin read, for tests.
var originParses atomic.Int64

func (c *originMemo) parse(raw string) (path, generator string, ok bool) {
	c.mu.Lock()
	r, hit := c.m[raw]
	c.mu.Unlock()
	if !hit {
		r = parseOrigin(raw)
		c.mu.Lock()
		if len(c.m) >= maxOriginMemo {
			clear(c.m)
		}
		c.m[raw] = r
		c.mu.Unlock()
	}
	return r.path, r.generator, r.ok
}

// parseOrigin reads one origin annotation (kustomize's resource.Origin, as
// Origin.String writes it).
func parseOrigin(raw string) originParse {
	originParses.Add(1)
	var origin struct {
		Path         string `json:"path"`
		ConfiguredIn string `json:"configuredIn"`
		ConfiguredBy struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		} `json:"configuredBy"`
		Repo string `json:"repo"`
	}
	if err := sigsyaml.Unmarshal([]byte(raw), &origin); err != nil || origin.Repo != "" {
		return originParse{}
	}
	r := originParse{path: origin.Path, ok: true}
	if origin.ConfiguredBy.APIVersion == "builtin" {
		r.generator = origin.ConfiguredBy.Kind
	}
	if r.path == "" {
		r.path = origin.ConfiguredIn
	}
	return r
}

// generatedHash is the hash suffix kustomize's ConfigMapGenerator or
// SecretGenerator appended to o's name, or "" when it appended none
// (disableNameSuffixHash) or o is not generated. kustomize's HashTransformer runs
// last, at the top kustomization, and appends "-" + hasher.Hash(object) to the
// name the object has by then; the suffix counts only when kustomize's own hasher,
// run again on the object with that name, gives the same hash.
func generatedHash(o Object, generator string) string {
	if generator != "ConfigMapGenerator" && generator != "SecretGenerator" {
		return ""
	}
	name := o.Obj.GetName()
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return ""
	}
	stem, suffix := name[:i], name[i+1:]
	c := o.Obj.DeepCopy()
	c.SetName(stem)
	node, err := kyaml.FromMap(c.Object)
	if err != nil {
		return ""
	}
	h, err := (&hasher.Hasher{}).Hash(node)
	if err != nil || h != suffix {
		return ""
	}
	return suffix
}

// wrapperKustomization builds the generated kustomization that points at the target
// and applies the overrides.
func wrapperKustomization(sb *sandbox, dir string, ko KustomizeOptions, origins bool) ([]byte, error) {
	fromWrapper := func(p string) string { return path.Join("..", path.Base(checkoutMount), p) }
	k := map[string]any{
		"apiVersion": types.KustomizationVersion,
		"kind":       types.KustomizationKind,
		"resources":  []string{fromWrapper(dir)},
	}
	if origins {
		k["buildMetadata"] = []string{types.OriginAnnotations}
	}
	if ko.NamePrefix != "" {
		k["namePrefix"] = ko.NamePrefix
	}
	if ko.NameSuffix != "" {
		k["nameSuffix"] = ko.NameSuffix
	}
	if ko.Namespace != "" {
		k["namespace"] = ko.Namespace
	}
	if len(ko.CommonLabels) > 0 {
		k["labels"] = []types.Label{{Pairs: ko.CommonLabels}}
	}
	switch {
	case len(ko.CommonAnnotations) > 0 && ko.MetadataOnlyAnnotations:
		// Flux's commonMetadata annotates each object's own metadata only
		// (fluxcd/pkg ssa/utils/meta.go SetCommonMetadata, called by
		// kustomize-controller's apply after the build), never pod templates,
		// as kustomize's commonAnnotations does: a builtin transformer with
		// only that field.
		tr, err := sigsyaml.Marshal(map[string]any{
			"apiVersion":  "builtin",
			"kind":        "AnnotationsTransformer",
			"metadata":    map[string]any{"name": "common-metadata"},
			"annotations": ko.CommonAnnotations,
			"fieldSpecs":  []map[string]any{{"path": "metadata/annotations", "create": true}},
		})
		if err != nil {
			return nil, fmt.Errorf("kustomize override annotations: %w", err)
		}
		k["transformers"] = []string{string(tr)}
	case len(ko.CommonAnnotations) > 0:
		k["commonAnnotations"] = ko.CommonAnnotations
	}
	var images []types.Image
	for _, im := range ko.Images {
		img, err := parseImage(im)
		if err != nil {
			return nil, fmt.Errorf("kustomize override images: %w", err)
		}
		images = append(images, img)
	}
	if len(images) > 0 {
		k["images"] = images
	}
	var patches []map[string]any
	for i, p := range ko.Patches {
		var m map[string]any
		if err := sigsyaml.Unmarshal([]byte(p), &m); err != nil || m == nil {
			return nil, fmt.Errorf("kustomize override patch %d: not a patch entry (want a mapping with patch: or path:, and optional target:)", i+1)
		}
		// Files are read here and inlined: the load restrictor keeps the wrapper
		// from reading outside its own (virtual) directory.
		if pf, ok := m["path"].(string); ok {
			data, err := sb.readFile(pf)
			if err != nil {
				return nil, fmt.Errorf("kustomize override patch %d: %w", i+1, err)
			}
			delete(m, "path")
			m["patch"] = string(data)
		}
		patches = append(patches, m)
	}
	if len(patches) > 0 {
		k["patches"] = patches
	}
	var comps []string
	for _, c := range ko.Components {
		cr, err := cleanRel(c)
		if err != nil {
			return nil, fmt.Errorf("kustomize override component: %w", err)
		}
		comps = append(comps, fromWrapper(cr))
	}
	if len(comps) > 0 {
		k["components"] = comps
	}
	return sigsyaml.Marshal(k)
}

// parseImage reads "name=newName:tag", "name=newName@digest" or "name:tag".
func parseImage(s string) (types.Image, error) {
	name, ref, hasEq := strings.Cut(s, "=")
	if !hasEq {
		ref = s
	}
	img := types.Image{}
	if d := strings.Index(ref, "@"); d >= 0 {
		img.Digest = ref[d+1:]
		ref = ref[:d]
	}
	if c := strings.LastIndex(ref, ":"); c > strings.LastIndex(ref, "/") {
		img.NewTag = ref[c+1:]
		ref = ref[:c]
	}
	if !hasEq {
		name = ref
	} else if ref != name {
		img.NewName = ref
	}
	if name == "" || (img.NewTag == "" && img.Digest == "" && img.NewName == "") {
		return img, fmt.Errorf("%q: want name=newName:tag or name:tag", s)
	}
	img.Name = name
	return img, nil
}

// pathKeys are kustomization fields whose string values are file or directory
// paths relative to the kustomization.
var pathKeys = map[string]bool{
	"resources": true, "bases": true, "components": true, "crds": true,
	"configurations": true, "patchesStrategicMerge": true, "path": true,
	"files": true, "envs": true, "env": true,
	"generators": true, "transformers": true, "validators": true,
}

var remoteKeys = map[string]bool{
	"resources": true, "bases": true, "components": true,
	"generators": true, "transformers": true, "validators": true,
}

// fetchKeys are the fields whose remote entries (bases and components, as git
// repositories) the caller may fetch: see KustomizeOptions.RemoteBases.
var fetchKeys = map[string]bool{"resources": true, "bases": true, "components": true}

var pluginKeys = map[string]bool{"generators": true, "transformers": true, "validators": true}

var helmKeys = []string{"helmCharts", "helmChartInflationGenerator", "helmGlobals"}

// builtinKinds are the kustomize builtin plugins a generators:/transformers: entry
// may configure; anything else is an external plugin.
var builtinKinds = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range krusty.GetBuiltinPluginNames() {
		m[n] = true
	}
	return m
}()

// screenKustomization refuses what a PR must not make kustomize do, pointing at the
// line of the offending entry. helmRefusedBy, when set, names the controller
// that builds without --enable-helm (KustomizeHelm.RefusedBy): the Helm
// fields are then refused as that controller's kustomize refuses them;
// otherwise they are inflated in process (helmcharts.go), which checks their
// paths.
func screenKustomization(sb *sandbox, file string, data []byte, helmRefusedBy string) error {
	docs, err := screenedOf(data, file)
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return nil
	}
	root := resolve(docs[0].Node)
	if root.Kind != yaml.MappingNode {
		return &Error{File: file, Line: root.Line, Err: errors.New("a kustomization must be a YAML mapping")}
	}
	dir := path.Dir(file)
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i].Value, root.Content[i+1]
		if slices.Contains(helmKeys, key) {
			if helmRefusedBy != "" {
				return &Error{File: file, Line: root.Content[i].Line, Err: fmt.Errorf("%s: %s builds kustomizations without Helm, so this fails there as in kustomize: \"must specify --enable-helm\"", key, helmRefusedBy)}
			}
			continue
		}
		if err := screenPaths(sb, file, dir, key, val); err != nil {
			return err
		}
	}
	return nil
}

// screenPaths walks a kustomization field, checking every path-valued string.
func screenPaths(sb *sandbox, file, dir, key string, n *yaml.Node) error {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if pluginKeys[key] {
				k = key // an inline plugin config inside generators: is still one
			}
			if err := screenPaths(sb, file, dir, k, n.Content[i+1]); err != nil {
				return err
			}
		}
		if pluginKeys[key] {
			return screenPlugin(file, n.Line, n)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := screenPaths(sb, file, dir, key, c); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if !pathKeys[key] || n.Value == "" {
			return nil
		}
		v := n.Value
		if pluginKeys[key] && strings.Contains(v, "\n") {
			return screenInlinePlugin(file, n)
		}
		if key == "files" {
			if _, after, ok := strings.Cut(v, "="); ok {
				v = after
			}
		}
		if strings.Contains(v, "://") || remoteKeys[key] && isRemote(sb, dir, v) {
			if fetchKeys[key] {
				if _, ok := sb.remotes[v]; ok {
					return nil // fetched by the caller; kfs serves the copy
				}
				// The caller fetches it (when the remote policy allows) and
				// renders again; else the target is not rendered, with why.
				return &Error{File: file, Line: n.Line, Err: &Unavailable{Reason: fmt.Sprintf("remote %s %q is not fetched: %s", key, v, remote.OffReason), Remote: v}}
			}
			what := "file"
			if remoteKeys[key] {
				what = "base"
			}
			return &Error{File: file, Line: n.Line, Err: fmt.Errorf("remote %s %q is not allowed: driftpreview renders without network access; vendor the %s into the repository and refer to it by a relative path", key, v, what)}
		}
		if strings.HasPrefix(v, "/") {
			return &Error{File: file, Line: n.Line, Err: fmt.Errorf("absolute path %q is not allowed: use a path relative to the kustomization", v)}
		}
		target := path.Join(dir, v)
		if target == ".." || strings.HasPrefix(target, "../") {
			return &Error{File: file, Line: n.Line, Err: fmt.Errorf("path %q leads outside the repository", v)}
		}
		if pluginKeys[key] {
			if fi, err := sb.stat(target); err == nil && !fi.IsDir() {
				data, err := sb.readFile(target)
				if err != nil {
					return err
				}
				docs, err := DecodeYAML(data, target)
				if err != nil {
					return err
				}
				for _, d := range docs {
					if err := screenPlugin(file, n.Line, resolve(d.Node)); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func screenInlinePlugin(file string, n *yaml.Node) error {
	docs, err := DecodeYAML([]byte(n.Value), file)
	if err != nil {
		return &Error{File: file, Line: n.Line, Err: errors.New("inline plugin configuration is not valid YAML")}
	}
	for _, d := range docs {
		if err := screenPlugin(file, n.Line, resolve(d.Node)); err != nil {
			return err
		}
	}
	return nil
}

// screenPlugin refuses a generator/transformer/validator configuration that is a
// KRM function (exec or container) or an external plugin.
func screenPlugin(file string, line int, n *yaml.Node) error {
	var cfg struct {
		Kind     string `yaml:"kind"`
		Metadata struct {
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
	}
	if err := n.Decode(&cfg); err != nil {
		return &Error{File: file, Line: line, Err: errors.New("plugin configuration is not a mapping")}
	}
	for _, a := range []string{"config.kubernetes.io/function", "config.k8s.io/function"} {
		if _, ok := cfg.Metadata.Annotations[a]; ok {
			return &Error{File: file, Line: line, Err: fmt.Errorf("KRM function %s is not allowed: driftpreview never runs exec or container functions from a pull request; commit the function's output instead", cfg.Kind)}
		}
	}
	if cfg.Kind == "HelmChartInflationGenerator" {
		return &Error{File: file, Line: line, Err: errors.New("HelmChartInflationGenerator as a generators: entry is not supported: list the chart under the kustomization's helmCharts:, which driftpreview inflates in process")}
	}
	if !builtinKinds[cfg.Kind] {
		return &Error{File: file, Line: line, Err: fmt.Errorf("plugin %q is not a kustomize builtin: external plugins are not allowed; commit the plugin's output instead", cfg.Kind)}
	}
	return nil
}

var hostLike = regexp.MustCompile(`^[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)+(:\d+)?/`)

// isRemote is IsRemote for an entry of the kustomization in dir.
func isRemote(sb *sandbox, dir, v string) bool {
	return IsRemote(v, func(p string) bool {
		_, err := sb.stat(path.Join(dir, p))
		return err == nil
	})
}

// IsRemote reports whether a kustomization reference (a resources, components or
// bases entry) names something kustomize would fetch: a URL, a git reference
// (git@, git::, gh:, github.com/…, ?ref=, Azure's _git/) or a host/path spec
// (example.com/x, repo.git/dir) that does not exist locally. exists says whether a
// path relative to the kustomization's directory exists there; nil means it does
// not. Kustomize's own rule (api/internal/git RepoSpecFromURL) tries the path
// locally first and falls back to a remote fetch.
func IsRemote(v string, exists func(string) bool) bool {
	switch {
	case strings.Contains(v, "://"),
		strings.HasPrefix(v, "git@"), strings.HasPrefix(v, "git::"),
		strings.HasPrefix(v, "gh:"), strings.HasPrefix(v, "github.com"),
		strings.HasPrefix(v, "gitlab.com"), strings.HasPrefix(v, "bitbucket.org"),
		strings.Contains(v, "?ref="), strings.Contains(v, "?version="),
		strings.Contains(v, "_git/"):
		return true
	}
	if hostLike.MatchString(v) || strings.Contains(v, ".git/") || strings.HasSuffix(v, ".git") {
		return exists == nil || !exists(v)
	}
	return false
}

var quoted = regexp.MustCompile(`'([^'\n]+)'|"([^"\n]+)"`)

// kustomizeError turns a krusty error into an *Error, on the kustomization line
// that names the path the error mentions when one matches.
func kustomizeError(sb *sandbox, fsys *kfs, kustFile string, err error) error {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "../"+path.Base(checkoutMount)+"/", "")
	msg = strings.ReplaceAll(msg, checkoutMount+"/", "")
	msg = strings.ReplaceAll(msg, wrapperDir+"/", "")
	fsys.mu.Lock()
	kusts := slices.Clone(fsys.kusts)
	hints := slices.Clone(fsys.syntax)
	fsys.mu.Unlock()
	// A YAML syntax error in a resource: our own parser named file and line.
	if strings.Contains(msg, "MalformedYAML") || strings.Contains(msg, "yaml: ") {
		for _, h := range hints {
			var re *Error
			if errors.As(h, &re) && strings.Contains(msg, path.Base(re.File)) {
				return h
			}
		}
	}
	slices.Reverse(kusts)
	var tokens []string
	for _, m := range quoted.FindAllStringSubmatch(err.Error(), -1) {
		t := m[1] + m[2]
		if r, ok := rel(t); ok && strings.HasPrefix(t, "/") {
			t = r
		}
		tokens = append(tokens, t)
	}
	for _, t := range tokens {
		for _, kf := range kusts {
			if line := entryLine(sb, kf, t); line > 0 {
				return &Error{File: kf, Line: line, Err: fmt.Errorf("kustomize build: %s", msg)}
			}
		}
	}
	file := kustFile
	if len(kusts) > 0 {
		file = kusts[0]
	}
	return &Error{File: file, Err: fmt.Errorf("kustomize build: %s", msg)}
}

// entryLine finds the line of kustomization kf whose value is token, either
// literally or as a path relative to kf's directory.
func entryLine(sb *sandbox, kf, token string) int {
	data, err := sb.root.ReadFile(kf)
	if err != nil {
		return 0
	}
	dir := path.Dir(kf)
	for i, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		l = strings.TrimPrefix(l, "- ")
		if _, v, ok := strings.Cut(l, ": "); ok && !strings.HasPrefix(l, "\"") {
			l = v
		}
		v := strings.Trim(strings.TrimSpace(l), `"'`)
		if v == "" || v == "-" {
			continue
		}
		if v == token || path.Join(dir, v) == token {
			return i + 1
		}
	}
	return 0
}
