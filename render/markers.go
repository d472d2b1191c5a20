package render

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
)

// Source markers: how a kustomize build learns where each object came from
// without kustomize's origin annotations.
//
// With buildMetadata: [originAnnotations], kustomize annotates every object
// with its file, and then, after every transformer of every kustomization, for
// every object, parses that annotation (YAML) and rewrites the object's
// annotations (resmap AddTransformerAnnotation, internal/target
// multitransformer.go). That bookkeeping was a third of the CPU of the 240
// kustomize builds of `make bench`'s PR-wide (BenchmarkPRWideRenders:
// "kustomize" against "kustomize-no-origins"), and the sources are all the
// render keeps of it.
//
// So a build first runs without origin annotations, and the render filesystem
// (kfs) marks each document of each file a kustomization lists under resources
// with a YAML comment naming the file, just above the document's first line of
// content, where YAML attaches it to the object's first key (yaml.v3
// HeadComment). A comment is not data: kustomize's transformers, hashes and
// output never see it (the output is JSON), and kyaml keeps a key's comments
// through kustomize's edits and strategic merge patches. Each
// configMapGenerator and secretGenerator entry of a kustomization is served
// with one more annotation in its options (driftpreview.dev/source-<nonce>,
// naming the kustomization), which the objects it makes carry from the moment
// they are made, as they would carry the origin annotation (resmap
// AddOriginAnnotation, right after the generators run); it is not part of the
// hash kustomize gives a ConfigMap or Secret (hasher encodeConfigMap,
// encodeSecret), and it is taken off the output as originOf takes the origin
// annotation off. That is what the origin annotation would have said
// (configuredIn, configuredBy).
//
// A build whose every object is accounted for that way is used as it is.
// Anything else (an object without a marker, as after a JSON 6902 patch,
// which rebuilds the object from JSON; an object with two markers; a file
// listed both as a resource and as something else; a generator that merges
// into or replaces another object, which copies the generated object's
// annotations; generator plugins; a build that fails) is
// built again the way it was before, with origin annotations, whose result is
// the one kept: markers can only make a build cheaper, never different.
//
// With DRIFTPREVIEW_CHECK_SOURCE_MARKERS=1 in the environment (`make test`
// sets it), every build that markers account for is built again with
// origin annotations, and a difference between the two is the render's error.
type sourceMarks struct {
	nonce string

	mu        sync.Mutex
	files     []string       // marked files (virtual paths), by marker number
	index     map[string]int // virtual path → marker number
	resources map[string]bool
	refs      map[string]bool   // files a kustomization names other than as resources
	plugins   map[string]string // transformer and validator config files → their kustomization's directory
	unsure    string            // why the build's markers cannot be trusted, "" when they can
	// top is the target's kustomization file when the build starts at it
	// rather than at a wrapper over it (buildKustomize), "" otherwise.
	top     string
	refused error // refuseUnwrapped's
}

func newSourceMarks() *sourceMarks {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &sourceMarks{nonce: hex.EncodeToString(b), index: map[string]int{}, resources: map[string]bool{}, refs: map[string]bool{}, plugins: map[string]string{}}
}

// markPrefix starts every marker comment; the nonce makes one that a file
// writes itself impossible to mistake for one.
func (m *sourceMarks) markPrefix() string { return "# driftpreview-source " + m.nonce + " " }

// generatorKey is the annotation a generator entry's objects carry.
func (m *sourceMarks) generatorKey() string { return "driftpreview.dev/source-" + m.nonce }

// number is the marker number of file c.
func (m *sourceMarks) number(c string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, seen := m.index[c]
	if !seen {
		n = len(m.files)
		m.files = append(m.files, c)
		m.index[c] = n
	}
	return n
}

func (m *sourceMarks) distrust(why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.unsure == "" {
		m.unsure = why
	}
}

