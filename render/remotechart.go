package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/oci"
)

// RemoteChart names a chart in a Helm HTTP repository: Flux's HelmRelease
// spec.chart.spec (chart, version, a HelmRepository's url), Argo CD's
// source.chart, targetRevision and repoURL.
type RemoteChart struct {
	RepoURL string `json:"repoURL"`
	Name    string `json:"name"`
	// Version is a version or a semver range; "" means the latest stable one.
	Version string `json:"version,omitempty"`
}

func (c RemoteChart) String() string {
	v := c.Version
	if v == "" {
		v = "(latest)"
	}
	return fmt.Sprintf("chart %s %s from %s", c.Name, v, remote.Redact(c.RepoURL))
}

// CheckoutPrefix marks a values file of a remote chart that is a file of the
// checkout rather than of the chart.
const CheckoutPrefix = "$checkout/"

// ResolvedChart is a chart a render fetched: the version asked for and the one
// it resolved to.
type ResolvedChart struct {
	RepoURL   string // redacted
	Name      string
	Requested string
	Version   string
	// Dependency is true for a chart dependency built like helm dependency build.
	Dependency bool
	// Artifact is true for a Flux OCIRepository artifact (Options.OCI): Name
	// is empty and Version is its revision, tag@digest.
	Artifact bool
	// GitBase is true for a remote kustomize base fetched with git: Name is
	// its path in the repository, Requested the ref, Version the commit.
	GitBase bool
}

// localDependency is a fetched chart dependency the render child adds to the
// chart's charts/ folder.
type localDependency struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Archive string `json:"archive"` // absolute path in the remote cache
}

// prefetch runs in the parent before the render child starts, so the child never
// touches the network: it fetches the remote chart of opts (the render then runs
// on the unpacked chart: root becomes its directory, target ".") and the chart
// dependencies that are not vendored, which it hands the child as archives in
// the remote cache. Failures are *Error wrapping *Unavailable with the fetcher's
// reason (refused by policy, unreachable, not found, too big, timeout): the
// target is not rendered, the PR is not at fault.
func prefetch(ctx context.Context, root, target string, opts *Options) (string, string, []ResolvedChart, error) {
	var resolved []ResolvedChart
	if o := opts.OCI; o != nil {
		if opts.Remote == nil {
			return "", "", nil, &Error{File: target, Err: &Unavailable{Reason: fmt.Sprintf("%s: %s", o, remote.OffReason)}}
		}
		// Values files of the checkout (Argo CD's $ref ones) are read now,
		// before the render moves into the artifact.
		vals, err := checkoutValues(root, opts)
		if err != nil {
			return "", "", nil, err
		}
		opts.Helm.checkoutValues = vals
		var art *remote.Artifact
		if o.Argo {
			art, err = opts.Remote.ArgoOCI(ctx, o.URL, o.Tag)
		} else {
			art, err = opts.Remote.OCIArtifact(ctx, oci.Ref{URL: o.URL, Tag: o.Tag, SemVer: o.SemVer, SemverFilter: o.SemverFilter, Digest: o.Digest}, o.MediaType, o.Operation, o.Insecure)
		}
		if err != nil {
			if ctx.Err() != nil {
				return "", "", nil, fmt.Errorf("fetching %s: %w", o, ctx.Err())
			}
			return "", "", nil, &Error{File: target, Err: &Unavailable{Reason: fmt.Sprintf("%s: %v", o, err)}}
		}
		resolved = append(resolved, ResolvedChart{RepoURL: art.URL, Requested: art.Requested, Version: art.Revision, Artifact: true})
		root = art.Dir
		if opts.Renderer == RendererHelm && !o.Argo {
			// A HelmRelease's chartRef to an OCIRepository: helm-controller
			// loads the artifact as a chart archive (<name>/Chart.yaml inside).
			dir, err := remote.ChartRoot(art.Dir, "")
			if err != nil {
				return "", "", nil, &Error{File: target, Err: &Unavailable{Reason: fmt.Sprintf("%s (resolved to %s) is not a Helm chart: %v", o, art.Revision, err)}}
			}
			root, target = dir, "."
		} else if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target))); err != nil {
			return "", "", nil, &Error{File: target, Err: fmt.Errorf("path %s does not exist in %s (resolved to %s)", target, o, art.Revision)}
		}
	}
	if c := opts.Helm.Chart; c != nil {
		if opts.Remote == nil {
			return "", "", nil, &Error{File: target, Err: &Unavailable{Reason: fmt.Sprintf("%s: %s", c, remote.OffReason)}}
		}
		// Values files of the checkout are read now, before the render moves to
		// the chart's directory, and travel to the render process parsed.
		vals, err := checkoutValues(root, opts)
		if err != nil {
			return "", "", nil, err
		}
		opts.Helm.checkoutValues = vals
		ch, err := opts.Remote.HelmChart(ctx, c.RepoURL, c.Name, c.Version)
		if err != nil {
			if ctx.Err() != nil {
				return "", "", nil, fmt.Errorf("fetching %s: %w", c, ctx.Err())
			}
			return "", "", nil, &Error{File: target, Err: &Unavailable{Reason: fmt.Sprintf("%s: %v", c, err)}}
		}
		resolved = append(resolved, ResolvedChart{RepoURL: remote.Redact(c.RepoURL), Name: c.Name, Requested: c.Version, Version: ch.Version})
		root, target = ch.Dir, "."
		opts.Renderer = RendererHelm
	}
	if opts.Remote == nil {
		return root, target, resolved, nil
	}
	deps, err := prefetchDependencies(ctx, root, target, opts)
	if err != nil {
		return "", "", nil, err
	}
	for _, d := range deps {
		resolved = append(resolved, ResolvedChart{RepoURL: remote.Redact(d.RepoURL), Name: d.Name, Requested: d.Requested, Version: d.Version, Dependency: true})
		opts.Helm.deps = append(opts.Helm.deps, localDependency{Name: d.Name, Version: d.Version, Archive: d.Archive})
	}
	return root, target, resolved, nil
}

