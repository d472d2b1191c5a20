package preview

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/rest"

	"github.com/driftpreview/driftpreview/bot/config"
	"github.com/driftpreview/driftpreview/diffing"
)

// Cluster is how to reach one named cluster. Credentials come only from the CLI flags
// or the server config, never from the repository.
type Cluster struct {
	Name     string
	Config   *rest.Config // nil means no live comparison for this cluster
	LiveMode string       // simulate (default), dry-run or off
}

// Request is one preview: a git repository and two commits.
type Request struct {
	// RepoDir is a git repository (bare or not) that holds both commits. The
	// working tree is never touched: base and head are checked out into temp dirs.
	RepoDir string
	Base    string // ref or SHA
	Head    string
	// Config, when nil, is read from .driftpreview.yaml at Base (the bot) or
	// ConfigFile; when that is missing too, targets are discovered.
	Config     *config.Config
	ConfigFile string
	// Clusters maps the names the repo config uses to credentials. DefaultCluster
	// is used for targets that name no cluster.
	Clusters       map[string]Cluster
	DefaultCluster *Cluster
	// Targets limits the run to these target names; empty means all.
	Targets []string
	Now     time.Time
}

// Run executes the whole pipeline for one request and returns the report. An error
// is returned only for problems outside the PR author's control (git, I/O); render
// and config problems are findings in the report.
func Run(ctx context.Context, req Request) (*diffing.Report, error) {
	return nil, errors.New("preview: not implemented yet")
}
