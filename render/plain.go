package render

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// renderPlain reads the .yaml, .yml and .json files of dir (and its subdirectories
// with Recurse), filtered by the Include and Exclude globs, and evaluates its
// .jsonnet files when Plain.Jsonnet is set (an Argo CD directory application).
func renderPlain(ctx context.Context, sb *sandbox, dir string, opts Options) (ObjectSet, error) {
	for _, g := range slices.Concat(opts.Plain.Include, opts.Plain.Exclude) {
		if _, err := path.Match(g, ""); err != nil {
			return ObjectSet{}, fmt.Errorf("rendering %s: bad glob %q: %w", dir, g, err)
		}
	}
	var files, skippedJsonnet []string
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
		jsonnetFile := hasExt(p, ".jsonnet")
		if !hasExt(p, ".yaml", ".yml", ".json") && !jsonnetFile {
			return nil
		}
		rel := p
		if dir != "." {
			rel = p[len(dir)+1:]
		}
		if !globsAllow(rel, opts.Plain.Include, opts.Plain.Exclude) {
			return nil
		}
		if jsonnetFile && opts.Plain.Jsonnet == nil {
			skippedJsonnet = append(skippedJsonnet, p)
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return ObjectSet{}, err
	}

	var set ObjectSet
	if len(skippedJsonnet) > 0 {
		// Only Argo CD evaluates jsonnet in a directory; say so rather than
		// render the directory as if the files were not there.
		set.Notes = append(set.Notes, fmt.Sprintf("%s not evaluated: only an Argo CD directory application renders .jsonnet files", strings.Join(skippedJsonnet, ", ")))
	}
	var all []parsedObject
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return ObjectSet{}, err
		}
		if hasExt(f, ".jsonnet") {
			objs, notes, err := renderJsonnet(ctx, sb, dir, f, opts.Plain.Jsonnet)
			if err != nil {
				return ObjectSet{}, err
			}
			all = append(all, objs...)
			set.Notes = append(set.Notes, notes...)
			continue
		}
		data, err := sb.readFile(f)
		if err != nil {
			return ObjectSet{}, err
		}
		if err := sb.output(f, int64(len(data))); err != nil {
			return ObjectSet{}, err
		}
		objs, notes, err := parseLastKeyWins(data, f)
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
