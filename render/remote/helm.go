package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"sigs.k8s.io/yaml"
)

// Chart is a chart fetched from a Helm HTTP repository and unpacked in the cache.
type Chart struct {
	RepoURL string // the repository, as asked for
	Name    string
	// Requested is the version or range asked for ("" means the latest stable);
	// Version is what it resolved to.
	Requested string
	Version   string
	URL       string // the archive's URL (redacted)
	Digest    string // sha256 hex from the index, "" when the index has none
	Archive   string // the .tgz in the cache
	Dir       string // the unpacked chart (holds Chart.yaml), in the cache
}

// HelmIndex fetches (or takes from the cache) the index.yaml of the Helm HTTP
// repository at repoURL and parses it with Helm's own repo package
// (repo.LoadIndexFile: entries validated and sorted newest first, as `helm repo
// update` leaves them). The download is capped at MaxIndexBytes.
//
// The parsed index is kept for IndexTTL, so the base and head renders of one
// preview resolve ranges against the same index, in a memo keyed by the
// normalised index URL without its query (repositories differing only in
// their query share one download and one parse) and bounded in bytes
// (MaxIndexMemoBytes); only what resolving versions reads is kept of it. Each
// index URL has a lock of its own, so others are fetched meanwhile, and a
// failure is remembered for the run.
func (f *Fetcher) HelmIndex(ctx context.Context, repoURL string) (*repo.IndexFile, error) {
	norm, _, err := f.allowed(repoURL)
	if err != nil {
		return nil, err
	}
	// Helm's ChartRepository.DownloadIndexFile resolves "index.yaml" against
	// the repository URL the same way.
	indexURL, err := repo.ResolveReferenceURL(norm.String(), "index.yaml")
	if err != nil {
		return nil, errorf(Invalid, repoURL, "not a repository URL: %v", err)
	}
	key := indexURL
	if u, err := url.Parse(indexURL); err == nil {
		u.RawQuery, u.ForceQuery = "", false
		key = u.String()
	}
	if err := f.run.failed(key); err != nil {
		return nil, err
	}
	unlock := f.shared.lock(key)
	defer unlock()
	if idx := f.shared.memoGet(key, f.policy.IndexTTL); idx != nil {
		return idx, nil
	}
	if err := f.run.failed(key); err != nil { // while we waited
		return nil, err
	}
	idx, err := f.loadIndex(ctx, key, indexURL)
	if err != nil {
		if ctx.Err() == nil {
			f.run.remember(key, err)
		}
		return nil, err
	}
	return idx, nil
}

func (f *Fetcher) loadIndex(ctx context.Context, key, indexURL string) (*repo.IndexFile, error) {
	p, err := f.cache.File(Key("helm-index", key), f.policy.IndexTTL, func(w io.Writer) error {
		_, err := f.download(ctx, indexURL, f.policy.MaxIndexBytes, w)
		return err
	})
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(p); err == nil && st.Size() > bigIndexBytes {
		f.shared.bigParse.Lock()
		defer f.shared.bigParse.Unlock()
	}
	idx, err := repo.LoadIndexFile(p)
	if err != nil {
		_ = os.Remove(p)
		return nil, errorf(Invalid, indexURL, "not a Helm repository index: %v", shorten(err))
	}
	f.shared.memoPut(key, idx, slimIndex(idx))
	return idx, nil
}

// ResolveVersion picks the chart version of name that version asks for, the way
// Flux's source-controller does for a HelmRepository (internal/helm/repository/
// chart_repository.go, getChartVersion): an exact match of the version string
// first; otherwise the highest version satisfying the Masterminds semver
// constraint ("" and "*" mean the latest stable version, pre-releases only when
// the constraint names one), ties broken by the newest `created`. Helm's own
// IndexFile.Get (pkg/repo/v1/index.go) does the same over the sorted index: exact
// match, then the first (highest) version the constraint accepts.
func ResolveVersion(idx *repo.IndexFile, name, version string) (*repo.ChartVersion, error) {
	cvs, ok := idx.Entries[name]
	if !ok || len(cvs) == 0 {
		return nil, fmt.Errorf("the repository index has no chart %s", name)
	}
	if version != "" {
		for _, cv := range cvs {
			if cv != nil && cv.Version == version {
				return cv, nil
			}
		}
	}
	c := version
	if c == "" {
		c = "*"
	}
	con, err := semver.NewConstraint(c)
	if err != nil {
		return nil, fmt.Errorf("version %q is neither a version in the index nor a semver range: %v", version, err)
	}
	type cand struct {
		v  *semver.Version
		cv *repo.ChartVersion
	}
	var cands []cand
	for _, cv := range cvs {
		if cv == nil {
			continue
		}
		v, err := semver.NewVersion(cv.Version)
		if err != nil || !con.Check(v) {
			continue
		}
		cands = append(cands, cand{v, cv})
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("no version of chart %s matches %q", name, c)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if !cands[i].v.Equal(cands[j].v) {
			return cands[j].v.LessThan(cands[i].v)
		}
		return cands[j].cv.Created.Before(cands[i].cv.Created)
	})
	return cands[0].cv, nil
}

