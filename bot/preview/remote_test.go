package preview

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/driftpreview/driftpreview/render/remote"
	"github.com/driftpreview/driftpreview/render/remote/remotetest"
)

// placeholderRepo is the Helm repository URL the fixtures of scenarios with a
// repo/ folder name; the test serves repo/ and puts its URL in its place.
const placeholderRepo = "http://charts.invalid/"

// commitIDs matches the commit ids in a comment's footer.
var commitIDs = regexp.MustCompile("base `[0-9a-f]{7,}` ↔ head `[0-9a-f]{7,}`")

// helmRepoFixture packages every chart folder of dir/repo (<name>-<version>/)
// with Helm's library, serves them as a Helm HTTP repository on 127.0.0.1, and
// returns a copy of dir naming that repository, a fetcher whose policy allows it
// (explicitly: it is a loopback address) and its URL.
func helmRepoFixture(t *testing.T, dir string) (string, *remote.Fetcher, string) {
	t.Helper()
	charts, err := os.ReadDir(filepath.Join(dir, "repo"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []remotetest.Chart
	for _, c := range charts {
		root := filepath.Join(dir, "repo", c.Name())
		files := map[string]string{}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		i := strings.LastIndex(c.Name(), "-")
		specs = append(specs, remotetest.Chart{Name: c.Name()[:i], Version: c.Name()[i+1:], Files: files})
	}
	repo := remotetest.NewHelmRepo(t, specs...)
	dst := t.TempDir()
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), placeholderRepo, repo.URL)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := remote.NewFetcher(remote.Policy{Allow: []remote.Prefix{{URL: repo.URL}}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return dst, f, repo.URL
}