// serve is what kfs does with a file it serves to kustomize: it notes what a
// kustomization names and marks the documents of a resource file. c is the
// file's clean virtual path.
func (m *sourceMarks) serve(c string, data []byte) []byte {
	if isKustomizationFile(c) {
		m.noteKustomization(c, data)
		if !bytes.Contains(data, []byte("Generator")) {
			return data
		}
		out, ok := markGenerators(data, m.generatorKey(), strconv.Itoa(m.number(c)))
		if !ok {
			m.distrust(c + ": its generators cannot be marked")
			return data
		}
		return out
	}
	m.mu.Lock()
	isResource := m.resources[c]
	pluginDir, isPlugin := m.plugins[c]
	m.mu.Unlock()
	if isPlugin {
		m.notePlugin(pluginDir, data)
	}
	if !isResource {
		return data
	}
	out, ok := markDocuments(data, m.markPrefix()+strconv.Itoa(m.number(c))+"\n")
	if !ok {
		m.distrust(c + ": a document starts on its --- line")
	}
	return out
}

// refuseUnwrapped refuses a build that starts at the target's kustomization
// instead of at a wrapper over it (m.top set) when kustomization k (in file c)
// sets what kustomize reads differently at the top (krusty Run,
// KustTarget.makeCustomizedResMap and accumulateDirectory in
// sigs.k8s.io/kustomize/api):
//   - at the top: under a wrapper, its buildMetadata is replaced by the
//     wrapper's, its sortOptions are not applied (the wrapper has none, and
//     krusty's default is not to sort), its openapi schema does not reset the
//     one in use, and a Component is refused;
//   - anywhere in the build: configurations and crds add to the transformer
//     configuration, which the wrapper merges once more into kustomize's
//     defaults (TransformerConfig.Merge), where a field spec the target added
//     can shadow a default one of the same path, or conflict with it.
//
// The build then stops at once (the render filesystem fails the next read)
// and is made again with the wrapper.
func (m *sourceMarks) refuseUnwrapped(c string, k *types.Kustomization) {
	if m.top == "" {
		return
	}
	why := ""
	switch {
	case len(k.Configurations) > 0:
		why = "configurations"
	case len(k.Crds) > 0:
		why = "crds"
	case c != m.top:
		return
	case len(k.BuildMetadata) > 0:
		why = "buildMetadata at the top"
	case k.SortOptions != nil:
		why = "sortOptions at the top"
	case len(k.OpenAPI) > 0:
		why = "openapi at the top"
	case k.Kind == types.ComponentKind:
		why = "kind Component at the top"
	default:
		return
	}
	m.distrust(c + ": " + why)
	m.mu.Lock()
	m.refused = fmt.Errorf("%s: %s: built under a wrapper instead", c, why)
	m.mu.Unlock()
}

