package gitlab

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	gl "gitlab.com/gitlab-org/api/client-go"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hostretry"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/bot/internal/keylock"
)

// MaxCommentLength is GitLab's limit on a note body. The comment renderer splits its
// text into pages no longer than this; UpsertComment truncates anything longer.
const MaxCommentLength = 1_000_000

// maxDescription is GitLab's limit on a commit status description.
const maxDescription = 255

// DeveloperAccess is the lowest access level allowed to ask for a re-run.
const DeveloperAccess = 30

// Options configure a Client. Token and WebhookSecret are secrets: never logged and
// never in errors (String redacts them).
type Options struct {
	// URL is the GitLab root, e.g. https://gitlab.com; the API is URL/api/v4 and
	// projects are cloned from URL/group/project.git (a file:// URL, for tests, gets
	// no credentials).
	URL string
	// Token is a project, group or personal access token with the api scope.
	Token string
	// WebhookSecret is compared with X-Gitlab-Token; New refuses an empty one
	// unless PostOnly.
	WebhookSecret []byte
	// PostOnly is a client that only posts (`driftpreview comment` in a GitLab CI
	// job) and serves no webhooks: its webhook secret is random, so no delivery
	// ever verifies.
	PostOnly bool
	// HTTPClient supplies the base transport and timeout; nil means
	// http.DefaultTransport and a 30 s timeout.
	HTTPClient *http.Client
	// Retry bounds retries of rate-limited and failed API calls.
	Retry hostretry.Options
	// StatusName is the commit status name, "driftpreview" by default.
	StatusName string
	// MaxCommentChars is the size of one comment page, MaxCommentLength by default.
	MaxCommentChars int
}

// DefaultOptions gives gitlab.com, the default retry policy and the "driftpreview"
// status name; Token and WebhookSecret must still be set.
func DefaultOptions() Options {
	return Options{URL: "https://gitlab.com", Retry: hostretry.DefaultOptions(), StatusName: "driftpreview", MaxCommentChars: MaxCommentLength}
}

// String describes the options without the token or webhook secret.
func (o Options) String() string {
	return fmt.Sprintf("gitlab.Options{URL:%q Token:[redacted] WebhookSecret:[redacted]}", o.URL)
}

// GoString is String, so %#v redacts too.
func (o Options) GoString() string { return o.String() }

// Client talks to one GitLab instance with one token. It is safe for concurrent use.
type Client struct {
	opts    Options
	api     *gl.Client
	writeMu sync.Mutex

	mu   sync.Mutex
	self int64 // the token's user ID, learned once
	prMu keylock.Locks
}

// New checks opts and builds a Client. It does not call GitLab.
func New(opts Options) (*Client, error) {
	def := DefaultOptions()
	if opts.URL == "" {
		opts.URL = def.URL
	}
	if opts.StatusName == "" {
		opts.StatusName = def.StatusName
	}
	if opts.MaxCommentChars <= 0 {
		opts.MaxCommentChars = def.MaxCommentChars
	}
	opts.URL = strings.TrimSuffix(opts.URL, "/")
	if opts.PostOnly {
		opts.WebhookSecret = make([]byte, 32)
		if _, err := rand.Read(opts.WebhookSecret); err != nil {
			return nil, fmt.Errorf("configuring gitlab: %w", err)
		}
	}
	if len(opts.WebhookSecret) == 0 {
		return nil, errors.New("configuring gitlab: webhook secret is empty; set a secret token on the webhook and in the server config")
	}
	if opts.Token == "" {
		return nil, errors.New("configuring gitlab: token is empty; create an access token with the api scope")
	}
	u, err := url.Parse(opts.URL)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Scheme != "file") {
		return nil, fmt.Errorf("configuring gitlab: URL %q is not an absolute URL", opts.URL)
	}
	base, timeout := hostretry.ClientBase(opts.HTTPClient)
	c := &Client{opts: opts}
	hc := &http.Client{Transport: hostretry.SerialWrites(hostretry.New(base, opts.Retry), &c.writeMu), Timeout: timeout}
	// The library's own retries are off: hostretry does them, honouring
	// RateLimit-Reset and Retry-After.
	c.api, err = gl.NewClient(opts.Token, gl.WithBaseURL(opts.URL+"/api/v4"), gl.WithHTTPClient(hc), gl.WithoutRetries())
	if err != nil {
		return nil, fmt.Errorf("configuring gitlab client for %s: %w", opts.URL, err)
	}
	return c, nil
}

// pid is how API paths name pr's project: its numeric ID when known, else its path.
func pid(pr bot.PR) any {
	if pr.ProjectID > 0 {
		return pr.ProjectID
	}
	return pr.Repo
}

// prLock serialises UpsertComment per merge request inside this process, so two
// jobs finishing together cannot both create the sticky note.
func (c *Client) prLock(pr bot.PR) *sync.Mutex {
	return c.prMu.For(fmt.Sprintf("%s!%d", pr.Repo, pr.Number))
}

