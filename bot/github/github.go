package github

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
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v60/github"

	"github.com/driftpreview/driftpreview/bot"
	"github.com/driftpreview/driftpreview/bot/internal/hostretry"
	"github.com/driftpreview/driftpreview/bot/internal/hosttext"
	"github.com/driftpreview/driftpreview/bot/internal/keylock"
)

// MaxCommentLength is GitHub's limit on a comment body. The comment renderer splits
// its text into pages no longer than this; UpsertComment truncates anything longer.
const MaxCommentLength = 65536

// maxCheckOutput is GitHub's limit on each of a check run's output title, summary and
// text.
const maxCheckOutput = 65535

// github.com's API root and web URL, the defaults of Options.APIURL and WebURL.
const (
	DefaultAPIURL = "https://api.github.com/"
	DefaultWebURL = "https://github.com"
)

// Options configure a Client. PrivateKey, Token and WebhookSecret are secrets: they
// are never logged and never appear in errors (String redacts them).
type Options struct {
	// AppID and PrivateKey (PEM) identify the GitHub App.
	AppID      int64
	PrivateKey []byte
	// Token, instead of an App, is a fixed token every call sends: GitHub Actions'
	// GITHUB_TOKEN or a personal access token (`driftpreview comment`). A token
	// client serves no webhooks (its webhook secret is random, so no delivery ever
	// verifies) and ignores InstallationID.
	Token string
	// WebhookSecret verifies X-Hub-Signature-256; New refuses an empty one.
	WebhookSecret []byte
	// APIURL is the REST API root: https://api.github.com/ or, for GitHub Enterprise
	// Server, https://HOST/api/v3/.
	APIURL string
	// WebURL is where repositories are cloned from: WebURL/owner/repo.git. A file://
	// URL (tests) gets no credentials.
	WebURL string
	// HTTPClient supplies the base transport and timeout; nil means
	// http.DefaultTransport and a 30 s timeout.
	HTTPClient *http.Client
	// Retry bounds retries of rate-limited and failed API calls.
	Retry hostretry.Options
	// CheckName is the check run's name, "driftpreview" by default; required status
	// checks refer to it.
	CheckName string
	// BotLogin, when set (e.g. "driftpreview[bot]"), is the only author whose
	// comments UpsertComment edits; otherwise any Bot-type author carrying the
	// marker is taken to be us.
	BotLogin string
	// Now is the clock for check run timestamps.
	Now func() time.Time
	// MaxCommentChars is the size of one comment page, MaxCommentLength by default
	// (smaller in tests of pagination).
	MaxCommentChars int
}

// DefaultOptions gives github.com URLs, the default retry policy and the
// "driftpreview" check name; the App identity and secrets must still be set.
func DefaultOptions() Options {
	return Options{
		APIURL:          "https://api.github.com/",
		WebURL:          "https://github.com",
		Retry:           hostretry.DefaultOptions(),
		CheckName:       "driftpreview",
		Now:             time.Now,
		MaxCommentChars: MaxCommentLength,
	}
}

// String describes the options without the private key or webhook secret, so an
// Options value that ends up in a log or error leaks nothing.
func (o Options) String() string {
	return fmt.Sprintf("github.Options{AppID:%d APIURL:%q WebURL:%q PrivateKey:[redacted] Token:[redacted] WebhookSecret:[redacted]}", o.AppID, o.APIURL, o.WebURL)
}

// GoString is String, so %#v redacts too.
func (o Options) GoString() string { return o.String() }

// Client talks to one GitHub App's installations. It is safe for concurrent use.
type Client struct {
	opts    Options
	apiURL  *url.URL
	base    http.RoundTripper
	timeout time.Duration
	apps    *ghinstallation.AppsTransport

	mu    sync.Mutex
	insts map[int64]*installation
	prMu  keylock.Locks
	// fixed is the one client of a Token client; nil for an App.
	fixed *installation
	// login is the App's bot user, learned once (botLogin).
	login string
}

// installation is the cached client of one installation: its token transport
// (refreshed by ghinstallation a minute before expiry) and its write mutex.
type installation struct {
	tr      *ghinstallation.Transport
	api     *gh.Client
	writeMu sync.Mutex
}

