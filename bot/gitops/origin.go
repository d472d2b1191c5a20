package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// OriginURL returns the URL of the origin remote of the git repository at repoDir,
// or "" when it has none, so `driftpreview preview` can pass it in
// Options.RepoURLs and recognise Applications that point at the checkout.
func OriginURL(ctx context.Context, repoDir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", repoDir, "remote", "get-url", "origin")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		// git exits 2 when the remote does not exist.
		if errors.As(err, &exit) && exit.ExitCode() == 2 {
			return "", nil
		}
		return "", fmt.Errorf("reading origin remote of %s: %w: %s", repoDir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}
