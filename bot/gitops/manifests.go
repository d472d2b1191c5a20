package gitops

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/render"
)

// manifest is one object that matters to discovery: a controller object, a Flux
// source, or a ConfigMap/Secret that substitution or valuesFrom may read.
type manifest struct {
	APIVersion string
	Kind       string
	Name       string
	Namespace  string
	Obj        map[string]any
	// raw is Obj encoded as JSON, made once when the manifest is (newManifest)
	// and shared by its copies: decode and refDigests read it instead of
	// encoding Obj again at every round of discovery (Obj is only read).
	raw []byte
	// File is where it was declared (root-relative), Line its document's first line
	// (0 when it came out of a render).
	File string
	Line int
	// Parent is the target whose render produced it; empty for files in the repo.
	Parent string
	// parentKey is that target's cluster and name (discover.Key's form), so a
	// side's ancestry can be followed (config.Target.DeclaredBy).
	parentKey string
	Cluster   string // the parent target's cluster, inherited by rendered children
	// Generator names the ApplicationSet that generated an Application, and
	// generatorKeeps says its applicationsSync policy keeps Applications it no
	// longer generates.
	Generator      string
	generatorKeeps bool
	// superseded marks a file declared outside any clusters/<name>/ directory
	// once the render of a cluster's target has produced it: those rendered
	// copies, one per cluster, are what each cluster deploys.
	superseded bool
	// dupNotes say which keys its document repeats (read with the last value,
	// as Argo CD does): the notes of the targets it declares.
	dupNotes []string
	// substituted marks a rendered copy that took the place of a file named by
	// Flux postBuild variables (see templated).
	substituted bool
	// placed marks a file outside any clusters/<name>/ directory superseded
	// by its copies for the clusters of the unsearched renders that read it
	// (discovery.placeUnder); another such render places it again.
	placed bool
}

// group is the API group of the manifest.
func (m *manifest) group() string {
	if i := strings.IndexByte(m.APIVersion, '/'); i >= 0 {
		return m.APIVersion[:i]
	}
	return ""
}

// is says whether the manifest is an object of the controller kind k.
func (m *manifest) is(k diffing.ControllerKind) bool {
	return m.group() == k.GVR.Group && m.Kind == k.Kind
}

// templated says whether the manifest's name or namespace holds a Flux postBuild
// variable (${...}): a file that only a Kustomization substituting it deploys,
// never an object of that literal name (the apiserver refuses such a name).
func (m *manifest) templated() bool {
	return strings.Contains(m.Name, "${") || strings.Contains(m.Namespace, "${")
}

// isController says whether the manifest is an object discovery makes targets of.
func (m *manifest) isController() bool {
	return m.is(diffing.ArgoCDApplication) || m.is(diffing.ArgoCDApplicationSet) || m.is(diffing.FluxKustomization) || m.is(diffing.FluxHelmRelease)
}

// where names the manifest for notes and errors: file:line, or file (rendered by X).
func (m *manifest) where() string {
	switch {
	case m.Parent != "":
		return fmt.Sprintf("%s (rendered by target %s)", m.File, m.Parent)
	case m.Line > 0:
		return fmt.Sprintf("%s:%d", m.File, m.Line)
	}
	return m.File
}

// identity is the manifest's key for de-duplication, with the namespace its
// controller would default to. Everything but Argo CD objects is keyed by its
// cluster too: clusters/staging and clusters/production each declare their own
// Kustomization flux-system/apps. Argo CD Applications live where Argo CD runs,
// whatever the cluster of the target that rendered them.
func (m *manifest) identity() string {
	id := m.group() + "/" + m.Kind + "/" + m.namespaceOr(diffing.ControllerNamespace(m.group())) + "/" + m.Name
	if m.group() == groupArgo {
		return id
	}
	return m.Cluster + "|" + id
}

func (m *manifest) namespaceOr(def string) string {
	if m.Namespace != "" {
		return m.Namespace
	}
	return def
}