// New checks opts and builds a Client. It does not call GitHub.
func New(opts Options) (*Client, error) {
	def := DefaultOptions()
	if opts.APIURL == "" {
		opts.APIURL = def.APIURL
	}
	if opts.WebURL == "" {
		opts.WebURL = def.WebURL
	}
	if opts.CheckName == "" {
		opts.CheckName = def.CheckName
	}
	if opts.Now == nil {
		opts.Now = def.Now
	}
	if opts.MaxCommentChars <= 0 {
		opts.MaxCommentChars = def.MaxCommentChars
	}
	if opts.Token != "" {
		return newToken(opts)
	}
	if len(opts.WebhookSecret) == 0 {
		return nil, errors.New("configuring github: webhook secret is empty; set one in the App settings and the server config")
	}
	if opts.AppID <= 0 {
		return nil, errors.New("configuring github: app ID is not set")
	}
	api, err := url.Parse(opts.APIURL)
	if err != nil || api.Scheme == "" || api.Host == "" {
		return nil, fmt.Errorf("configuring github: API URL %q is not an absolute URL", opts.APIURL)
	}
	if !strings.HasSuffix(api.Path, "/") {
		api.Path += "/"
	}
	if _, err := url.Parse(opts.WebURL); err != nil {
		return nil, fmt.Errorf("configuring github: web URL %q: %w", opts.WebURL, err)
	}
	c := &Client{
		opts:   opts,
		apiURL: api,
		insts:  map[int64]*installation{},
	}
	c.base, c.timeout = hostretry.ClientBase(opts.HTTPClient)
	// go-github would otherwise lock an installation's client until a rate limit's
	// reset (up to an hour) and fail every call without sending it: the retry
	// transport does all the waiting, and go-github never sees the reset headers.
	opts.Retry.HideWaitHeaders = true
	// Retries sit under ghinstallation so token requests are retried as well.
	atr, err := ghinstallation.NewAppsTransport(hostretry.New(c.base, opts.Retry), opts.AppID, opts.PrivateKey)
	c.opts.Retry = opts.Retry
	if err != nil {
		// The library's message never includes the key; still, name only the field.
		return nil, errors.New("configuring github: private key is not a valid PEM-encoded RSA key")
	}
	atr.BaseURL = strings.TrimSuffix(api.String(), "/")
	c.apps = atr
	return c, nil
}

// newToken builds a client that sends opts.Token on every call.
func newToken(opts Options) (*Client, error) {
	if opts.AppID != 0 || len(opts.PrivateKey) != 0 {
		return nil, errors.New("configuring github: set either a token or an App ID and private key, not both")
	}
	api, err := url.Parse(opts.APIURL)
	if err != nil || api.Scheme == "" || api.Host == "" {
		return nil, fmt.Errorf("configuring github: API URL %q is not an absolute URL", opts.APIURL)
	}
	if !strings.HasSuffix(api.Path, "/") {
		api.Path += "/"
	}
	// No delivery can be signed with a secret nobody knows.
	opts.WebhookSecret = make([]byte, 32)
	if _, err := rand.Read(opts.WebhookSecret); err != nil {
		return nil, fmt.Errorf("configuring github: %w", err)
	}
	c := &Client{opts: opts, apiURL: api, insts: map[int64]*installation{}}
	c.base, c.timeout = hostretry.ClientBase(opts.HTTPClient)
	opts.Retry.HideWaitHeaders = true
	c.opts.Retry = opts.Retry
	in := &installation{}
	auth := tokenAuth{token: opts.Token, next: hostretry.New(c.base, opts.Retry)}
	hc := &http.Client{Transport: hostretry.SerialWrites(auth, &in.writeMu), Timeout: c.timeout}
	in.api = gh.NewClient(hc)
	in.api.BaseURL = c.apiURL
	in.api.UploadURL = c.apiURL
	c.fixed = in
	return c, nil
}

// tokenAuth sends a fixed token as GitHub documents for GITHUB_TOKEN and personal
// access tokens: "Authorization: Bearer TOKEN".
type tokenAuth struct {
	token string
	next  http.RoundTripper
}

func (t tokenAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// install returns the cached client of installation id (the one client of a Token
// client, whatever id).
func (c *Client) install(id int64) (*installation, error) {
	if c.fixed != nil {
		return c.fixed, nil
	}
	if id <= 0 {
		return nil, errors.New("pull request has no GitHub App installation ID")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if in, ok := c.insts[id]; ok {
		return in, nil
	}
	in := &installation{}
	in.tr = ghinstallation.NewFromAppsTransport(c.apps, id)
	in.tr.BaseURL = c.apps.BaseURL
	hc := &http.Client{Transport: hostretry.SerialWrites(in.tr, &in.writeMu), Timeout: c.timeout}
	in.api = gh.NewClient(hc)
	in.api.BaseURL = c.apiURL
	in.api.UploadURL = c.apiURL
	c.insts[id] = in
	return in, nil
}

// prLock serialises UpsertComment per pull request inside this process, so two jobs
// finishing together cannot both create the sticky comment.
func (c *Client) prLock(pr bot.PR) *sync.Mutex {
	return c.prMu.For(fmt.Sprintf("%s#%d", pr.Repo, pr.Number))
}

// split returns owner and name of "owner/name".
func split(repo string) (string, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not owner/name", repo)
	}
	return owner, name, nil
}

// CloneAuth returns the URL to fetch pr's repository from and the HTTP header git
// must send (via GIT_CONFIG_* http.extraHeader, never written to disk). Fork heads
// are fetched from the base repository as refs/pull/N/head, so one credential
// serves both. For a file:// WebURL the header is nil. The header holds a live
// installation token: never log it.
func (c *Client) CloneAuth(ctx context.Context, pr bot.PR) (string, http.Header, error) {
	if _, _, err := split(pr.Repo); err != nil {
		return "", nil, fmt.Errorf("clone credentials for %s#%d: %w", pr.Repo, pr.Number, err)
	}
	cloneURL := strings.TrimSuffix(c.opts.WebURL, "/") + "/" + pr.Repo + ".git"
	if strings.HasPrefix(c.opts.WebURL, "file://") {
		return cloneURL, nil, nil
	}
	tok := c.opts.Token
	if tok == "" {
		in, err := c.install(pr.InstallationID)
		if err != nil {
			return "", nil, fmt.Errorf("clone credentials for %s#%d: %w", pr.Repo, pr.Number, err)
		}
		if tok, err = in.tr.Token(ctx); err != nil {
			return "", nil, fmt.Errorf("clone credentials for %s#%d: installation token: %w", pr.Repo, pr.Number, err)
		}
	}
	h := http.Header{}
	h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok)))
	return cloneURL, h, nil
}

