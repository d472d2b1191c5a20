package discover

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/render"
)

// PathOptions bounds and steers discovery by paths, which reads an untrusted
// checkout.
type PathOptions struct {
	// SkipDirs are directory names never entered, wherever they occur.
	SkipDirs []string
	// SkipHidden skips directories whose name starts with a dot (.git, .github…).
	SkipHidden bool
	// MaxFiles caps how many directory entries the scan looks at; a larger repo
	// fails discovery with an error that says to configure targets instead.
	MaxFiles int
	// MaxFileBytes caps how much of one file is read to classify it or to read a
	// kustomization's references; larger files are not read.
	MaxFileBytes int64
}

// DefaultPathOptions skips .git, node_modules, testdata, vendor and hidden
// directories, and stops after 200 000 entries or at files over 1 MiB.
func DefaultPathOptions() PathOptions {
	return PathOptions{
		SkipDirs:     []string{".git", "node_modules", "testdata", "vendor"},
		SkipHidden:   true,
		MaxFiles:     200_000,
		MaxFileBytes: 1 << 20,
	}
}

// FromPaths finds the targets to preview when the repository has no config and
// declares no GitOps controller objects. A target
// is a directory that renders on its own: a kustomization, a Helm chart (Chart.yaml),
// or a directory of plain manifests (YAML or JSON files with apiVersion and kind).
//
// With changed nil it returns every top-most target in the repository: directories
// referenced by a kustomization (bases, components, resource directories) are not
// targets themselves, nor is anything inside a chart (templates, vendored charts/
// subcharts) or a plain directory inside a kustomization. With changed set (paths
// relative to root, slash-separated, as git diff prints them) it returns only the
// targets those paths affect: a file belongs to the chart or kustomization above it,
// or to its own directory of manifests, and a change to a base reaches every
// kustomization that uses it, up to the ones nothing references: the overlays that
// deploy. The touched kustomization (or chart) itself is a target too even when
// others use it, since it renders on its own and may be deployed as it is (an app
// that is also another app's base). A base/ directory that no kustomization is seen
// referencing is treated as used by its sibling overlays/* and environments/*
// kustomizations. A file that no render reads (not a manifest, not named by a
// kustomization, not in a chart: a README, docs) affects no target.
//
// FromPaths only inspects files; it never renders. It reads through an os.Root, so a
// symlink that leads out of root is never followed, and it does not enter symlinked
// directories at all. Targets are sorted by path, named after it, render with
// render.RendererAuto (base and head may differ in kind) and default sync settings.
// A path deleted by the change may be missing from root: the bot calls FromPaths on
// both the base and the head checkout and merges the results by name.
func FromPaths(root string, changed []string, opts PathOptions) ([]config.Target, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("discovering targets in %s: %w", root, err)
	}
	defer r.Close()
	s := &scan{fsys: r.FS(), opts: opts, dirs: map[string]*dirInfo{}}
	if err := s.walk(); err != nil {
		return nil, fmt.Errorf("discovering targets in %s: %w", root, err)
	}
	s.link()

	found := map[string]bool{}
	if changed == nil {
		for d := range s.dirs {
			if s.deployable(d) {
				found[d] = true
			}
		}
	} else {
		var bad []error
		for _, c := range changed {
			if reason := config.BadRepoPath(c); reason != "" {
				bad = append(bad, fmt.Errorf("changed path %s %s", config.Display(c), reason))
				continue
			}
			for _, t := range s.affected(c) {
				found[t] = true
			}
		}
		if err := errors.Join(bad...); err != nil {
			return nil, fmt.Errorf("discovering targets in %s: %w", root, err)
		}
	}
	paths := make([]string, 0, len(found))
	for p := range found {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	targets := make([]config.Target, len(paths))
	for i, p := range paths {
		targets[i] = config.NewTarget(p)
	}
	return targets, nil
}