// decode reads the manifest into a typed struct through JSON, naming the manifest in
// the error.
func (m *manifest) decode(into any) error {
	b, err := m.json()
	if err != nil {
		return fmt.Errorf("%s: encoding %s %s: %w", m.where(), m.Kind, m.Name, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("%s: reading %s %s: %w", m.where(), m.Kind, m.Name, err)
	}
	return nil
}

// json is the manifest's object as JSON: raw, or Obj encoded now for a
// manifest not made by newManifest.
func (m *manifest) json() ([]byte, error) {
	if m.raw != nil {
		return m.raw, nil
	}
	return json.Marshal(m.Obj)
}

// interesting says whether discovery needs an object of this group and kind.
func interesting(apiVersion, kind string) bool {
	g := apiVersion
	if i := strings.IndexByte(g, '/'); i >= 0 {
		g = g[:i]
	} else {
		g = ""
	}
	switch {
	case g == groupArgo:
		return kind == diffing.ArgoCDApplication.Kind || kind == diffing.ArgoCDApplicationSet.Kind
	case strings.HasSuffix(g, ".toolkit.fluxcd.io"):
		return true
	case g == groupFluxGen:
		return kind == "ArtifactGenerator"
	case g == "":
		return kind == "ConfigMap" || kind == "Secret"
	}
	return false
}

// maxScanBytes caps a file discovery reads, like render's per-file limit.
const maxScanBytes = 10 << 20

// scanRepo walks root for YAML files that may declare controller objects. It skips
// .git, node_modules, symlinks and Helm chart directories (templates are not YAML;
// charts that produce Applications are found by rendering). charts are the chart
// directories whose templates mention Argo CD or Flux objects: candidates for an
// app-of-apps whose root object is not in the repository. The walk lists the
// files; they are read and parsed by a few goroutines (scanFile), and what
// they give is put back in the walk's order, so the Result is the same as
// from one goroutine.
func scanRepo(root string, parsed *Parsed) (found []*manifest, charts []string, notes []string, err error) {
	type file struct {
		rel, path string
		scanned   scanned
	}
	var files []*file
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking %s: %w", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p == root {
				return nil
			}
			switch d.Name() {
			case ".git", "node_modules":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "Chart.yaml")); err == nil {
				if chartMentionsGitOps(p) {
					charts = append(charts, rel)
				}
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices never leave the checkout
		}
		ext := path.Ext(rel)
		if ext != ".yaml" && ext != ".yml" {
			return nil
		}
		files = append(files, &file{rel: rel, path: p})
		return nil
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("discovering GitOps objects in %s: %w", root, err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(len(files), runtime.GOMAXPROCS(0), 4) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(files)); i = next.Add(1) - 1 {
				f := files[i]
				f.scanned = scanFile(f.rel, f.path, parsed)
			}
		})
	}
	wg.Wait()
	for _, f := range files {
		if f.scanned.err != nil {
			return nil, nil, nil, fmt.Errorf("discovering GitOps objects in %s: %w", root, f.scanned.err)
		}
		notes = append(notes, f.scanned.notes...)
		found = append(found, f.scanned.ms...)
	}
	return found, charts, notes, nil
}

// scanned is what scanFile found in one file.
type scanned struct {
	ms    []*manifest
	notes []string
	err   error
}

// scanFile reads and parses the file at p (rel in the checkout) for
// scanRepo: a file over maxScanBytes is noted and not read, and one that
// names no controller group, ConfigMap or Secret is not parsed.
func scanFile(rel, p string, parsed *Parsed) (s scanned) {
	info, err := os.Lstat(p)
	if err != nil {
		return scanned{err: fmt.Errorf("reading %s: %w", rel, err)}
	}
	if info.Size() > maxScanBytes {
		return scanned{notes: []string{fmt.Sprintf("%s is larger than %d bytes and was not searched for GitOps objects", rel, maxScanBytes)}}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return scanned{err: fmt.Errorf("reading %s: %w", rel, err)}
	}
	if !bytes.Contains(b, []byte("argoproj.io")) && !bytes.Contains(b, []byte("fluxcd.io")) &&
		!bytes.Contains(b, []byte("ConfigMap")) && !bytes.Contains(b, []byte("Secret")) {
		return scanned{}
	}
	ms, dups, perr := parsed.parse(rel, b)
	if len(ms) > 0 {
		for _, d := range dups {
			s.notes = append(s.notes, d.Note())
		}
	}
	if perr != nil {
		// Only a file that looks like a GitOps object is worth a note: other
		// YAML (CI config, templates) is none of discovery's business.
		if bytes.Contains(b, []byte("argoproj.io")) || bytes.Contains(b, []byte("fluxcd.io")) {
			s.notes = append(s.notes, fmt.Sprintf("%v: skipped while looking for GitOps objects", perr))
		}
	}
	s.ms = ms
	return s
}