// selfID returns the token user's ID, so UpsertComment only edits its own notes.
func (c *Client) selfID(ctx context.Context) (int64, error) {
	c.mu.Lock()
	id := c.self
	c.mu.Unlock()
	if id != 0 {
		return id, nil
	}
	u, _, err := c.api.Users.CurrentUser(gl.WithContext(ctx))
	if err != nil {
		return 0, fmt.Errorf("reading the token's user: %w", err)
	}
	c.mu.Lock()
	c.self = u.ID
	c.mu.Unlock()
	return u.ID, nil
}

// CloneAuth returns the URL to fetch pr's project from and the HTTP header git must
// send (via GIT_CONFIG_* http.extraHeader, never written to disk). For a file:// URL
// the header is nil. The header holds the token: never log it.
func (c *Client) CloneAuth(ctx context.Context, pr bot.PR) (string, http.Header, error) {
	if pr.Repo == "" {
		return "", nil, fmt.Errorf("clone credentials for merge request !%d: project path is empty", pr.Number)
	}
	cloneURL := c.opts.URL + "/" + pr.Repo + ".git"
	if strings.HasPrefix(c.opts.URL, "file://") {
		return cloneURL, nil, nil
	}
	h := http.Header{}
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("oauth2:"+c.opts.Token)))
	return cloneURL, h, nil
}

// FetchSpec is CloneAuth plus GitLab's ref of the merge request's head
// (refs/merge-requests/N/head, which also carries a fork's head), the base branch,
// and the project's web URL cut from the merge request's
// (https://gitlab.example.com/GROUP/PROJECT/-/merge_requests/N).
func (c *Client) FetchSpec(ctx context.Context, pr bot.PR) (bot.FetchSpec, error) {
	u, h, err := c.CloneAuth(ctx, pr)
	if err != nil {
		return bot.FetchSpec{}, err
	}
	return bot.NewFetchSpec(u, h, fmt.Sprintf("refs/merge-requests/%d/head", pr.Number), pr, RepoWebURL(pr.URL)), nil
}

// RepoWebURL is the project part of a merge request's web URL
// (https://gitlab.example.com/g/sub/shop/-/merge_requests/3 →
// https://gitlab.example.com/g/sub/shop), or "".
func RepoWebURL(mrURL string) string { return bot.URLBefore(mrURL, "/-/merge_requests/") }

// MaxCommentChars is the size limit of one comment page (Options.MaxCommentChars),
// less what the status name's longer sticky marker takes (hosttext.KeyOverhead).
func (c *Client) MaxCommentChars() int {
	return c.opts.MaxCommentChars - hosttext.KeyOverhead(hosttext.CheckKey(c.opts.StatusName))
}

// CanRerun reports whether user (a username) has at least Developer access to pr's
// project, inherited memberships included. Unknown users and non-members get false.
func (c *Client) CanRerun(ctx context.Context, pr bot.PR, user string) (bool, error) {
	users, _, err := c.api.Users.ListUsers(&gl.ListUsersOptions{Username: gl.Ptr(user)}, gl.WithContext(ctx))
	if err != nil {
		return false, fmt.Errorf("looking up user %s: %w", user, err)
	}
	var uid int64
	for _, u := range users {
		if u.Username == user {
			uid = u.ID
		}
	}
	if uid == 0 {
		return false, nil
	}
	m, resp, err := c.api.ProjectMembers.GetInheritedProjectMember(pid(pr), uid, gl.WithContext(ctx))
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, fmt.Errorf("checking %s's access to %s: %w", user, pr.Repo, err)
	}
	return int(m.AccessLevel) >= DeveloperAccess, nil
}

// ResolvePR fills pr's refs and SHAs from the API. Merge request hooks carry the
// head SHA but no base SHA, and note hooks neither reliably, so the server calls it
// whenever BaseSHA is empty. BaseSHA is diff_refs.start_sha, the target branch head
// the MR diff was computed against (GitHub's base.sha), falling back to the merge
// base.
func (c *Client) ResolvePR(ctx context.Context, pr bot.PR) (bot.PR, error) {
	mr, _, err := c.api.MergeRequests.GetMergeRequest(pid(pr), int64(pr.Number), nil, gl.WithContext(ctx))
	if err != nil {
		return pr, fmt.Errorf("resolving merge request %s!%d: %w", pr.Repo, pr.Number, err)
	}
	out := pr
	out.Host = "gitlab"
	out.ProjectID = mr.ProjectID
	out.BaseRef, out.HeadRef = mr.TargetBranch, mr.SourceBranch
	out.HeadSHA = mr.SHA
	out.BaseSHA = mr.DiffRefs.StartSha
	if out.BaseSHA == "" {
		out.BaseSHA = mr.DiffRefs.BaseSha
	}
	if mr.DiffRefs.HeadSha != "" {
		out.HeadSHA = mr.DiffRefs.HeadSha
	}
	out.Fork = mr.SourceProjectID != mr.TargetProjectID
	if !out.Fork {
		out.HeadRepo = ""
	}
	if mr.WebURL != "" {
		out.URL = mr.WebURL
	}
	if out.HeadSHA == "" {
		return pr, fmt.Errorf("resolving merge request %s!%d: the API returned no head SHA", pr.Repo, pr.Number)
	}
	return out, nil
}
