package discover

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/driftpreview/driftpreview/bot/gitops"
)

// unread returns the first changed file that no target of either side reads
// (its inputs, its controller object's file) and that a render the pruned
// searches left out could still read (mayBeRead); "" when there is none. A
// README, a picture, a CI script no kustomization names is read by nothing.
func unread(changed []string, inputs gitops.Inputs, baseDir, headDir string, sides ...*gitops.Result) string {
	var orphans []string
	for _, c := range changed {
		read := false
		for _, res := range sides {
			for _, t := range slices.Concat(res.Targets, res.NotRendered) {
				if t.Controller != nil && t.Controller.Source == c {
					read = true
					break
				}
				if _, ok := inputs(t).Touched([]string{c}); ok {
					read = true
					break
				}
			}
			if read {
				break
			}
		}
		if !read {
			orphans = append(orphans, c)
		}
	}
	if len(orphans) == 0 {
		return ""
	}
	var named []string
	for _, c := range orphans {
		if mayBeRead(c, baseDir, headDir) {
			return c
		}
		named = append(named, path.Base(c))
	}
	for _, dir := range []string{baseDir, headDir} {
		if n := nameIn(dir, named); n != "" {
			return n
		}
	}
	return ""
}

// manifestExts are the extensions of the files a render reads without a
// file naming them: a Flux Kustomization's generated kustomization and an
// Argo CD directory source take every YAML and JSON file (and jsonnet) of
// their tree.
var manifestExts = []string{".yaml", ".yml", ".json", ".jsonnet", ".libsonnet"}

// readByName are files that change how others are read: kustomize's
// kustomization names, and the ignore files of Flux sources and charts.
var readByName = []string{"Kustomization", ".sourceignore", ".helmignore", ".driftpreview.yaml"}

// mayBeRead says whether some render could read file although no target
// found reads it: a manifest file, a file that changes how others are read,
// a file of a Helm chart's directory (templates read any of them with
// .Files), at base or at head.
func mayBeRead(file, baseDir, headDir string) bool {
	base := path.Base(file)
	if slices.Contains(manifestExts, strings.ToLower(path.Ext(base))) || slices.Contains(readByName, base) {
		return true
	}
	for d := path.Dir(file); d != "."; d = path.Dir(d) {
		for _, root := range []string{baseDir, headDir} {
			if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(d), "Chart.yaml")); err == nil {
				return true
			}
		}
	}
	return false
}

// nameIn returns the first of names that a manifest or kustomization file of
// the checkout at root mentions (a generator's file, a values file a
// HelmRelease or an Application lists): such a file may be read by a render
// that names it; "" when none is mentioned.
func nameIn(root string, names []string) string {
	found := ""
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (!slices.Contains(manifestExts, strings.ToLower(filepath.Ext(d.Name()))) && d.Name() != "Kustomization") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, n := range names {
			if bytes.Contains(b, []byte(n)) {
				found = n
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}