// dirInfo is what the scan learned about one directory.
type dirInfo struct {
	kustomization string // file name of its kustomization, "" when none
	component     bool   // the kustomization is a kind: Component
	chart         bool
	candidates    []string // .yaml/.yml/.json files that may be manifests
	plain         *bool    // cached answer of isPlain
	refs          []string // paths (dirs or files) the kustomization references
	referrers     []string // kustomization dirs that reference this dir
}

type scan struct {
	fsys  fs.FS
	opts  PathOptions
	dirs  map[string]*dirInfo
	files int
}

func (s *scan) skipDir(name string) bool {
	return slices.Contains(s.opts.SkipDirs, name) || (s.opts.SkipHidden && strings.HasPrefix(name, "."))
}

// walk lists every directory under the root except skipped ones, charts' insides
// and symlinked directories.
func (s *scan) walk() error {
	stack := []string{"."}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		entries, err := fs.ReadDir(s.fsys, dir)
		if err != nil {
			if dir == "." {
				return err
			}
			continue // unreadable or vanished: not ours to judge, render will say
		}
		s.files += len(entries)
		if s.opts.MaxFiles > 0 && s.files > s.opts.MaxFiles {
			return fmt.Errorf("more than %d files; list the targets in %s instead", s.opts.MaxFiles, config.FileName)
		}
		info := &dirInfo{}
		s.dirs[dir] = info
		var subdirs []string
		for _, e := range entries {
			name := e.Name()
			isDir := e.IsDir()
			if e.Type()&fs.ModeSymlink != 0 {
				// The root refuses links that lead outside it; links to directories
				// are not entered (they would only repeat targets, or loop).
				st, err := fs.Stat(s.fsys, path.Join(dir, name))
				if err != nil || st.IsDir() {
					continue
				}
				isDir = false
			}
			switch {
			case isDir:
				if !s.skipDir(name) {
					subdirs = append(subdirs, path.Join(dir, name))
				}
			case slices.Contains(render.KustomizationNames, name):
				if info.kustomization == "" {
					info.kustomization = name
				}
			case name == "Chart.yaml":
				info.chart = true
			case hasManifestExt(name):
				info.candidates = append(info.candidates, name)
			}
		}
		if info.chart {
			continue // templates, crds and vendored charts/ belong to the chart
		}
		if info.kustomization != "" {
			s.readKustomization(dir, info)
		}
		for i := len(subdirs) - 1; i >= 0; i-- {
			stack = append(stack, subdirs[i])
		}
	}
	return nil
}

func hasManifestExt(name string) bool {
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// read returns a file's content up to MaxFileBytes, or nil when it cannot be read
// (a symlink out of the root, a directory) or is larger.
func (s *scan) read(name string) []byte {
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.opts.MaxFileBytes+1))
	if err != nil || int64(len(data)) > s.opts.MaxFileBytes {
		return nil
	}
	return data
}

// kustomizationRefs holds the fields of a kustomization that name other files or
// directories. Anything else is render's business.
type kustomizationRefs struct {
	Kind                  string   `json:"kind"`
	Resources             []string `json:"resources"`
	Bases                 []string `json:"bases"`
	Components            []string `json:"components"`
	Crds                  []string `json:"crds"`
	PatchesStrategicMerge []string `json:"patchesStrategicMerge"`
	Transformers          []string `json:"transformers"`
	Generators            []string `json:"generators"`
	Validators            []string `json:"validators"`
	Configurations        []string `json:"configurations"`
	Patches               []struct {
		Path string `json:"path"`
	} `json:"patches"`
	PatchesJSON6902 []struct {
		Path string `json:"path"`
	} `json:"patchesJson6902"`
	Replacements []struct {
		Path string `json:"path"`
	} `json:"replacements"`
	ConfigMapGenerator []generatorRefs `json:"configMapGenerator"`
	SecretGenerator    []generatorRefs `json:"secretGenerator"`
}

type generatorRefs struct {
	Files []string `json:"files"`
	Envs  []string `json:"envs"`
	Env   string   `json:"env"`
}

