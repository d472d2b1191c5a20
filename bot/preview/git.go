package preview

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/driftpreview/driftpreview/render"
)

// repo runs read-only git commands against one repository. It never touches the
// repository's working tree or index: checkouts go through a private index file into
// temp dirs, so the same code serves a developer's checkout and the bot's bare mirror.
type repo struct {
	dir string
	// env is added to every git command (the bot passes credentials this way, never
	// through files or URLs on disk).
	env []string
}

func (r repo) git(ctx context.Context, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), append(r.env, extraEnv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %s", args[0], gitMessage(stderr.String(), err))
	}
	return stdout.Bytes(), nil
}

// branchOf names the branch a remote-tracking ref stands for (main for origin/main
// or refs/remotes/origin/main, as CI jobs pass the target branch), or "" when it
// names none (a SHA, a tag, HEAD, a local branch, which may be any scratch name).
func (r repo) branchOf(ctx context.Context, ref string) string {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return ""
	}
	out, err := r.git(ctx, nil, "rev-parse", "--symbolic-full-name", ref)
	if err != nil {
		return ""
	}
	full := strings.TrimSpace(string(out))
	if rest, ok := strings.CutPrefix(full, "refs/remotes/"); ok {
		if _, b, ok := strings.Cut(rest, "/"); ok && b != "HEAD" {
			return b
		}
	}
	return ""
}

// resolve turns a ref or SHA into a full commit SHA.
func (r repo) resolve(ctx context.Context, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("invalid git ref %q", ref)
	}
	out, err := r.git(ctx, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("resolving %q in %s: not a commit (fetch it first?)", ref, r.dir)
	}
	return strings.TrimSpace(string(out)), nil
}

// checkouts are the two checkouts of a run: base and head under one temp
// dir, and what git listed of their trees.
type checkouts struct {
	// tmp holds both (base, head); it is the caller's to remove, also when
	// checkoutBoth failed (then it may be "", or hold a partial checkout).
	tmp              string
	baseDir, headDir string
	changed          []string
	baseTree         tree
	headTree         tree
}

// checkoutBoth checks out base and head into a new temp dir under parent (""
// chooses: checkoutParent) and lists the files the pull request changes. Both
// trees are sized first (checkTreeSize: nothing is written when one is over
// the limits), then checked out at once: a checkout is mostly the kernel
// creating files and directories. The changed files are listed meanwhile. It
// returns once all have ended, whether or not one failed; the first error in
// the order base, head, changed files is returned.
func (r repo) checkoutBoth(ctx context.Context, base, head, parent string) (checkouts, error) {
	var (
		co      checkouts
		wg      sync.WaitGroup
		errs    [3]error
		changed sync.WaitGroup
	)
	changed.Go(func() { co.changed, errs[2] = r.changed(ctx, base, head) })
	// fail returns once the changed files are listed: the listing writes co,
	// which the return copies (a deferred Wait would run after the copy).
	fail := func(err error) (checkouts, error) {
		changed.Wait()
		return co, err
	}
	wg.Go(func() { co.baseTree, errs[0] = r.checkTreeSize(ctx, base) })
	wg.Go(func() { co.headTree, errs[1] = r.checkTreeSize(ctx, head) })
	wg.Wait()
	for i, sha := range []string{base, head} {
		if errs[i] != nil {
			return fail(fmt.Errorf("checking out %s: %w", short(sha), errs[i]))
		}
	}
	tmp, err := makeCheckoutDir(parent, co.baseTree.need()+co.headTree.need())
	if err != nil {
		return fail(err)
	}
	co.tmp, co.baseDir, co.headDir = tmp, filepath.Join(tmp, "base"), filepath.Join(tmp, "head")
	trees := [2]*tree{&co.baseTree, &co.headTree}
	for i, c := range [2][2]string{{base, co.baseDir}, {head, co.headDir}} {
		wg.Go(func() {
			if err := os.Mkdir(c[1], 0o700); err != nil {
				errs[i] = fmt.Errorf("creating work dir: %w", err)
				return
			}
			if err := r.write(ctx, c[0], c[1], trees[i]); err != nil {
				errs[i] = fmt.Errorf("checking out %s: %w", short(c[0]), err)
			}
		})
	}
	wg.Wait()
	changed.Wait()
	for _, err := range errs {
		if err != nil {
			return co, err
		}
	}
	return co, nil
}

// ErrOverLimit is matched (errors.Is) by the error of a commit refused for
// exceeding a checkout limit: the pull request's content is the cause, so trying
// again cannot help (the bot completes the check at once instead of retrying).
var ErrOverLimit = errors.New("over a checkout limit")

// limitError is an error message that matches ErrOverLimit.
type limitError string

