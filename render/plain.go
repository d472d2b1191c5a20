package render

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
)

// renderPlain reads the .yaml, .yml and .json files of dir (and its subdirectories
// with Recurse), filtered by the Include and Exclude globs.
func renderPlain(ctx context.Context, sb *sandbox, dir string, opts Options) (ObjectSet, error) {
	for _, g := range slices.Concat(opts.Plain.Include, opts.Plain.Exclude) {
		if _, err := path.Match(g, ""); err != nil {
			return ObjectSet{}, fmt.Errorf("rendering %s: bad glob %q: %w", dir, g, err)
		}
	}
	var files []string
	err := fs.WalkDir(sb.fsys(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return sb.explain(p, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (!opts.Plain.Recurse || d.Name() == ".git") {
				return fs.SkipDir
			}
			return nil
		}
		if !hasExt(p, ".yaml", ".yml", ".json") {
			return nil
		}
		rel := p
		if dir != "." {
			rel = p[len(dir)+1:]
		}
		if !globsAllow(rel, opts.Plain.Include, opts.Plain.Exclude) {
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return ObjectSet{}, err
	}

	var set ObjectSet
	var all []parsedObject
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return ObjectSet{}, err
		}
		data, err := sb.readFile(f)
		if err != nil {
			return ObjectSet{}, err
		}
		if err := sb.output(f, int64(len(data))); err != nil {
			return ObjectSet{}, err
		}
		objs, notes, err := parse(data, f)
		if err != nil {
			return ObjectSet{}, err
		}
		all = append(all, objs...)
		set.Notes = append(set.Notes, notes...)
	}
	if err := addAll(&set, all); err != nil {
		return ObjectSet{}, err
	}
	return set, nil
}

// globsAllow applies Argo CD style include/exclude globs. A pattern matches the path
// relative to the target directory or, for patterns without a slash, the base name.
func globsAllow(rel string, include, exclude []string) bool {
	match := func(g string) bool {
		if ok, _ := path.Match(g, rel); ok {
			return true
		}
		ok, _ := path.Match(g, path.Base(rel))
		return ok
	}
	if len(include) > 0 && !slices.ContainsFunc(include, match) {
		return false
	}
	return !slices.ContainsFunc(exclude, match)
}