func (s *scan) readKustomization(dir string, info *dirInfo) {
	data := s.read(path.Join(dir, info.kustomization))
	var k kustomizationRefs
	// A malformed kustomization is still a target; rendering reports the error.
	// render.UnmarshalYAML fills what it can around a type error, which is what
	// we want here, and refuses what render refuses (alias bombs, depth,
	// duplicate keys): then no file it names is taken to be an input.
	_ = render.UnmarshalYAML(data, path.Join(dir, info.kustomization), &k)
	info.component = k.Kind == "Component"
	refs := slices.Concat(k.Resources, k.Bases, k.Components, k.Crds, k.PatchesStrategicMerge,
		k.Transformers, k.Generators, k.Validators, k.Configurations)
	for _, p := range k.Patches {
		refs = append(refs, p.Path)
	}
	for _, p := range k.PatchesJSON6902 {
		refs = append(refs, p.Path)
	}
	for _, p := range k.Replacements {
		refs = append(refs, p.Path)
	}
	for _, g := range slices.Concat(k.ConfigMapGenerator, k.SecretGenerator) {
		for _, f := range g.Files {
			if _, after, ok := strings.Cut(f, "="); ok {
				f = after
			}
			refs = append(refs, f)
		}
		refs = append(refs, g.Envs...)
		refs = append(refs, g.Env)
	}
	for _, ref := range refs {
		if ref == "" || strings.ContainsAny(ref, "\n{}") || render.IsRemote(ref, func(p string) bool { return s.exists(path.Join(dir, p)) }) {
			continue // inline patches and transformer configs, remote bases
		}
		joined := path.Join(dir, ref)
		if path.IsAbs(ref) || config.BadRepoPath(joined) != "" {
			continue
		}
		info.refs = append(info.refs, joined)
	}
}

func (s *scan) exists(name string) bool {
	_, err := fs.Stat(s.fsys, name)
	return err == nil
}

// link turns each kustomization's references into referrer edges: a referenced
// directory, or the directory of a referenced file, is used by the kustomization.
// A base/ nobody is seen using gets its sibling overlays/* and environments/*.
func (s *scan) link() {
	add := func(to, from string) {
		if to == from {
			return
		}
		info, ok := s.dirs[to]
		if ok && !slices.Contains(info.referrers, from) {
			info.referrers = append(info.referrers, from)
		}
	}
	for _, from := range s.sortedDirs() {
		for _, ref := range s.dirs[from].refs {
			if _, isDir := s.dirs[ref]; isDir {
				add(ref, from)
			} else {
				add(path.Dir(ref), from)
			}
		}
	}
	for _, d := range s.sortedDirs() {
		info := s.dirs[d]
		if path.Base(d) != "base" || len(info.referrers) > 0 || !s.renderable(d) {
			continue
		}
		parent := path.Dir(d)
		for _, group := range []string{"overlays", "environments"} {
			for _, env := range s.sortedDirs() {
				if path.Dir(env) == path.Join(parent, group) && s.isKustomize(env) {
					add(d, env)
				}
			}
		}
	}
}

func (s *scan) sortedDirs() []string {
	out := make([]string, 0, len(s.dirs))
	for d := range s.dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// isKustomize is true for a kustomization that builds on its own (not a Component).
func (s *scan) isKustomize(d string) bool {
	info := s.dirs[d]
	return info != nil && info.kustomization != "" && !info.component
}

// renderable is true when d renders on its own as a kustomization, chart or plain
// directory.
func (s *scan) renderable(d string) bool {
	info := s.dirs[d]
	if info == nil {
		return false
	}
	if info.kustomization != "" {
		return !info.component
	}
	return info.chart || s.isPlain(d)
}

// deployable is true for a top-most target: renderable, used by no kustomization,
// and, for a plain directory, not inside a kustomization (whose patches and inputs
// look like manifests too).
func (s *scan) deployable(d string) bool {
	info := s.dirs[d]
	if !s.renderable(d) || len(info.referrers) > 0 {
		return false
	}
	if info.kustomization == "" && !info.chart {
		for a := d; a != "."; {
			a = path.Dir(a)
			if s.dirs[a] != nil && s.dirs[a].kustomization != "" {
				return false
			}
		}
	}
	return true
}

// isPlain says whether d holds at least one file with apiVersion and kind.
func (s *scan) isPlain(d string) bool {
	info := s.dirs[d]
	if info.plain != nil {
		return *info.plain
	}
	found := false
	for _, name := range info.candidates {
		if data := s.read(path.Join(d, name)); data != nil && looksLikeManifest(name, data) {
			found = true
			break
		}
	}
	info.plain = &found
	return found
}

// looksLikeManifest checks for a document with top-level apiVersion and kind
// without parsing YAML, so templated or broken files cost nothing.
func looksLikeManifest(name string, data []byte) bool {
	if path.Ext(name) == ".json" {
		return bytes.Contains(data, []byte(`"apiVersion"`)) && bytes.Contains(data, []byte(`"kind"`))
	}
	var api, kind bool
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "---"):
			api, kind = false, false
		case hasValue(line, "apiVersion:"):
			api = true
		case hasValue(line, "kind:"):
			kind = true
		}
		if api && kind {
			return true
		}
	}
	return false
}