func (e limitError) Error() string        { return string(e) }
func (e limitError) Is(target error) bool { return target == ErrOverLimit }

// Checkout limits. A pull request is untrusted, and git compresses well: a 32 KiB
// pack holding one 10 MiB blob under nested trees checks out to 1,000 MiB. So the
// tree is sized from git's listing before a byte is written. Far above any GitOps
// repository; they apply to each of base and head.
var (
	maxCheckoutBytes int64 = 256 << 20
	maxCheckoutFiles int64 = 50_000
)

// checkout writes the tree of commit sha into dir (which must exist and be empty)
// through a throwaway index, leaving the repository itself untouched. A tree over
// the checkout limits is an error before anything is written.
func (r repo) checkout(ctx context.Context, sha, dir string) error {
	if _, err := r.checkTreeSize(ctx, sha); err != nil {
		return fmt.Errorf("checking out %s: %w", short(sha), err)
	}
	if err := r.write(ctx, sha, dir, nil); err != nil {
		return fmt.Errorf("checking out %s: %w", short(sha), err)
	}
	return nil
}

// write writes the tree of commit sha into dir (which must exist and be empty)
// through a throwaway index, without sizing it first. With t (the tree's
// listing; nil for none) it leaves in t.entries only the paths written as
// their blob's bytes (unconverted), or sets t.entries to nil.
func (r repo) write(ctx context.Context, sha, dir string, t *tree) error {
	index := filepath.Join(dir, ".driftpreview-index")
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := r.git(ctx, env, "read-tree", sha); err != nil {
		return err
	}
	var wg sync.WaitGroup
	if t != nil && t.entries != nil {
		// Both only read the index.
		wg.Go(func() { t.entries = r.unconverted(ctx, env, t.entries) })
	}
	_, err := r.git(ctx, env, "--work-tree="+dir, "checkout-index", "--all", "--force")
	wg.Wait()
	if err != nil {
		return err
	}
	return os.Remove(index)
}

// convertAttrs are the attributes under which git's checkout writes a file
// other than as its blob's bytes: end-of-line conversion (text, eol, crlf),
// clean/smudge filters (Git LFS among them), $Id$ expansion, re-encoding
// (gitattributes(5), "Effects": checking out).
var convertAttrs = []string{"text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}

// unconverted clears the ID of the entries git does not check out as their
// blob's bytes, so that a render keyed by blob id (render.NewInputFinderTree)
// is keyed by what is on disk: nil when core.autocrlf converts every text
// file or the attributes could not be read, else the IDs of those with any
// of convertAttrs set are cleared
// (`git check-attr --cached` reads the .gitattributes of the index env names,
// $GIT_DIR/info/attributes and the global and system files, as the checkout
// does). Keyed by reading instead, a cleared path costs time, never a wrong
// render.
func (r repo) unconverted(ctx context.Context, env []string, entries render.GitTree) render.GitTree {
	if out, err := r.git(ctx, env, "config", "--get", "core.autocrlf"); err == nil {
		switch strings.ToLower(strings.TrimSpace(string(out))) {
		case "false", "no", "off", "0", "input", "":
		default:
			return nil
		}
	}
	var in strings.Builder
	for p := range entries {
		in.WriteString(p + "\x00")
	}
	out, err := r.gitStdinEnv(ctx, env, in.String(), append([]string{"check-attr", "--cached", "--stdin", "-z"}, convertAttrs...)...)
	if err != nil {
		return nil
	}
	// "<path>\0<attribute>\0<value>\0" for each path and attribute.
	f := strings.Split(string(out), "\x00")
	if len(f)%3 != 1 || len(f)/3 != len(entries)*len(convertAttrs) {
		return nil
	}
	kept := maps.Clone(entries)
	for i := 0; i+2 < len(f); i += 3 {
		if _, ok := entries[f[i]]; !ok {
			return nil
		}
		if f[i+2] != "unspecified" {
			kept[f[i]] = render.GitFile{Mode: kept[f[i]].Mode}
		}
	}
	return kept
}

// tree is what git lists of one commit's tree: how many files and bytes it
// checks out to, and each path's mode and blob id.
type tree struct {
	files, bytes int64
	// entries are the tree's files, symlinks and submodules; after the
	// checkout (write), those git did not write as their blob's bytes have
	// no ID (see unconverted); nil when that could not be told.
	entries render.GitTree
}

// need is about what the tree takes on a tmpfs: its bytes, each file rounded
// up to a page, and the private index.
func (t tree) need() int64 {
	return t.bytes + t.files*(4<<10) + t.files*256
}

// checkTreeSize lists the blobs of sha as `git ls-tree -r` streams them, failing
// as soon as there are more than maxCheckoutFiles (so a tree listing millions of
// paths is never read to its end), then sizes each distinct blob once with `git
// cat-file --batch-check` and fails when the files add up to more than
// maxCheckoutBytes. (`ls-tree -l` would look up the size of every path: a minute
// for 60,000 paths of one loose blob.)
func (r repo) checkTreeSize(ctx context.Context, sha string) (tree, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", r.dir, "ls-tree", "-r", "-z", "--full-tree", sha)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), r.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return tree{}, err
	}
	if err := cmd.Start(); err != nil {
		return tree{}, fmt.Errorf("git ls-tree: %w", err)
	}
	var files int64
	blobs := map[string]int64{} // object → how many paths hold it
	entries := render.GitTree{}
	br := bufio.NewReaderSize(out, 64<<10)
	for files <= maxCheckoutFiles {
		// "<mode> <type> <object>\t<path>\0"; submodules are "commit".
		rec, err := br.ReadBytes(0)
		if meta, path, ok := strings.Cut(string(rec), "\t"); ok {
			f := strings.Fields(meta)
			if len(f) == 3 && f[1] == "blob" {
				files++
				blobs[f[2]]++
			}
			if len(f) == 3 && err == nil {
				entries[strings.TrimSuffix(path, "\x00")] = render.GitFile{Mode: f[0], ID: f[2]}
			}
		}
		if err != nil {
			break
		}
	}
	if files > maxCheckoutFiles {
		cancel()
		_ = cmd.Wait()
		return tree{}, limitError(fmt.Sprintf("the commit has more than %d files, the limit per checkout; driftpreview does not check out trees that large (look for the files the PR adds)", maxCheckoutFiles))
	}
	if err := cmd.Wait(); err != nil {
		return tree{}, fmt.Errorf("git ls-tree: %s", gitMessage(stderr.String(), err))
	}

	var ids strings.Builder
	for id := range blobs {
		ids.WriteString(id + "\n")
	}
	sizes, err := r.gitStdin(ctx, ids.String(), "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return tree{}, err
	}
	var total int64
	for l := range strings.Lines(string(sizes)) {
		id, n, _ := strings.Cut(strings.TrimSpace(l), " ")
		size, _ := strconv.ParseInt(n, 10, 64)
		total += size * blobs[id]
	}
	if total > maxCheckoutBytes {
		return tree{}, limitError(fmt.Sprintf("the commit's files add up to %d MiB, over the %d MiB limit per checkout; driftpreview does not check out trees that large (look for big or repeated files the PR adds)", total>>20, maxCheckoutBytes>>20))
	}
	return tree{files: files, bytes: total, entries: entries}, nil
}

