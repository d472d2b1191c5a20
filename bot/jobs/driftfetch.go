package jobs

import (
	"context"
	"fmt"
	"strings"
)

// FetchBranch fetches branch of req's repository into the mirror (as
// refs/driftpreview/heads/<branch>) and returns the mirror's path and the
// commit the branch points at.
func (m *Mirror) FetchBranch(ctx context.Context, req FetchRequest, branch string) (dir, sha string, err error) {
	if branch == "" || strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, " ~^:?*[\\\x00") || strings.Contains(branch, "..") {
		return "", "", fmt.Errorf("fetching %s: %q is not a branch name", req.Repo, branch)
	}
	repoDir, err := m.Path(req.Host, req.Repo)
	if err != nil {
		return "", "", err
	}
	unlock, err := m.lock(repoDir)
	if err != nil {
		return "", "", err
	}
	defer unlock()
	g := gitRunner{dir: repoDir, header: req.Header}
	if err := g.init(ctx, req.Repo); err != nil {
		return "", "", err
	}
	local := "refs/driftpreview/heads/" + branch
	if _, err := g.run(ctx, "-c", "gc.auto=0", "fetch", "--no-tags", "--quiet", "--", req.URL, "+refs/heads/"+branch+":"+local); err != nil {
		return "", "", fmt.Errorf("fetching branch %s from %s: %w", branch, redactURL(req.URL), err)
	}
	out, err := g.run(ctx, "rev-parse", "--verify", "--quiet", local+"^{commit}")
	if err != nil {
		return "", "", fmt.Errorf("reading branch %s of %s: %w", branch, req.Repo, err)
	}
	sha = strings.TrimSpace(string(out))
	if !shaRE.MatchString(sha) {
		return "", "", fmt.Errorf("reading branch %s of %s: %q is not a commit", branch, req.Repo, sha)
	}
	return repoDir, sha, nil
}