func hasValue(line, key string) bool {
	v, ok := strings.CutPrefix(line, key)
	v = strings.TrimSpace(v)
	return ok && v != "" && !strings.HasPrefix(v, "#")
}

// affected returns the targets a change to the path c reaches.
func (s *scan) affected(c string) []string {
	for _, part := range strings.Split(path.Dir(c), "/") {
		if part != "." && s.skipDir(part) {
			return nil
		}
	}
	d := path.Dir(c)
	if _, isDir := s.dirs[c]; isDir {
		d = c
	}
	for s.dirs[d] == nil && d != "." {
		d = path.Dir(d) // deleted directory, or inside a chart the scan did not enter
	}
	if s.dirs[d] == nil {
		return nil
	}
	var chart, kust string
	for a := d; ; a = path.Dir(a) {
		if info := s.dirs[a]; info != nil {
			if info.chart && chart == "" {
				chart = a
			}
			if info.kustomization != "" && kust == "" {
				kust = a
			}
		}
		if a == "." {
			break
		}
	}
	if chart == "" && !hasManifestExt(c) && !slices.Contains(render.KustomizationNames, path.Base(c)) && !s.referenced(c) {
		// A README, a script or a picture next to a kustomization or plain
		// manifests: kustomize reads only the files its kustomization names,
		// and a plain directory only manifests. (Anything in a chart may be
		// read through .Files, so it belongs to the chart.)
		return nil
	}
	var owner string
	switch {
	case chart != "":
		owner = chart
	case len(s.dirs[d].referrers) > 0:
		owner = d // referenced by a kustomization: a patch, generator input or resource dir
	case kust != "":
		owner = kust
	case hasManifestExt(c) && s.isPlain(d):
		owner = d
	default:
		return nil
	}
	out := s.roots(owner)
	if len(s.dirs[owner].referrers) > 0 && (s.isKustomize(owner) || s.dirs[owner].chart) && !slices.Contains(out, owner) {
		// The touched kustomization or chart renders on its own too: with no
		// controller object to say what is deployed, it may be (an app that
		// is also another app's base), so it is previewed beside the
		// overlays that use it.
		out = append(out, owner)
	}
	return out
}

// referenced says whether a kustomization names the file p (a resource, patch,
// generator input…).
func (s *scan) referenced(p string) bool {
	for _, info := range s.dirs {
		if slices.Contains(info.refs, p) {
			return true
		}
	}
	return false
}

// roots follows referrers from d up to the kustomizations nothing references.
func (s *scan) roots(d string) []string {
	if len(s.dirs[d].referrers) == 0 {
		if s.deployable(d) {
			return []string{d}
		}
		return nil
	}
	var out []string
	seen := map[string]bool{d: true}
	queue := []string{d}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		refs := s.dirs[x].referrers
		if len(refs) == 0 && s.renderable(x) {
			out = append(out, x)
		}
		for _, r := range refs {
			if !seen[r] {
				seen[r] = true
				queue = append(queue, r)
			}
		}
	}
	return out
}
