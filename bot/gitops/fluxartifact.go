package gitops

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// fluxArtifact is one ExternalArtifact that a Flux ArtifactGenerator
// (source.extensions.fluxcd.io, Flux 2.7 source-watcher) generates: an artifact
// named spec.artifacts[].name in the generator's namespace, filled by copy
// operations from the generator's sources.
type fluxArtifact struct {
	name    string
	ns      string
	gen     *manifest
	sources map[string]fluxSourceRef // by alias
	copies  []fluxCopy
}

// fluxCopy is one copy operation: from "@alias/pattern" to "@artifact/path".
type fluxCopy struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Exclude  []string `json:"exclude"`
	Strategy string   `json:"strategy"`
}

// fluxArtifactGenerator is the part of an ArtifactGenerator discovery reads.
type fluxArtifactGenerator struct {
	Spec struct {
		Sources []struct {
			Alias     string `json:"alias"`
			Kind      string `json:"kind"`
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"sources"`
		PathPattern string `json:"pathPattern"`
		Artifacts   []struct {
			Name string     `json:"name"`
			Copy []fluxCopy `json:"copy"`
		} `json:"artifacts"`
	} `json:"spec"`
}

// indexArtifacts records the ExternalArtifacts generator m produces. A generator
// with a pathPattern names its artifacts after the directories it finds, which
// discovery does not expand: a Kustomization reading one is listed as not rendered.
func (d *discovery) indexArtifacts(m *manifest, fx *fluxIndex) {
	var g fluxArtifactGenerator
	if err := m.decode(&g); err != nil || g.Spec.PathPattern != "" {
		return
	}
	ns := m.namespaceOr(defaultFluxNS)
	srcs := map[string]fluxSourceRef{}
	for _, s := range g.Spec.Sources {
		srcs[s.Alias] = fluxSourceRef{Kind: s.Kind, Name: s.Name, Namespace: firstNonEmpty(s.Namespace, ns)}
	}
	for _, a := range g.Spec.Artifacts {
		if a.Name == "" {
			continue
		}
		fx.artifacts[clusterKey(m.Cluster, ns, a.Name)] = &fluxArtifact{name: a.Name, ns: ns, gen: m, sources: srcs, copies: a.Copy}
	}
}

// artifactPath maps spec.path p of a Kustomization whose source is an
// ExternalArtifact to a directory of this repository. It follows source-watcher's
// cp-like copy semantics (docs/spec/v1beta1/artifactgenerators.md): "@src/dir/**"
// copies the contents of dir into the destination directory, "@src/dir/" copies
// dir itself into it, and a file or a glob of files lands in a destination
// directory (trailing slash) or at a file path. When every copy keeps the layout of
// one directory R of this repository (apps/base/** to base/, apps/staging/** to
// staging/: R is apps), the artifact is that directory and p is R/p; kustomize
// then resolves references between the copied directories as it would inside the
// artifact. Any other artifact, or sources outside this repository at this PR's
// branch, give the reason it is not rendered.
func (d *discovery) artifactPath(ref fluxSourceRef, ns, cluster, p string, fx *fluxIndex) (repoPath, note, reason string) {
	ns = firstNonEmpty(ref.Namespace, ns)
	var a *fluxArtifact
	for _, c := range clusterKeys(cluster) {
		if a = fx.artifacts[clusterKey(c, ns, ref.Name)]; a != nil {
			break
		}
	}
	what := "ExternalArtifact " + nsName(ns, ref.Name)
	if a == nil {
		return "", "", fmt.Sprintf("source outside this repo: %s (no ArtifactGenerator in this repository generates it; pathPattern generators are not expanded)", what)
	}
	gen := fmt.Sprintf("ArtifactGenerator %s (%s)", nsName(a.ns, a.gen.Name), a.gen.where())
	if len(a.copies) == 0 {
		return "", "", fmt.Sprintf("%s of %s copies nothing", what, gen)
	}
	root := ""
	covered, under := false, false
	var excludes []string
	for i, c := range a.copies {
		op := fmt.Sprintf("copy %s → %s", c.From, c.To)
		alias, from, ok := strings.Cut(strings.TrimPrefix(c.From, "@"), "/")
		if !strings.HasPrefix(c.From, "@") {
			return "", "", fmt.Sprintf("%s of %s: %s does not start with @<alias>", what, gen, op)
		}
		if !ok {
			from = ""
		}
		src, known := a.sources[alias]
		if !known {
			return "", "", fmt.Sprintf("%s of %s: %s names no source alias %q", what, gen, op, alias)
		}
		switch chk := d.thisRepoSource(src, a.ns, cluster, fx); {
		case chk.otherRevision:
			return "", "", fmt.Sprintf("not affected by this PR: %s copies from %s", what, chk.reason)
		case !chk.ok:
			return "", "", fmt.Sprintf("source outside this repo: %s copies from %s", what, chk.reason)
		}
		if c.Strategy != "" && c.Strategy != "Overwrite" {
			return "", "", fmt.Sprintf("%s of %s: %s uses strategy %s, which driftpreview does not reproduce", what, gen, op, c.Strategy)
		}
		to, ok := strings.CutPrefix(c.To, "@artifact")
		if !ok || (to != "" && !strings.HasPrefix(to, "/")) {
			return "", "", fmt.Sprintf("%s of %s: %s does not copy to @artifact/", what, gen, op)
		}
		art, repo, ok := d.copyPrefixes(from, strings.TrimPrefix(to, "/"))
		if !ok {
			return "", "", fmt.Sprintf("%s of %s: %s renames or flattens files; driftpreview renders an ExternalArtifact only when its copies keep the layout of this repository", what, gen, op)
		}
		r, ok := layoutRoot(art, repo)
		if !ok || (i > 0 && r != root) {
			return "", "", fmt.Sprintf("%s of %s: %s moves %s to %s; driftpreview renders an ExternalArtifact only when its copies keep the layout of one directory of this repository", what, gen, op, orRoot(repo), orRoot(art))
		}
		root = r
		if art == "." || p == art || strings.HasPrefix(p, art+"/") {
			covered = true
		} else if p == "." || strings.HasPrefix(art, p+"/") {
			under = true
		}
		excludes = append(excludes, c.Exclude...)
	}
	repoPath = path.Join(root, p)
	if rp, ok := cleanRel(repoPath); ok {
		repoPath = rp
	}
	if !covered {
		if !under {
			return "", "", fmt.Sprintf("spec.path ./%s is not in %s (%s copies nothing there)", p, what, gen)
		}
		if r, _ := detectRenderer(d.root, repoPath); r != "kustomize" {
			// Without a kustomization, kustomize-controller reads every manifest
			// below the path: in the artifact only the copied parts are there.
			return "", "", fmt.Sprintf("spec.path ./%s of %s holds only the parts of %s that %s copies, and has no kustomization.yaml to say which", p, what, repoPath, gen)
		}
	}
	note = fmt.Sprintf("spec.path ./%s of %s, generated by %s from this repository, is %s", p, what, gen, repoPath)
	if len(excludes) > 0 {
		note += fmt.Sprintf("; the copy excludes (%s) are not applied, so excluded files are rendered when the path reads them", strings.Join(excludes, ", "))
	}
	return repoPath, note, ""
}

// copyPrefixes turns one copy operation (from relative to the source root, to
// relative to the artifact root) into the artifact directory it fills and the
// repository directory it fills it from. ok is false for a copy that does not keep
// file names (a file copied to another name, globs in directory parts).
func (d *discovery) copyPrefixes(from, to string) (art, repo string, ok bool) {
	dest := strings.TrimSuffix(to, "/")
	toDir := to == "" || strings.HasSuffix(to, "/")
	clean := func(p string) string {
		if p == "" {
			return "."
		}
		return path.Clean(p)
	}
	switch {
	case from == "" || from == "**" || from == "/":
		// The source root (or all of it): its contents.
		return clean(dest), ".", toDir
	case strings.HasSuffix(from, "/**"):
		dir := strings.TrimSuffix(from, "/**")
		if hasGlob(dir) || !toDir {
			return "", "", false
		}
		return clean(dest), clean(dir), true
	case strings.HasSuffix(from, "/") || d.isDir(from):
		// A directory is copied as a subdirectory of the destination.
		dir := strings.TrimSuffix(from, "/")
		if hasGlob(dir) || !toDir {
			return "", "", false
		}
		return clean(path.Join(dest, path.Base(dir))), clean(dir), true
	}
	dir, file := path.Split(from)
	if hasGlob(dir) {
		return "", "", false
	}
	if toDir {
		return clean(dest), clean(dir), true
	}
	if hasGlob(file) || path.Base(dest) != file {
		return "", "", false // renamed
	}
	return clean(path.Dir(dest)), clean(dir), true
}

// layoutRoot is the repository directory R that an artifact mirrors when the copy
// of repository directory repo to artifact directory art keeps the layout:
// repo is R/art.
func layoutRoot(art, repo string) (string, bool) {
	switch {
	case art == ".":
		return repo, true
	case repo == art:
		return ".", true
	case strings.HasSuffix(repo, "/"+art):
		return strings.TrimSuffix(repo, "/"+art), true
	}
	return "", false
}

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[{") }

func orRoot(p string) string {
	if p == "." {
		return "the root"
	}
	return p + "/"
}

// isDir says whether a root-relative path is a directory of the checkout.
func (d *discovery) isDir(rel string) bool {
	r, ok := cleanRel(rel)
	if !ok {
		return false
	}
	st, err := os.Lstat(filepath.Join(d.root, filepath.FromSlash(r)))
	return err == nil && st.IsDir()
}