// FetchSpec is CloneAuth plus GitHub's ref of the PR's head (refs/pull/N/head,
// which also carries a fork's head), the base branch, and the repository's web URL
// cut from the PR's (https://github.com/OWNER/NAME/pull/N).
func (c *Client) FetchSpec(ctx context.Context, pr bot.PR) (bot.FetchSpec, error) {
	u, h, err := c.CloneAuth(ctx, pr)
	if err != nil {
		return bot.FetchSpec{}, err
	}
	return bot.NewFetchSpec(u, h, fmt.Sprintf("refs/pull/%d/head", pr.Number), pr, RepoWebURL(pr.URL)), nil
}

// RepoWebURL is the repository part of a pull request's web URL
// (https://github.com/acme/shop/pull/7 → https://github.com/acme/shop), or "".
func RepoWebURL(prURL string) string { return bot.URLBefore(prURL, "/pull/") }

// MaxCommentChars is the size limit of one comment page (Options.MaxCommentChars),
// less what the check name's longer sticky marker takes (hosttext.KeyOverhead).
func (c *Client) MaxCommentChars() int {
	return c.opts.MaxCommentChars - hosttext.KeyOverhead(hosttext.CheckKey(c.opts.CheckName))
}

// CanRerun reports whether user may ask for a re-run on pr's repository: GitHub's
// permission must be write or admin (maintain reports as write). Someone who is not
// a collaborator at all gets false, not an error.
func (c *Client) CanRerun(ctx context.Context, pr bot.PR, user string) (bool, error) {
	owner, name, err := split(pr.Repo)
	if err != nil {
		return false, fmt.Errorf("checking %s's permission: %w", user, err)
	}
	in, err := c.install(pr.InstallationID)
	if err != nil {
		return false, fmt.Errorf("checking %s's permission on %s: %w", user, pr.Repo, err)
	}
	lvl, resp, err := in.api.Repositories.GetPermissionLevel(ctx, owner, name, user)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, fmt.Errorf("checking %s's permission on %s: %w", user, pr.Repo, err)
	}
	switch lvl.GetPermission() {
	case "admin", "write", "maintain":
		return true, nil
	}
	return false, nil
}

// ResolvePR fills pr's refs, SHAs and fork fields from the API. The server calls it
// for re-runs, whose issue_comment payload carries no SHAs.
func (c *Client) ResolvePR(ctx context.Context, pr bot.PR) (bot.PR, error) {
	owner, name, err := split(pr.Repo)
	if err != nil {
		return pr, fmt.Errorf("resolving pull request %d: %w", pr.Number, err)
	}
	in, err := c.install(pr.InstallationID)
	if err != nil {
		return pr, fmt.Errorf("resolving pull request %s#%d: %w", pr.Repo, pr.Number, err)
	}
	p, _, err := in.api.PullRequests.Get(ctx, owner, name, pr.Number)
	if err != nil {
		return pr, fmt.Errorf("resolving pull request %s#%d: %w", pr.Repo, pr.Number, err)
	}
	out := prFrom(p)
	out.InstallationID = pr.InstallationID
	if out.Repo == "" {
		out.Repo = pr.Repo
	}
	return out, nil
}

// prFrom translates a go-github pull request.
func prFrom(p *gh.PullRequest) bot.PR {
	out := bot.PR{
		Host:    "github",
		Repo:    p.GetBase().GetRepo().GetFullName(),
		Number:  p.GetNumber(),
		BaseRef: p.GetBase().GetRef(),
		BaseSHA: p.GetBase().GetSHA(),
		HeadRef: p.GetHead().GetRef(),
		HeadSHA: p.GetHead().GetSHA(),
		URL:     p.GetHTMLURL(),
	}
	// A deleted fork leaves head.repo null: still a fork, of unknown origin.
	headRepo := p.GetHead().GetRepo().GetFullName()
	if headRepo != out.Repo {
		out.Fork = true
		out.HeadRepo = headRepo
	}
	return out
}

// IsForbidden says whether err is GitHub's 403 on a write the token may not make,
// as the read-only GITHUB_TOKEN of a pull_request run from a fork gets ("Resource
// not accessible by integration"). Rate limits, also 403s, are not.
func IsForbidden(err error) bool {
	var er *gh.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusForbidden {
		return false
	}
	var rl *gh.RateLimitError
	var ab *gh.AbuseRateLimitError
	return !errors.As(err, &rl) && !errors.As(err, &ab)
}