// HelmChart resolves chart name at version (a version or a semver range) in the
// Helm HTTP repository repoURL, downloads its archive (capped, digest checked
// when the index has one) into the cache keyed by digest (or by URL and
// version), and unpacks it there with Unpack's checks.
func (f *Fetcher) HelmChart(ctx context.Context, repoURL, name, version string) (*Chart, error) {
	if strings.HasPrefix(repoURL, "oci://") {
		return f.ociChart(ctx, repoURL, name, version)
	}
	idx, err := f.HelmIndex(ctx, repoURL)
	if err != nil {
		return nil, err
	}
	cv, err := ResolveVersion(idx, name, version)
	if err != nil {
		return nil, &Error{Reason: NotFound, URL: Redact(repoURL), Err: err}
	}
	if len(cv.URLs) == 0 {
		return nil, errorf(Invalid, repoURL, "chart %s %s has no download URL in the index", name, cv.Version)
	}
	// Helm's ChartDownloader and Flux both take the first URL, resolved
	// against the repository URL.
	chartURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, errorf(Invalid, repoURL, "chart %s %s: bad URL in the index: %v", name, cv.Version, err)
	}
	ch := &Chart{RepoURL: repoURL, Name: name, Requested: version, Version: cv.Version, URL: Redact(chartURL)}
	key, ok := DigestKey(cv.Digest)
	if ok {
		ch.Digest = strings.TrimPrefix(strings.ToLower(cv.Digest), "sha256:")
	} else {
		key = Key("helm-chart", chartURL, cv.Version)
	}
	if err := f.archive(ctx, ch, chartURL, key); err != nil {
		return nil, err
	}
	return ch, nil
}