// gitStdin runs a git command with stdin.
func (r repo) gitStdin(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	return r.gitStdinEnv(ctx, nil, stdin, args...)
}

// gitStdinEnv runs a git command with stdin and extraEnv.
func (r repo) gitStdinEnv(ctx context.Context, extraEnv []string, stdin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), append(r.env, extraEnv...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git %s: %s", args[0], gitMessage(stderr.String(), err))
	}
	return stdout.Bytes(), nil
}

// gitMessage is git's stderr, shortened, or err when git said nothing.
func gitMessage(stderr string, err error) string {
	msg := render.Shorten(strings.TrimSpace(stderr), 500)
	if msg == "" {
		msg = err.Error()
	}
	return msg
}

// changed lists the files that head changes relative to its merge base with base:
// what the pull request touches, even when base has moved on since.
func (r repo) changed(ctx context.Context, base, head string) ([]string, error) {
	out, err := r.git(ctx, nil, "diff", "--name-only", "--no-renames", "-z", base+"..."+head)
	if err != nil {
		// Unrelated histories have no merge base; compare the trees directly.
		out, err = r.git(ctx, nil, "diff", "--name-only", "--no-renames", "-z", base, head)
		if err != nil {
			return nil, fmt.Errorf("listing changed files: %w", err)
		}
	}
	files := []string{} // non-nil: "nothing changed" is not "discover everything"
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// originURL is the repository's origin remote, used to recognise GitOps objects that
// point at this repository; empty when there is none.
func (r repo) originURL(ctx context.Context) string {
	out, err := r.git(ctx, nil, "remote", "get-url", "origin")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

var errNoRepo = errors.New("not a git repository")

func openRepo(ctx context.Context, dir string, env []string) (repo, error) {
	r := repo{dir: dir, env: env}
	if _, err := r.git(ctx, nil, "rev-parse", "--git-dir"); err != nil {
		return r, fmt.Errorf("opening %s: %w", dir, errNoRepo)
	}
	return r, nil
}