// refusedUnwrapped is refuseUnwrapped's refusal, nil when there is none.
func (m *sourceMarks) refusedUnwrapped() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// noteKustomization records the files kustomization c lists as resources and
// every other file it names.
func (m *sourceMarks) noteKustomization(c string, data []byte) {
	k := kustomizationOf(data)
	if k == nil {
		m.distrust(c + " does not parse") // kustomize says why
		return
	}
	m.refuseUnwrapped(c, k)
	dir := path.Dir(c)
	at := func(e string) string { return clean(path.Join(dir, e)) }
	var refs []string
	ref := func(es ...string) {
		for _, e := range es {
			if _, p, ok := strings.Cut(e, "="); ok {
				e = p // a generator's key=file
			}
			refs = append(refs, at(e))
		}
	}
	for _, p := range k.Patches {
		ref(p.Path)
	}
	// The deprecated fields still count: kustomize moves them into resources
	// and patches as it loads a kustomization (types FixKustomization).
	//lint:ignore SA1019 kustomize still reads it
	for _, p := range k.PatchesStrategicMerge {
		ref(string(p))
	}
	//lint:ignore SA1019 kustomize still reads it
	for _, p := range k.PatchesJson6902 {
		ref(p.Path)
	}
	for _, r := range k.Replacements {
		ref(r.Path)
	}
	ref(k.Crds...)
	ref(k.Configurations...)
	ref(k.Transformers...)
	ref(k.Validators...)
	ref(k.OpenAPI["path"])
	var gens []types.GeneratorArgs
	for _, g := range k.ConfigMapGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range k.SecretGenerator {
		gens = append(gens, g.GeneratorArgs)
	}
	for _, g := range gens {
		ref(g.FileSources...)
		ref(g.EnvSources...)
		ref(g.EnvSource)
		if g.Behavior != "" && g.Behavior != "create" {
			m.distrust(c + ": a generator with behavior " + g.Behavior)
		}
	}
	if len(k.Generators) > 0 || len(k.HelmCharts) > 0 || k.HelmChartInflationGenerator != nil {
		m.distrust(c + ": generator plugins")
	}
	// A transformer's or validator's config may name files of its own (a
	// PatchTransformer's path) or copy annotations (a
	// ReplacementTransformer): inline configs are read here, files when
	// kustomize reads them (serve).
	var plugins []string
	for _, e := range append(slices.Clone(k.Transformers), k.Validators...) {
		if strings.Contains(e, "\n") {
			m.notePlugin(dir, []byte(e))
		} else {
			plugins = append(plugins, at(e))
		}
	}
	for _, r := range k.Replacements {
		// A replacement that copies a whole metadata or annotations map
		// carries the origin annotation with it, not the marker comment.
		if r.Path != "" || r.Source != nil && wholeMetadata(r.Source.FieldPath) {
			m.distrust(c + ": a replacement that may copy annotations")
			continue
		}
		for _, t := range r.Targets {
			if t == nil {
				continue
			}
			for _, f := range t.FieldPaths {
				if wholeMetadata(f) {
					m.distrust(c + ": a replacement that may copy annotations")
				}
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	//lint:ignore SA1019 kustomize still reads it
	for _, e := range append(k.Resources, k.Bases...) {
		m.resources[at(e)] = true
	}
	for _, r := range refs {
		m.refs[r] = true
	}
	for _, p := range plugins {
		m.plugins[p] = dir
	}
}

// notePlugin records the files a transformer or validator config (of the
// kustomization in dir) names, and distrusts one that may copy a whole
// metadata or annotations map: any path, paths, fieldPath or fieldPaths
// anywhere in it, whatever the plugin.
func (m *sourceMarks) notePlugin(dir string, data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var refs []string
	for {
		var doc any
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			m.distrust(dir + ": a plugin config that does not parse")
			return
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for key, e := range v {
					switch s := e.(type) {
					case string:
						switch key {
						case "path":
							refs = append(refs, clean(path.Join(dir, s)))
						case "fieldPath":
							if wholeMetadata(s) {
								m.distrust(dir + ": a plugin that may copy annotations")
							}
						}
					case []any:
						for _, it := range s {
							if str, ok := it.(string); ok && key == "paths" {
								refs = append(refs, clean(path.Join(dir, str)))
							}
							if str, ok := it.(string); ok && key == "fieldPaths" && wholeMetadata(str) {
								m.distrust(dir + ": a plugin that may copy annotations")
							}
						}
					}
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(doc)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range refs {
		m.refs[r] = true
	}
}

// wholeMetadata reports whether a replacement's field path is an object's
// whole metadata or annotations map (an empty source path is metadata.name,
// types.DefaultReplacementFieldPath).
func wholeMetadata(fieldPath string) bool {
	switch strings.Trim(fieldPath, ".") {
	case "metadata", "metadata.annotations":
		return true
	}
	return false
}

// markGenerators adds the annotation key: value to the options of every
// configMapGenerator and secretGenerator entry of kustomization data. ok is
// false when that cannot be done without changing anything else: a document
// after the first, an entry or options that is not a mapping, a merge key
// (<<), or any anchor or alias in the kustomization.
func markGenerators(data []byte, key, value string) (out []byte, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc, more yaml.Node
	if dec.Decode(&doc) != nil || len(doc.Content) == 0 || dec.Decode(&more) != io.EOF {
		return data, false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode || anyNode(&doc, func(n *yaml.Node) bool { return n.Kind == yaml.AliasNode || n.Anchor != "" }) {
		// An anchored mapping changed here would change wherever it is
		// aliased (labels, commonAnnotations, another generator).
		return data, false
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	// field is the mapping under name in mapping n, added when n has none.
	field := func(n *yaml.Node, name string) (*yaml.Node, bool) {
		if _, merge := mapValue(n, "<<"); merge {
			return nil, false
		}
		if v, ok := mapValue(n, name); ok {
			if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				*v = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			return v, v.Kind == yaml.MappingNode
		}
		v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		n.Content = append(n.Content, str(name), v)
		return v, true
	}
	changed := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i].Value; k != "configMapGenerator" && k != "secretGenerator" {
			continue
		}
		seq := root.Content[i+1]
		if seq.Kind == yaml.ScalarNode && seq.Tag == "!!null" {
			continue
		}
		if seq.Kind != yaml.SequenceNode {
			return data, false
		}
		for _, e := range seq.Content {
			if e.Kind != yaml.MappingNode {
				return data, false
			}
			opts, ok := field(e, "options")
			if !ok {
				return data, false
			}
			ann, ok := field(opts, "annotations")
			if !ok {
				return data, false
			}
			if _, has := mapValue(ann, key); has {
				return data, false
			}
			ann.Content = append(ann.Content, str(key), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: value})
			changed = true
		}
	}
	if !changed {
		return data, true
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return data, false
	}
	return out, true
}

// mapValue is the value under key in mapping n.
func mapValue(n *yaml.Node, key string) (*yaml.Node, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

// markDocuments inserts mark (a comment line) above the first line of content
// of every YAML document in data. ok is false when a document's content starts
// on its --- line, where no comment line can go above it.
func markDocuments(data []byte, mark string) (out []byte, ok bool) {
	ok = true
	out = make([]byte, 0, len(data)+4*len(mark))
	if bom := []byte("\xef\xbb\xbf"); bytes.HasPrefix(data, bom) {
		out, data = append(out, bom...), data[len(bom):]
	}
	pending := true // in a document whose first line of content is not seen yet
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line = data[:i+1]
		}
		data = data[len(line):]
		t := bytes.TrimRight(line, " \t\r\n")
		switch {
		case bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- #")) || bytes.HasPrefix(t, []byte("---\t#")):
			pending = true
		case bytes.HasPrefix(t, []byte("---")) && len(t) > 3 && (t[3] == ' ' || t[3] == '\t'):
			ok, pending = false, false // content on the marker line
		case bytes.Equal(t, []byte("...")):
			pending = true
		case pending && len(bytes.TrimLeft(t, " \t")) > 0 && !bytes.HasPrefix(bytes.TrimLeft(t, " \t"), []byte("#")) && !bytes.HasPrefix(t, []byte("%")):
			out = append(out, mark...)
			pending = false
		}
		out = append(out, line...)
	}
	return out, ok
}

// markOf is the marked file of a resource kustomize built: from the marker on
// its node or its first key. ok is false for a resource with no marker, or with
// markers of two files.
func (m *sourceMarks) markOf(r *resource.Resource) (file string, marked, ok bool) {
	n := r.YNode()
	if n == nil {
		return "", false, true
	}
	comments := []string{n.HeadComment}
	if n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		comments = append(comments, n.Content[0].HeadComment)
	}
	prefix := m.markPrefix()
	found := -1
	for _, c := range comments {
		for c != "" {
			i := strings.Index(c, prefix)
			if i < 0 {
				break
			}
			c = c[i+len(prefix):]
			end := strings.IndexByte(c, '\n')
			if end < 0 {
				end = len(c)
			}
			k, err := strconv.Atoi(c[:end])
			m.mu.Lock()
			valid := err == nil && k >= 0 && k < len(m.files)
			m.mu.Unlock()
			if !valid || (found >= 0 && found != k) {
				return "", true, false
			}
			found, c = k, c[end:]
		}
	}
	if found < 0 {
		return "", false, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files[found], true, true
}

// sources are the source and generator of each object of a build, as originOf
// reads them from origin annotations, or ok false when the markers cannot say.
// resources and objs are the build's, in the same order.
func (m *sourceMarks) sources(resources []*resource.Resource, objs []parsedObject, fallback string) (src, gen []string, ok bool) {
	m.mu.Lock()
	unsure := m.unsure != ""
	for f := range m.index {
		unsure = unsure || m.refs[f]
	}
	m.mu.Unlock()
	if unsure || len(resources) != len(objs) {
		return nil, nil, false
	}
	src, gen = make([]string, len(objs)), make([]string, len(objs))
	for i, r := range resources {
		file, marked, good := m.markOf(r)
		if !good {
			return nil, nil, false
		}
		if marked {
			if ann := r.GetAnnotations(); ann[m.generatorKey()] != "" {
				return nil, nil, false // a generator's object merged into it
			}
			src[i] = fallback
			if p, in := rel(file); in {
				src[i] = p
			}
			continue
		}
		kust, kind, good := m.generatedBy(objs[i].Object)
		if !good {
			return nil, nil, false
		}
		src[i], gen[i] = fallback, kind
		if p, in := rel(kust); in {
			src[i] = p
		}
	}
	return src, gen, true
}

// generatedBy is the kustomization whose generator made o, told by the
// annotation markGenerators gave the generator, and the kind of that
// generator; the annotation is taken off o. ok is false for an object
// without it, or of a kind no ConfigMapGenerator or SecretGenerator makes.
func (m *sourceMarks) generatedBy(o Object) (kust, kind string, ok bool) {
	switch o.Obj.GetKind() {
	case "ConfigMap":
		kind = "ConfigMapGenerator"
	case "Secret":
		kind = "SecretGenerator"
	default:
		return "", "", false
	}
	md, _ := o.Obj.Object["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, _ := ann[m.generatorKey()].(string)
	n, err := strconv.Atoi(v)
	m.mu.Lock()
	valid := err == nil && n >= 0 && n < len(m.files) && isKustomizationFile(m.files[n])
	if valid {
		kust = m.files[n]
	}
	m.mu.Unlock()
	if !valid || o.Obj.GetAPIVersion() != "v1" {
		return "", "", false
	}
	delete(ann, m.generatorKey())
	return kust, kind, true
}

// checkMarkersEnv turns checkSourceMarkers on, in this process and the render
// processes it starts.
const checkMarkersEnv = "DRIFTPREVIEW_CHECK_SOURCE_MARKERS"

var checkSourceMarkers = os.Getenv(checkMarkersEnv) == "1"

// markedBuilds and markerFallbacks count the builds source markers accounted
// for and those built again with origin annotations, for tests.
var markedBuilds, markerFallbacks atomic.Int64

// unwrappedBuilds counts the builds that started at the target's
// kustomization rather than at a wrapper over it (buildKustomize), for tests.
var unwrappedBuilds atomic.Int64

// checkMarkedBuild builds the target again with origin annotations and
// reports how the result differs from set, the build's with source markers.
// What the second build reads and prints is not counted.
func checkMarkedBuild(ctx context.Context, sb *sandbox, dir, kustFile string, gen []byte, opts Options, set ObjectSet) error {
	read, out := sb.usage()
	defer sb.setUsage(read, out)
	want, _, err := buildKustomize(ctx, sb, dir, kustFile, gen, opts, nil)
	if err != nil {
		return fmt.Errorf("source markers: %s builds with markers but not with origin annotations: %w", dir, err)
	}
	if len(want.Objects) != len(set.Objects) {
		return fmt.Errorf("source markers: %s: %d objects with markers, %d with origin annotations", dir, len(set.Objects), len(want.Objects))
	}
	for i := range want.Objects {
		g, w := set.Objects[i], want.Objects[i]
		if g.Source != w.Source || g.HashSuffix != w.HashSuffix || !reflect.DeepEqual(g.Obj.Object, w.Obj.Object) {
			return fmt.Errorf("source markers: %s: object %d differs: with markers %s from %q (hash %q) %v, with origin annotations %s from %q (hash %q) %v",
				dir, i, g.Key, g.Source, g.HashSuffix, g.Obj.Object, w.Key, w.Source, w.HashSuffix, w.Obj.Object)
		}
	}
	if !reflect.DeepEqual(set.Notes, want.Notes) {
		return fmt.Errorf("source markers: %s: notes differ: %q and %q", dir, set.Notes, want.Notes)
	}
	return nil
}