// archive downloads and unpacks ch's archive under key, filling Archive and Dir.
func (f *Fetcher) archive(ctx context.Context, ch *Chart, chartURL, key string) error {
	p, err := f.cache.File(key, 0, func(w io.Writer) error {
		var h hash.Hash = sha256.New()
		if _, err := f.download(ctx, chartURL, f.policy.MaxArchiveBytes, io.MultiWriter(w, h)); err != nil {
			return err
		}
		if got := hex.EncodeToString(h.Sum(nil)); ch.Digest != "" && got != ch.Digest {
			return errorf(Invalid, chartURL, "digest mismatch: the index says sha256:%s, the archive is sha256:%s", ch.Digest, got)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ch.Archive = p
	dir, err := f.cache.Tree("tree-"+key, func(dir string) error {
		a, err := os.Open(p)
		if err != nil {
			return err
		}
		defer a.Close()
		return Unpack(a, dir, chartURL, f.limits())
	})
	if err != nil {
		return err
	}
	root, err := chartRoot(dir, ch.Name)
	if err != nil {
		return &Error{Reason: Invalid, URL: Redact(chartURL), Err: err}
	}
	ch.Dir = root
	return nil
}

func (f *Fetcher) limits() Limits {
	return Limits{MaxFiles: f.policy.MaxFiles, MaxBytes: f.policy.MaxUnpackedBytes, MaxFileBytes: f.policy.MaxUnpackedFileBytes}
}

// ChartRoot finds the chart inside an unpacked archive: `helm package` puts it
// in a directory named after the chart (name; "" when unknown); any single top
// directory with a Chart.yaml is accepted, as Helm's loader takes the archive's
// one top directory.
func ChartRoot(dir, name string) (string, error) {
	return chartRoot(dir, name)
}

func chartRoot(dir, name string) (string, error) {
	if st, err := os.Stat(filepath.Join(dir, name, "Chart.yaml")); name != "" && err == nil && st.Mode().IsRegular() {
		return filepath.Join(dir, name), nil
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(des) == 1 && des[0].IsDir() {
		if _, err := os.Stat(filepath.Join(dir, des[0].Name(), "Chart.yaml")); err == nil {
			return filepath.Join(dir, des[0].Name()), nil
		}
	}
	return "", errors.New("the archive holds no chart (no <name>/Chart.yaml)")
}

// Dependency is one chart dependency fetched by HelmDependencies.
type Dependency struct {
	Chart
	// Alias is the dependency's alias in Chart.yaml, if any.
	Alias string
}

// HelmDependencies fetches the dependencies that Chart.yaml (chartYAML) lists,
// the way `helm dependency build` does (pkg/downloader/manager.go, Build): with a
// Chart.lock (chartLock, nil when absent) that matches Chart.yaml, the locked
// versions; a lock out of sync with Chart.yaml is an error, as in helm; without
// a lock, each version constraint resolved against its repository's index, as
// `helm dependency update` does. skip names the dependencies already vendored
// (by name): they are not fetched. http(s) and oci:// repositories are fetched;
// other kinds (file://, @alias) are Unsupported *Errors.
func (f *Fetcher) HelmDependencies(ctx context.Context, chartYAML, chartLock []byte, skip map[string]bool) ([]Dependency, error) {
	var md chart.Metadata
	if err := yaml.Unmarshal(chartYAML, &md); err != nil {
		return nil, &Error{Reason: Invalid, Err: fmt.Errorf("parsing Chart.yaml: %v", shorten(err))}
	}
	deps := md.Dependencies
	if len(chartLock) > 0 {
		var lock chart.Lock
		if err := yaml.Unmarshal(chartLock, &lock); err != nil {
			return nil, &Error{Reason: Invalid, Err: fmt.Errorf("parsing Chart.lock: %v", shorten(err))}
		}
		if sum, err := hashReq(md.Dependencies, lock.Dependencies); err != nil || sum != lock.Digest {
			return nil, &Error{Reason: Invalid, Err: errors.New("the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml); helm dependency build fails the same way: run helm dependency update and commit Chart.lock")}
		}
		// Aliases, conditions and tags live in Chart.yaml; the lock pins versions.
		byName := map[string]*chart.Dependency{}
		for _, d := range lock.Dependencies {
			if d != nil {
				byName[d.Name+"\x00"+d.Repository] = d
			}
		}
		pinned := make([]*chart.Dependency, 0, len(deps))
		for _, d := range deps {
			if d == nil {
				continue
			}
			c := *d
			if l := byName[d.Name+"\x00"+d.Repository]; l != nil {
				c.Version = l.Version
			}
			pinned = append(pinned, &c)
		}
		deps = pinned
	}
	var out []Dependency
	for _, d := range deps {
		if d == nil || skip[d.Name] || (d.Alias != "" && skip[d.Alias]) {
			continue
		}
		r := d.Repository
		switch {
		case strings.HasPrefix(r, "http://"), strings.HasPrefix(r, "https://"), strings.HasPrefix(r, "oci://"):
		case r == "":
			return nil, &Error{Reason: NotFound, Err: fmt.Errorf("dependency %s names no repository and is not vendored in charts/", d.Name)}
		case strings.HasPrefix(r, "@"), strings.HasPrefix(r, "alias:"):
			// helm dependency build resolves @name / alias:name through the
			// user's repositories.yaml (pkg/downloader/manager.go,
			// resolveRepoNames); a preview has no such file, and the
			// remote policy names prefixes, not repository names.
			return nil, &Error{Reason: Unsupported, Err: fmt.Errorf("dependency %s: repository %q is a name Helm looks up in the repositories.yaml of `helm repo add`, which driftpreview does not have; write the repository URL in Chart.yaml (and Chart.lock), or vendor the chart in charts/", d.Name, r)}
		case strings.HasPrefix(r, "file://"):
			// helm dependency build packages the chart directory a file://
			// repository names (manager.go, tarFromLocalDir); driftpreview
			// renders only vendored copies of it.
			return nil, &Error{Reason: Unsupported, Err: fmt.Errorf("dependency %s: repository %q is a chart directory that helm dependency build packages into charts/; driftpreview does not package it: vendor it in charts/ (helm dependency build) and commit it", d.Name, r)}
		default:
			return nil, &Error{Reason: Unsupported, URL: Redact(r), Err: fmt.Errorf("dependency %s: only http(s) and oci:// chart repositories are fetched", d.Name)}
		}
		ch, err := f.HelmChart(ctx, r, d.Name, d.Version)
		if err != nil {
			return nil, err
		}
		out = append(out, Dependency{Chart: *ch, Alias: d.Alias})
	}
	return out, nil
}

// hashReq is Helm's internal/resolver HashReq: the sha256 of the JSON of the
// Chart.yaml dependencies and the locked ones, which Chart.lock's digest holds.
func hashReq(req, lock []*chart.Dependency) (string, error) {
	data, err := json.Marshal([2][]*chart.Dependency{req, lock})
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:]), nil
}

func shorten(err error) string {
	s := err.Error()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
