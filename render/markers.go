package render

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"reflect"
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
// through kustomize's edits and strategic merge patches. The objects a
// ConfigMapGenerator or SecretGenerator made have no marker; they are told by
// their kind, the generator's name and the hash suffix kustomize's own hasher
// gives them (generatedHash), which is what the origin annotation would have
// said (configuredIn, configuredBy).
//
// A build whose every object is accounted for that way is used as it is.
// Anything else (an object without a marker that no generator explains, as
// after a JSON 6902 patch, which rebuilds the object from JSON; an object with
// two markers; a file listed both as a resource and as something else; a
// generator that merges into or replaces another object, which copies the
// generated object's annotations; generator plugins; a build that fails) is
// built again the way it was before, with origin annotations, whose result is
// the one kept: markers can only make a build cheaper, never different.
//
// With DRIFTPREVIEW_CHECK_SOURCE_MARKERS=1 in the environment (the tests set it,
// see TestMain), every build that markers account for is built again with
// origin annotations, and a difference between the two is the render's error.
type sourceMarks struct {
	nonce string

	mu        sync.Mutex
	files     []string       // marked files (virtual paths), by marker number
	index     map[string]int // virtual path → marker number
	resources map[string]bool
	refs      map[string]bool // files a kustomization names other than as resources
	gens      []generatorEntry
	unsure    string // why the build's markers cannot be trusted, "" when they can
}

// generatorEntry is one ConfigMapGenerator or SecretGenerator entry of a
// kustomization served during the build.
type generatorEntry struct {
	kust, kind, name string
}

func newSourceMarks() *sourceMarks {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &sourceMarks{nonce: hex.EncodeToString(b), index: map[string]int{}, resources: map[string]bool{}, refs: map[string]bool{}}
}

// markPrefix starts every marker comment; the nonce makes one that a file
// writes itself impossible to mistake for one.
func (m *sourceMarks) markPrefix() string { return "# driftpreview-source " + m.nonce + " " }

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
		return data
	}
	m.mu.Lock()
	isResource := m.resources[c]
	n, seen := m.index[c]
	if isResource && !seen {
		n = len(m.files)
		m.files = append(m.files, c)
		m.index[c] = n
	}
	m.mu.Unlock()
	if !isResource {
		return data
	}
	out, ok := markDocuments(data, m.markPrefix()+strconv.Itoa(n)+"\n")
	if !ok {
		m.distrust(c + ": a document starts on its --- line")
	}
	return out
}

// noteKustomization records the files kustomization c lists as resources,
// every other file it names, and its generators.
func (m *sourceMarks) noteKustomization(c string, data []byte) {
	var k types.Kustomization
	if err := k.Unmarshal(data); err != nil {
		m.distrust(c + " does not parse") // kustomize says why
		return
	}
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
	for _, p := range k.PatchesStrategicMerge {
		ref(string(p))
	}
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
	var gens []generatorEntry
	for _, g := range k.ConfigMapGenerator {
		ref(g.FileSources...)
		ref(g.EnvSources...)
		ref(g.EnvSource)
		gens = append(gens, generatorEntry{kust: c, kind: "ConfigMapGenerator", name: g.Name})
		if g.Behavior != "" && g.Behavior != "create" {
			m.distrust(c + ": a generator with behavior " + g.Behavior)
		}
	}
	for _, g := range k.SecretGenerator {
		ref(g.FileSources...)
		ref(g.EnvSources...)
		ref(g.EnvSource)
		gens = append(gens, generatorEntry{kust: c, kind: "SecretGenerator", name: g.Name})
		if g.Behavior != "" && g.Behavior != "create" {
			m.distrust(c + ": a generator with behavior " + g.Behavior)
		}
	}
	if len(k.Generators) > 0 || len(k.HelmCharts) > 0 || k.HelmChartInflationGenerator != nil {
		m.distrust(c + ": generator plugins")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range append(k.Resources, k.Bases...) {
		m.resources[at(e)] = true
	}
	for _, r := range refs {
		m.refs[r] = true
	}
	m.gens = append(m.gens, gens...)
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
			src[i] = fallback
			if p, in := rel(file); in {
				src[i] = p
			}
			continue
		}
		kust, kind, good := m.generated(objs[i].Object)
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

// generated finds the one generator of the build that made o: of o's kind,
// whose name is in o's name, and whose hash suffix kustomize's hasher gives
// o. An object that fits no generator, or generators of two kustomizations,
// is not told.
func (m *sourceMarks) generated(o Object) (kust, kind string, ok bool) {
	switch o.Obj.GetKind() {
	case "ConfigMap":
		kind = "ConfigMapGenerator"
	case "Secret":
		kind = "SecretGenerator"
	default:
		return "", "", false
	}
	if o.Obj.GetAPIVersion() != "v1" {
		return "", "", false
	}
	hash := generatedHash(o, kind)
	if hash == "" {
		return "", "", false
	}
	stem := strings.TrimSuffix(o.Obj.GetName(), "-"+hash)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.gens {
		if g.kind != kind || g.name == "" || !strings.Contains(stem, g.name) {
			continue
		}
		if kust != "" && kust != g.kust {
			return "", "", false
		}
		kust = g.kust
	}
	return kust, kind, kust != ""
}

// checkMarkersEnv turns checkSourceMarkers on, in this process and the render
// processes it starts.
const checkMarkersEnv = "DRIFTPREVIEW_CHECK_SOURCE_MARKERS"

var checkSourceMarkers = os.Getenv(checkMarkersEnv) == "1"

// markedBuilds and markerFallbacks count the builds source markers accounted
// for and those built again with origin annotations, for tests.
var markedBuilds, markerFallbacks atomic.Int64

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
