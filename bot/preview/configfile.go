package preview

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/bot/config"
)

// configAtBase reads the repo config file the CI job named (--config, the action's
// `config:` input, GitLab's DRIFTPREVIEW_CONFIG) from the base commit, as
// .driftpreview.yaml is read, never from the working tree: in CI the working tree
// is the pull request's head, and a PR must not set its own policy. file is a path
// in the repository: relative to the current directory (which must lie in the
// repository's working tree) or absolute inside it; a bare repository takes it as
// relative to its root. A symlink (a mode 120000 entry, or one on the way to the
// file) is refused, as is anything but a regular file.
func configAtBase(ctx context.Context, r repo, baseSHA, file string) (*config.Config, error) {
	rel, err := r.repoPath(ctx, file)
	if err != nil {
		return nil, err
	}
	data, err := r.regularFileAt(ctx, baseSHA, rel, config.MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("reading config %s at the base commit %s: %w", rel, short(baseSHA), err)
	}
	return config.Parse(data, rel)
}

// repoPath turns a path given on the command line into a slash-separated path
// in the repository. It reads nothing from the working tree.
func (r repo) repoPath(ctx context.Context, file string) (string, error) {
	if file == "" {
		return "", fmt.Errorf("config: empty path")
	}
	out, err := r.git(ctx, nil, "rev-parse", "--show-toplevel")
	top := strings.TrimSpace(string(out))
	if err != nil || top == "" {
		// A bare repository (the bot's mirror): no working tree to be
		// relative to, so the path is the repository's.
		if filepath.IsAbs(file) {
			return "", fmt.Errorf("config %s: in CI mode the config is read from the base commit, so name it by its path in the repository (the repository %s has no working tree)", file, r.dir)
		}
		return cleanRepoPath(filepath.ToSlash(file))
	}
	abs := file
	if !filepath.IsAbs(abs) {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("config %s: %w", file, err)
		}
		// The current directory is the job's, not the PR's: resolving its
		// symlinks (/tmp on macOS) follows nothing the PR wrote.
		if real, err := filepath.EvalSymlinks(wd); err == nil {
			wd = real
		}
		abs = filepath.Join(wd, abs)
	}
	abs = filepath.Clean(abs)
	for _, root := range []string{top, evalOr(top)} {
		if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return cleanRepoPath(filepath.ToSlash(rel))
		}
	}
	return "", fmt.Errorf("config %s is outside the repository %s: in CI mode the config is read from the base commit, so it must be a file of the repository (commit it to the base branch)", file, top)
}

func evalOr(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	return p
}

func cleanRepoPath(p string) (string, error) {
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
		return "", fmt.Errorf("config %s is not a file in the repository", p)
	}
	return p, nil
}

// regularFileAt reads the blob at path p of commit sha, refusing a symlink at
// p or at any directory above it, anything but a regular file, and a file over
// limit bytes.
func (r repo) regularFileAt(ctx context.Context, sha, p string, limit int) ([]byte, error) {
	mode, id, size, err := r.treeEntry(ctx, sha, p)
	if err != nil {
		return nil, err
	}
	switch {
	case mode == "":
		// Missing: say whether a symlink on the way is why.
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			dir := strings.Join(parts[:i], "/")
			m, _, _, err := r.treeEntry(ctx, sha, dir)
			if err == nil && m == "120000" {
				return nil, fmt.Errorf("%s is a symlink; driftpreview does not follow symlinks to a config file: name the file itself", dir)
			}
		}
		return nil, fmt.Errorf("no such file at the base commit; the config must be committed to the base branch before a pull request can use it")
	case mode == "120000":
		return nil, fmt.Errorf("it is a symlink; driftpreview does not follow symlinks to a config file: name the file itself")
	case mode != "100644" && mode != "100755":
		return nil, fmt.Errorf("it is not a regular file (git mode %s)", mode)
	case size > int64(limit):
		return nil, fmt.Errorf("it is %d bytes, larger than the %d-byte limit of a config file", size, limit)
	}
	return r.git(ctx, nil, "cat-file", "blob", id)
}

// treeEntry is the mode, object id and size of path p in commit sha; mode is ""
// when there is nothing at p.
func (r repo) treeEntry(ctx context.Context, sha, p string) (mode, id string, size int64, err error) {
	out, err := r.git(ctx, nil, "ls-tree", "-z", "--long", "--full-tree", sha, "--", p)
	if err != nil {
		return "", "", 0, err
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		// <mode> SP <type> SP <object> SP+ <size> TAB <path>
		meta, name, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok || string(name) != p {
			continue
		}
		f := strings.Fields(string(meta))
		if len(f) != 4 {
			continue
		}
		size, _ = strconv.ParseInt(f[3], 10, 64) // "-" for a tree or submodule
		return f[0], f[2], size, nil
	}
	return "", "", 0, nil
}