// prefetchDependencies fetches the dependencies of the chart at target that its
// charts/ folder does not hold. It reads Chart.yaml and Chart.lock through an
// os.Root at the checkout, capped like any input file.
func prefetchDependencies(ctx context.Context, root, target string, opts *Options) ([]remote.Dependency, error) {
	if opts.Renderer != RendererHelm && opts.Renderer != RendererAuto {
		return nil, nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil // the child reports it
	}
	defer r.Close()
	t, err := cleanRel(filepath.ToSlash(target))
	if err != nil {
		return nil, nil
	}
	if opts.Renderer == RendererAuto {
		for _, n := range kustomizationNames {
			if _, err := r.Stat(path.Join(t, n)); err == nil {
				return nil, nil
			}
		}
	}
	chartYAML, err := readCapped(r, path.Join(t, "Chart.yaml"), opts.MaxFileBytes)
	if err != nil || !strings.Contains(string(chartYAML), "dependencies") {
		return nil, nil
	}
	lock, err := readCapped(r, path.Join(t, "Chart.lock"), opts.MaxFileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	vendored := map[string]bool{}
	if des, err := fs.ReadDir(r.FS(), path.Join(t, "charts")); err == nil {
		for _, de := range des {
			n := de.Name()
			if de.IsDir() {
				vendored[n] = true
			} else if base, ok := strings.CutSuffix(n, ".tgz"); ok {
				// name-version.tgz, as helm dependency build writes it.
				if i := strings.LastIndex(base, "-"); i > 0 {
					for j := i; j > 0; j = strings.LastIndex(base[:j], "-") {
						vendored[base[:j]] = true
					}
				}
			}
		}
	}
	deps, err := opts.Remote.HelmDependencies(ctx, chartYAML, lock, vendored)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fetching chart dependencies: %w", ctx.Err())
		}
		file := path.Join(t, "Chart.yaml")
		if remote.ReasonOf(err) == remote.Invalid && strings.Contains(err.Error(), "Chart.lock") {
			file = path.Join(t, "Chart.lock")
		}
		return nil, &Error{File: file, Err: &Unavailable{Reason: fmt.Sprintf("building chart dependencies like helm dependency build: %v", err)}}
	}
	return deps, nil
}

// checkoutValues reads the values files of a remote chart that are files of
// the checkout, with the render's limits and YAML checks.
func checkoutValues(root string, opts *Options) (map[string]map[string]any, error) {
	var out map[string]map[string]any
	for _, vf := range opts.Helm.ValuesFiles {
		rel, ok := strings.CutPrefix(vf, CheckoutPrefix)
		if !ok {
			continue
		}
		sb, err := openSandbox(root, *opts)
		if err != nil {
			return nil, err
		}
		f, err := cleanRel(rel)
		if err != nil {
			sb.Close()
			return nil, &Error{File: rel, Err: err}
		}
		data, err := sb.readFile(f)
		sb.Close()
		if err != nil {
			return nil, err
		}
		docs, err := DecodeYAML(data, f)
		if err != nil {
			return nil, err
		}
		vals := map[string]any{}
		for _, d := range docs {
			m, ok := d.Value.(map[string]any)
			if !ok {
				return nil, &Error{File: f, Line: d.Line, Err: errors.New("a values file must be a YAML mapping")}
			}
			vals = mergeValues(vals, m)
		}
		if out == nil {
			out = map[string]map[string]any{}
		}
		out[vf] = vals
	}
	return out, nil
}

func readCapped(r *os.Root, name string, max int64) ([]byte, error) {
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > max {
		return nil, fmt.Errorf("%s is not a regular file under the size limit", name)
	}
	return io.ReadAll(io.LimitReader(f, max))
}
