package preview

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = msg[:500] + "…"
		}
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("git %s: %s", args[0], msg)
	}
	return stdout.Bytes(), nil
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

// checkout writes the tree of commit sha into dir (which must exist and be empty)
// through a throwaway index, leaving the repository itself untouched.
func (r repo) checkout(ctx context.Context, sha, dir string) error {
	index := filepath.Join(dir, ".driftpreview-index")
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := r.git(ctx, env, "read-tree", sha); err != nil {
		return fmt.Errorf("checking out %s: %w", short(sha), err)
	}
	if _, err := r.git(ctx, env, "--work-tree="+dir, "checkout-index", "--all", "--force"); err != nil {
		return fmt.Errorf("checking out %s: %w", short(sha), err)
	}
	return os.Remove(index)
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
