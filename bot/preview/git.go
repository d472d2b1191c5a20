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
	// listed, when set, hears checkoutBoth's list of changed files as soon as
	// git gives it, while the trees are still being written.
	listed func(changed []string)
}

func (r repo) git(ctx context.Context, extraEnv []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir}, args...)...)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), append(r.env, extraEnv...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, &gitError{msg: fmt.Sprintf("git %s: %s", args[0], gitMessage(stderr.String(), err)), err: err}
	}
	return stdout.Bytes(), nil
}

// gitError is a failed git command: its message, and the error of the run
// (an *exec.ExitError when git ran and failed) for errors.As.
type gitError struct {
	msg string
	err error
}

func (e *gitError) Error() string { return e.msg }
func (e *gitError) Unwrap() error { return e.err }

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

// resolvePair resolves base and head to full commit SHAs with one git process
// (`cat-file --batch-check`, one object name a line, each peeled to its commit
// as resolve does) instead of one each, which also tells that dir is a
// repository: err is openRepo's error when git cannot read it; baseErr and
// headErr are resolve's error of each ref that does not name a commit.
func (r repo) resolvePair(ctx context.Context, base, head string) (baseSHA, headSHA string, baseErr, headErr error, err error) {
	refs := [2]string{base, head}
	var shas [2]string
	var errs [2]error
	var in strings.Builder
	asked := 0
	for i, ref := range refs {
		if ref == "" || strings.HasPrefix(ref, "-") {
			errs[i] = fmt.Errorf("invalid git ref %q", ref)
			continue
		}
		if strings.ContainsAny(ref, "\n\x00") {
			// Not one line of the batch; no ref has either.
			errs[i] = fmt.Errorf("resolving %q in %s: not a commit (fetch it first?)", ref, r.dir)
			continue
		}
		in.WriteString(ref + "^{commit}\n")
		asked++
	}
	// Run also when no ref is valid: it tells whether dir is a repository,
	// which openRepo told first.
	out, gerr := r.gitStdin(ctx, in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if gerr != nil {
		return "", "", nil, nil, fmt.Errorf("opening %s: %w", r.dir, errNoRepo)
	}
	if asked > 0 {
		lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(lines) != asked {
			return "", "", nil, nil, fmt.Errorf("resolving %q and %q in %s: git answered %d lines for %d refs", base, head, r.dir, len(lines), asked)
		}
		for i := range refs {
			if errs[i] != nil {
				continue
			}
			// "<sha> commit", or "<ref>^{commit} missing" (or ambiguous).
			sha, typ, _ := strings.Cut(lines[0], " ")
			lines = lines[1:]
			if typ != "commit" || !isSHA(sha) {
				errs[i] = fmt.Errorf("resolving %q in %s: not a commit (fetch it first?)", refs[i], r.dir)
				continue
			}
			shas[i] = sha
		}
	}
	return shas[0], shas[1], errs[0], errs[1], nil
}

// isSHA reports whether s is a full SHA-1 or SHA-256 object name.
func isSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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
	changed.Go(func() {
		co.changed, errs[2] = r.changed(ctx, base, head)
		if errs[2] == nil && r.listed != nil {
			r.listed(co.changed)
		}
	})
	// fail returns once the changed files are listed: the listing writes co,
	// which the return copies (a deferred Wait would run after the copy).
	fail := func(err error) (checkouts, error) {
		changed.Wait()
		return co, err
	}
	// Both trees are listed at once, then their blobs sized by one git
	// process; how git converts line ends (core.autocrlf, core.eol) is read
	// once for both meanwhile.
	var blobs [2]map[string]int64
	wg.Go(func() { co.baseTree, blobs[0], errs[0] = r.listTree(ctx, base) })
	wg.Go(func() { co.headTree, blobs[1], errs[1] = r.listTree(ctx, head) })
	var eol eolConfig
	wg.Go(func() { eol = r.readEOLConfig(ctx) })
	wg.Wait()
	for i, sha := range []string{base, head} {
		if errs[i] != nil {
			return fail(fmt.Errorf("checking out %s: %w", short(sha), errs[i]))
		}
	}
	sizes, err := r.blobSizes(ctx, blobs[0], blobs[1])
	if err != nil {
		return fail(fmt.Errorf("checking out %s: %w", short(base), err))
	}
	for i, sha := range []string{base, head} {
		t := [2]*tree{&co.baseTree, &co.headTree}[i]
		if t.bytes, err = checkBytes(blobs[i], sizes); err != nil {
			return fail(fmt.Errorf("checking out %s: %w", short(sha), err))
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
			if err := r.write(ctx, c[0], c[1], trees[i], eol); err != nil {
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
	if err := r.write(ctx, sha, dir, nil, eolConfig{}); err != nil {
		return fmt.Errorf("checking out %s: %w", short(sha), err)
	}
	return nil
}

// write writes the tree of commit sha into dir (which must exist and be empty)
// through a throwaway index, without sizing it first. With t (the tree's
// listing; nil for none) it leaves in t.entries only the paths written as
// their blob's bytes (unconverted), or sets t.entries to nil; eol is
// r.readEOLConfig's, which only t needs.
func (r repo) write(ctx context.Context, sha, dir string, t *tree, eol eolConfig) error {
	index := filepath.Join(dir, ".driftpreview-index")
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := r.git(ctx, env, "read-tree", sha); err != nil {
		return err
	}
	var wg sync.WaitGroup
	if t != nil && t.entries != nil {
		// Both only read the index.
		wg.Go(func() {
			if eol.convertsAll() {
				t.entries = nil
				return
			}
			t.entries = r.unconverted(ctx, env, t.entries, eol)
		})
	}
	_, err := r.git(ctx, env, "--work-tree="+dir, "checkout-index", "--all", "--force")
	wg.Wait()
	if err != nil {
		return err
	}
	return os.Remove(index)
}

// convertAttrs are the attributes under which git's checkout may write a
// file other than as its blob's bytes: end-of-line conversion (text, eol,
// crlf), clean/smudge filters (Git LFS among them), $Id$ expansion,
// re-encoding (gitattributes(5), "Effects": checking out). In this order:
// writesBlob reads them by position.
var convertAttrs = []string{"text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}

// eolConfig is what of git's configuration decides end-of-line conversion:
// core.autocrlf ("false", "true" or "input") and whether core.eol is crlf;
// and whether a filter driver is named "set", "unset" or "unspecified",
// which `git check-attr` cannot tell from the attribute's states.
type eolConfig struct {
	autocrlf        string
	eolCRLF         bool
	ambiguousFilter bool
}

// convertsAll reports whether core.autocrlf has git convert every text file
// it checks out (then no checkout is its blobs' bytes: see unconverted).
func (c eolConfig) convertsAll() bool { return c.autocrlf == "true" }

// readEOLConfig reads core.autocrlf and core.eol as the checkout sees them
// (every scope; the last value of a key wins). A value git would refuse
// reads as converting: a file is then keyed by reading it, which costs time,
// never a wrong render.
func (r repo) readEOLConfig(ctx context.Context) eolConfig {
	c := eolConfig{autocrlf: "false"}
	out, err := r.git(ctx, nil, "config", "-z", "--get-regexp", `^(core\.(autocrlf|eol)|filter\.(set|unset|unspecified)\..*)$`)
	if err != nil {
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) && exit.ExitCode() == 1 {
			return c // none is set
		}
		return eolConfig{autocrlf: "true"} // unread: as if every file converted
	}
	for _, kv := range strings.Split(string(out), "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		v = strings.ToLower(strings.TrimSpace(v))
		k = strings.ToLower(k)
		if strings.HasPrefix(k, "filter.") {
			c.ambiguousFilter = true
			continue
		}
		switch k {
		case "core.autocrlf":
			switch v {
			case "false", "no", "off", "0":
				c.autocrlf = "false"
			case "input":
				c.autocrlf = "input"
			default: // true, yes, on, 1, a bare key, or what git refuses
				c.autocrlf = "true"
			}
		case "core.eol":
			c.eolCRLF = v != "lf" && v != "native"
		}
	}
	return c
}

// writesBlob reports whether git's checkout writes a file whose convertAttrs
// have the values v (as `git check-attr` prints them: set, unset,
// unspecified or a value) as its blob's bytes. It follows git's convert.c:
// convert_attrs decides a crlf_action from text (else crlf), eol and
// core.autocrlf; the checkout adds carriage returns only when output_eol of
// that action is CRLF (crlf_to_worktree, will_convert_lf_to_crlf), and
// otherwise changes nothing but for ident, a filter driver or a
// working-tree-encoding (get_stream_filter gives the null filter). A
// `* text=auto eol=lf` repository, a common template, checks out as its
// blobs. Checked against git itself by TestWritesBlobAsGit.
func writesBlob(v []string, c eolConfig) bool {
	text, eol, crlf, filter, ident, enc := v[0], v[1], v[2], v[3], v[4], v[5]
	if ident == "set" || (filter != "unspecified" && filter != "unset") || (enc != "unspecified" && enc != "unset") {
		return false
	}
	if c.ambiguousFilter {
		return false // filter=unset may be a driver of that name
	}
	// check-attr prints a value "set" or "unset" as it prints the states, and
	// git_path_check_crlf reads such a value as neither (CRLF_UNDEFINED): each
	// reading is tried, and the blob is kept only when all agree.
	for _, t := range crlfActions(text) {
		for _, cr := range crlfActions(crlf) {
			if !writesBlobAs(t, cr, eol, c) {
				return false
			}
		}
	}
	return true
}

// crlfAction is convert.c's enum crlf_action.
type crlfAction int

const (
	crlfUndefined crlfAction = iota
	crlfBinary
	crlfText
	crlfTextInput
	crlfTextCRLF
	crlfAuto
	crlfAutoInput
	crlfAutoCRLF
)

// crlfActions is git_path_check_crlf of a value check-attr printed: both
// readings of "set" and "unset" (the state, or a value of that name).
func crlfActions(v string) []crlfAction {
	switch v {
	case "set":
		return []crlfAction{crlfText, crlfUndefined}
	case "unset":
		return []crlfAction{crlfBinary, crlfUndefined}
	case "input":
		return []crlfAction{crlfTextInput}
	case "auto":
		return []crlfAction{crlfAuto}
	}
	return []crlfAction{crlfUndefined}
}

// writesBlobAs is writesBlob for the actions git_path_check_crlf gave the
// text (text) and crlf (crlf) attributes: convert_attrs, then output_eol.
func writesBlobAs(text, crlf crlfAction, eol string, c eolConfig) bool {
	a := text
	if a == crlfUndefined {
		a = crlf
	}
	if a != crlfBinary {
		switch {
		case a == crlfAuto && eol == "lf":
			a = crlfAutoInput
		case a == crlfAuto && eol == "crlf":
			a = crlfAutoCRLF
		case eol == "lf":
			a = crlfTextInput
		case eol == "crlf":
			a = crlfTextCRLF
		}
	}
	// text_eol_is_crlf, on a system whose native line end is LF.
	textEOLIsCRLF := c.autocrlf == "true" || (c.autocrlf != "input" && c.eolCRLF)
	if a == crlfText {
		a = crlfTextInput
		if textEOLIsCRLF {
			a = crlfTextCRLF
		}
	}
	if a == crlfUndefined {
		switch c.autocrlf {
		case "false":
			a = crlfBinary
		case "input":
			a = crlfAutoInput
		default:
			a = crlfAutoCRLF
		}
	}
	switch a { // output_eol(a) != EOL_CRLF
	case crlfBinary, crlfTextInput, crlfAutoInput:
		return true
	case crlfAuto:
		return !textEOLIsCRLF
	}
	return false
}

// unconverted clears the ID of the entries git does not check out as their
// blob's bytes (writesBlob), so that a render keyed by blob id
// (render.NewInputFinderTree) is keyed by what is on disk: nil when the
// attributes could not be read (write leaves out those where core.autocrlf
// converts every text file: convertsAll). `git check-attr --cached` reads
// the .gitattributes of the index env names, $GIT_DIR/info/attributes and
// the global and system files, as the checkout does. Keyed by reading
// instead, a cleared path costs time, never a wrong render.
func (r repo) unconverted(ctx context.Context, env []string, entries render.GitTree, c eolConfig) render.GitTree {
	var in strings.Builder
	for p := range entries {
		in.WriteString(p + "\x00")
	}
	out, err := r.gitStdinEnv(ctx, env, in.String(), append([]string{"check-attr", "--cached", "--stdin", "-z"}, convertAttrs...)...)
	if err != nil {
		return nil
	}
	// "<path>\0<attribute>\0<value>\0" for each path and attribute, the
	// attributes of a path in the order asked.
	f := strings.Split(string(out), "\x00")
	n := len(convertAttrs)
	if len(f)%3 != 1 || len(f)/3 != len(entries)*n {
		return nil
	}
	kept := maps.Clone(entries)
	vals := make([]string, n)
	for i := 0; i+3*n <= len(f)-1; i += 3 * n {
		p := f[i]
		if _, ok := entries[p]; !ok {
			return nil
		}
		for j := range n {
			if f[i+3*j] != p || f[i+3*j+1] != convertAttrs[j] {
				return nil
			}
			vals[j] = f[i+3*j+2]
		}
		if !writesBlob(vals, c) {
			kept[p] = render.GitFile{Mode: kept[p].Mode}
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

// checkTreeSize lists the blobs of sha (listTree), sizes each distinct blob
// once (blobSizes) and fails when the files add up to more than
// maxCheckoutBytes (checkBytes).
func (r repo) checkTreeSize(ctx context.Context, sha string) (tree, error) {
	t, blobs, err := r.listTree(ctx, sha)
	if err != nil {
		return tree{}, err
	}
	sizes, err := r.blobSizes(ctx, blobs)
	if err != nil {
		return tree{}, err
	}
	if t.bytes, err = checkBytes(blobs, sizes); err != nil {
		return tree{}, err
	}
	return t, nil
}

// listTree lists the blobs of sha as `git ls-tree -r` streams them, failing
// as soon as there are more than maxCheckoutFiles (so a tree listing millions
// of paths is never read to its end). It returns the tree without its bytes
// and how many paths hold each blob. (`ls-tree -l` would look up the size of
// every path: a minute for 60,000 paths of one loose blob.)
func (r repo) listTree(ctx context.Context, sha string) (tree, map[string]int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", r.dir, "ls-tree", "-r", "-z", "--full-tree", sha)
	cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"), r.env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return tree{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return tree{}, nil, fmt.Errorf("git ls-tree: %w", err)
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
		return tree{}, nil, limitError(fmt.Sprintf("the commit has more than %d files, the limit per checkout; driftpreview does not check out trees that large (look for the files the PR adds)", maxCheckoutFiles))
	}
	if err := cmd.Wait(); err != nil {
		return tree{}, nil, fmt.Errorf("git ls-tree: %s", gitMessage(stderr.String(), err))
	}
	return tree{files: files, entries: entries}, blobs, nil
}

// blobSizes sizes the blobs of each listing (listTree) with one `git cat-file
// --batch-check`, each distinct blob once.
func (r repo) blobSizes(ctx context.Context, listings ...map[string]int64) (map[string]int64, error) {
	var ids strings.Builder
	seen := map[string]bool{}
	for _, blobs := range listings {
		for id := range blobs {
			if !seen[id] {
				seen[id] = true
				ids.WriteString(id + "\n")
			}
		}
	}
	out, err := r.gitStdin(ctx, ids.String(), "cat-file", "--batch-check=%(objectname) %(objectsize)")
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(seen))
	for l := range strings.Lines(string(out)) {
		id, n, _ := strings.Cut(strings.TrimSpace(l), " ")
		size, _ := strconv.ParseInt(n, 10, 64)
		sizes[id] = size
	}
	return sizes, nil
}

// checkBytes adds up what the paths of blobs (listTree) check out to, and
// fails when that is more than maxCheckoutBytes.
func checkBytes(blobs, sizes map[string]int64) (int64, error) {
	var total int64
	for id, paths := range blobs {
		total += sizes[id] * paths
	}
	if total > maxCheckoutBytes {
		return 0, limitError(fmt.Sprintf("the commit's files add up to %d MiB, over the %d MiB limit per checkout; driftpreview does not check out trees that large (look for big or repeated files the PR adds)", total>>20, maxCheckoutBytes>>20))
	}
	return total, nil
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