// Parsed keeps the files discovery parsed, by path and content, for the
// discoveries of the two checkouts of one preview (Options.Parsed): a file
// alike at base and head is parsed once. Each discovery gets its own copy
// of each manifest (it changes their namespace, cluster and standing); the
// decoded objects are shared, and discovery only reads them. Safe for
// concurrent use. The zero value is ready; a nil *Parsed parses every time.
type Parsed struct {
	mu    sync.Mutex
	files map[[sha256.Size]byte]*parsedFile
}

type parsedFile struct {
	done chan struct{}
	ms   []*manifest
	dups []render.DuplicateKey
	err  error
}

// parse is parseManifests(file, b), once per path and content.
func (p *Parsed) parse(file string, b []byte) ([]*manifest, []render.DuplicateKey, error) {
	if p == nil {
		return parseManifests(file, b)
	}
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(b)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	p.mu.Lock()
	if p.files == nil {
		p.files = map[[sha256.Size]byte]*parsedFile{}
	}
	f, ok := p.files[key]
	if !ok {
		f = &parsedFile{done: make(chan struct{})}
		p.files[key] = f
	}
	p.mu.Unlock()
	if !ok {
		f.ms, f.dups, f.err = parseManifests(file, b)
		close(f.done)
	} else {
		<-f.done
	}
	out := make([]*manifest, len(f.ms))
	for i, m := range f.ms {
		c := *m
		out[i] = &c
	}
	return out, f.dups, f.err
}

// gitopsMarkers are the API groups whose mention in a chart's templates makes the
// chart worth rendering to look for controller objects.
var gitopsMarkers = [][]byte{[]byte("argoproj.io"), []byte("toolkit.fluxcd.io")}

// chartMentionsGitOps says whether a file under the chart's templates/ names an Argo
// CD or Flux API group. It reads at most 1,000 files of up to maxScanBytes each.
func chartMentionsGitOps(chartDir string) bool {
	found := false
	files := 0
	_ = filepath.WalkDir(filepath.Join(chartDir, "templates"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipAll
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if files++; files > 1000 {
			return filepath.SkipAll
		}
		if info, err := d.Info(); err != nil || info.Size() > maxScanBytes {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, m := range gitopsMarkers {
			if bytes.Contains(b, m) {
				found = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}

// parseManifests reads every YAML document of one file, through render's decoder
// and its limits (alias bombs, depth), and keeps the interesting ones. A key
// given twice in a mapping is read as Argo CD reads the file, the last value
// winning (render.DecodeYAMLLastKeyWins), and listed in dups. A file render
// would refuse gives no manifests and the error.
func parseManifests(file string, b []byte) ([]*manifest, []render.DuplicateKey, error) {
	docs, dups, err := render.DecodeYAMLLastKeyWins(b, file)
	if err != nil {
		return nil, nil, err
	}
	var out []*manifest
	for i, d := range docs {
		obj, ok := d.Value.(map[string]any)
		if !ok {
			continue // a list or scalar document: not an object
		}
		if m := newManifest(obj); m != nil {
			m.File, m.Line = file, d.Line
			for _, dup := range dups {
				if dup.Line >= d.Line && (i+1 == len(docs) || dup.Line < docs[i+1].Line) {
					m.dupNotes = append(m.dupNotes, dup.Note())
				}
			}
			out = append(out, m)
		}
	}
	return out, dups, nil
}

// newManifest wraps obj when discovery needs it; obj must be JSON-compatible.
func newManifest(obj map[string]any) *manifest {
	if obj == nil {
		return nil
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if !interesting(apiVersion, kind) {
		return nil
	}
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	if name == "" {
		return nil
	}
	// Round-trip through JSON so every value is JSON-shaped (render.DecodeYAML
	// and rendered objects give int64 where JSON has float64).
	b, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	var clean map[string]any
	if err := json.Unmarshal(b, &clean); err != nil {
		return nil
	}
	return &manifest{APIVersion: apiVersion, Kind: kind, Name: name, Namespace: ns, Obj: clean, raw: b}
}

// manifestsFromSet picks the interesting objects out of a target's render.
func manifestsFromSet(set render.ObjectSet, parent, cluster string) []*manifest {
	var out []*manifest
	for _, o := range set.Objects {
		if o.Obj == nil {
			continue
		}
		m := newManifest(o.Obj.Object)
		if m == nil {
			continue
		}
		m.File, m.Parent, m.Cluster, m.parentKey = o.Source, parent, cluster, TargetKey(cluster, parent)
		out = append(out, m)
	}
	return out
}
