package githubtest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// Call is one request the fake received.
type Call = hostfake.Call

// Comment is an issue comment the fake holds.
type Comment struct {
	ID       int64
	Repo     string
	Number   int
	Body     string
	User     string
	UserType string // "Bot" or "User"
}

// CheckRun is a check run the fake holds.
type CheckRun struct {
	ID          int64
	Repo        string
	HeadSHA     string
	Name        string
	Status      string
	Conclusion  string
	Title       string
	Summary     string
	Text        string
	DetailsURL  string
	AppID       int64
	StartedAt   string
	CompletedAt string
}

// PullRequest is what GET /repos/{owner}/{repo}/pulls/{number} returns.
type PullRequest struct {
	Repo     string
	Number   int
	BaseRef  string
	BaseSHA  string
	HeadRef  string
	HeadSHA  string
	HeadRepo string // defaults to Repo
	HTMLURL  string
}

// Server is the fake GitHub. Create it with New.
type Server struct {
	rec *hostfake.Recorder
	srv *httptest.Server

	// AppID is the App the fake trusts JWTs from; Key and KeyPEM are its key pair.
	AppID  int64
	Key    *rsa.PrivateKey
	KeyPEM []byte
	// BotLogin is the author of comments created through the API.
	BotLogin string

	mu       sync.Mutex
	hook     func(method, path string)
	tokens   map[string]int64 // token → installation
	readOnly map[string]bool  // tokens that may only read
	nextID   int64
	comments []*Comment
	runs     []*CheckRun
	perms    map[string]string // repo + "\x00" + user → permission
	pulls    map[string]PullRequest
	issues   []*Issue
	now      func() time.Time
}

// The App key pair is generated once per test binary: RSA generation is slow and
// tests do not need distinct keys.
var (
	keyOnce   sync.Once
	sharedKey *rsa.PrivateKey
	sharedPEM []byte
	keyErr    error
)

// New starts a fake GitHub with a test App key pair and stops it when the test
// ends.
func New(t testing.TB) *Server {
	t.Helper()
	keyOnce.Do(func() { sharedKey, sharedPEM, keyErr = GenerateKey() })
	key, pemBytes, err := sharedKey, sharedPEM, keyErr
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	s := &Server{
		rec: hostfake.New(t, hostfake.Options{
			Name: "githubtest", ContentType: "application/json; charset=utf-8",
			BadStatus: http.StatusUnprocessableEntity, NotFound: "Not Found",
		}),
		AppID:    31337,
		Key:      key,
		KeyPEM:   pemBytes,
		BotLogin: "driftpreview[bot]",
		tokens:   map[string]int64{},
		readOnly: map[string]bool{},
		nextID:   1000,
		perms:    map[string]string{},
		pulls:    map[string]PullRequest{},
		now:      time.Now,
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API root to put in github.Options.APIURL (with a trailing slash).
func (s *Server) URL() string { return s.srv.URL + "/" }

// GenerateKey makes a 2048-bit RSA key for a test App, with its PKCS#1 PEM encoding
// as github.Options.PrivateKey expects.
func GenerateKey() (*rsa.PrivateKey, []byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, fmt.Errorf("generating test App key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
}

// Sign returns the X-Hub-Signature-256 value GitHub would send for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// WebhookHeader returns the headers of a GitHub App delivery of event with body,
// signed with secret.
func WebhookHeader(event, delivery string, secret, body []byte) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/abc1234")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-GitHub-Hook-ID", "123456789")
	h.Set("X-Hub-Signature-256", Sign(secret, body))
	return h
}

// Calls returns every request received so far, in order.
func (s *Server) Calls() []Call { return s.rec.Calls() }

// ResetCalls forgets the recorded calls (state is kept).
func (s *Server) ResetCalls() { s.rec.ResetCalls() }

// Tokens returns every installation token the fake issued, so tests can assert
// they never leak into errors or logs.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t := range s.tokens {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// AddToken makes the fake accept a fixed token, as GitHub Actions' GITHUB_TOKEN or
// a personal access token. A readOnly token (the GITHUB_TOKEN of a pull_request run
// from a fork) reads, and every write is answered 403 "Resource not accessible by
// integration", as GitHub does.
func (s *Server) AddToken(token string, readOnly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = 0
	s.readOnly[token] = readOnly
}

// Comments returns the comments on repo#number, oldest first.
func (s *Server) Comments(repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Repo == repo && c.Number == number {
			out = append(out, *c)
		}
	}
	return out
}

// AddComment seeds a comment (e.g. a human's) and returns its ID.
func (s *Server) AddComment(repo string, number int, user, userType, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.comments = append(s.comments, &Comment{ID: s.nextID, Repo: repo, Number: number, Body: body, User: user, UserType: userType})
	return s.nextID
}

// CheckRuns returns the check runs on repo@sha, oldest first.
func (s *Server) CheckRuns(repo, sha string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, r := range s.runs {
		if r.Repo == repo && r.HeadSHA == sha {
			out = append(out, *r)
		}
	}
	return out
}

// SetPermission sets user's permission ("admin", "write", "read", "none") on repo;
// unknown users get 404 as on GitHub.
func (s *Server) SetPermission(repo, user, permission string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perms[repo+"\x00"+user] = permission
}

// AddPull registers a pull request for GET .../pulls/{number}.
func (s *Server) AddPull(p PullRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.HeadRepo == "" {
		p.HeadRepo = p.Repo
	}
	s.pulls[p.Repo+"#"+strconv.Itoa(p.Number)] = p
}

// FailNext makes the next n requests matching method ("" for any) and path answer
// status with header (e.g. 403 with Retry-After: 1) instead of being served.
func (s *Server) FailNext(method, path string, n, status int, header http.Header) {
	s.rec.FailNext(method, path, n, status, header)
}

// FailNextSecondary makes the next n requests matching method and path answer
// GitHub's secondary rate limit: 403 with its documented message and
// documentation_url, plus header (which may be empty: GitHub does not always send
// Retry-After).
func (s *Server) FailNextSecondary(method, path string, n int, header http.Header) {
	s.rec.FailNextBody(method, path, n, http.StatusForbidden, header, map[string]string{
		"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID.",
		"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
	})
}

// BeforeRequest makes the fake call f with each request's method and path before
// serving it, outside its lock, so f may change the fake's state (e.g. land a
// comment another client had in flight). nil removes the hook.
func (s *Server) BeforeRequest(f func(method, path string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = f
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook(r.Method, r.URL.Path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.rec.Record(w, r, body) {
		return
	}
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 4 && seg[0] == "app" && seg[1] == "installations" && seg[3] == "access_tokens" {
		s.accessToken(w, r, seg[2])
		return
	}
	if len(seg) == 1 && seg[0] == "app" && r.Method == http.MethodGet {
		s.serveApp(w, r)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	if len(seg) < 4 || seg[0] != "repos" {
		s.rec.NotFound(w, r)
		return
	}
	repo := seg[1] + "/" + seg[2]
	rest := seg[3:]
	switch {
	case r.Method == http.MethodGet && hostfake.Match(rest, "issues", "*", "comments"):
		s.listComments(w, r, repo, rest[1])
	case r.Method == http.MethodPost && hostfake.Match(rest, "issues", "*", "comments"):
		s.createComment(w, r, repo, rest[1], body)
	case r.Method == http.MethodPatch && hostfake.Match(rest, "issues", "comments", "*"):
		s.editComment(w, r, repo, rest[2], body)
	case r.Method == http.MethodDelete && hostfake.Match(rest, "issues", "comments", "*"):
		s.deleteComment(w, r, repo, rest[2])
	case r.Method == http.MethodGet && hostfake.Match(rest, "commits", "*", "check-runs"):
		s.listRuns(w, r, repo, rest[1])
	case r.Method == http.MethodPost && hostfake.Match(rest, "check-runs"):
		s.createRun(w, r, repo, body)
	case r.Method == http.MethodPatch && hostfake.Match(rest, "check-runs", "*"):
		s.updateRun(w, r, repo, rest[1], body)
	case r.Method == http.MethodGet && hostfake.Match(rest, "collaborators", "*", "permission"):
		s.permission(w, r, repo, rest[1])
	case r.Method == http.MethodGet && hostfake.Match(rest, "pulls", "*"):
		s.getPull(w, r, repo, rest[1])
	case r.Method == http.MethodGet && hostfake.Match(rest, "issues"):
		s.listIssues(w, r, repo)
	case r.Method == http.MethodPost && hostfake.Match(rest, "issues"):
		s.createIssue(w, r, repo, body)
	case r.Method == http.MethodPatch && hostfake.Match(rest, "issues", "*"):
		s.editIssue(w, r, repo, rest[1], body)
	default:
		s.rec.NotFound(w, r)
	}
}

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request, inst string) {
	if r.Method != http.MethodPost {
		s.rec.NotFound(w, r)
		return
	}
	id, err := strconv.ParseInt(inst, 10, 64)
	if err != nil {
		s.rec.Bad(w, r, "installation ID %q is not a number", inst)
		return
	}
	if !s.appJWT(w, r) {
		return
	}
	buf := make([]byte, 16)
	_, _ = rand.Read(buf)
	tok := "ghs_" + hex.EncodeToString(buf)
	s.tokens[tok] = id
	s.rec.JSON(w, http.StatusCreated, map[string]any{
		"token":      tok,
		"expires_at": s.now().Add(time.Hour).UTC().Format(time.RFC3339),
		"permissions": map[string]string{
			"checks": "write", "pull_requests": "write", "issues": "write", "contents": "read", "metadata": "read",
		},
		"repository_selection": "all",
	})
}

func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "token ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "Bearer ")
	}
	if _, known := s.tokens[tok]; !ok || !known {
		s.rec.Unauthorized(w, r, "without a valid installation token", "Bad credentials")
		return false
	}
	if s.readOnly[tok] && r.Method != http.MethodGet {
		s.rec.JSON(w, http.StatusForbidden, map[string]string{
			"message":           "Resource not accessible by integration",
			"documentation_url": "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
		})
		return false
	}
	return true
}

type user struct {
	Login string `json:"login"`
	Type  string `json:"type"`
}

type commentJSON struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User user   `json:"user"`
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request, repo, num string) {
	n, _ := strconv.Atoi(num)
	var all []commentJSON
	for _, c := range s.comments {
		if c.Repo == repo && c.Number == n {
			all = append(all, commentJSON{ID: c.ID, Body: c.Body, User: user{Login: c.User, Type: c.UserType}})
		}
	}
	out, page, _, more := hostfake.Page(r.URL.Query(), 30, all)
	if more {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.srv.URL, r.URL.Path, q.Encode()))
	}
	s.rec.JSON(w, http.StatusOK, out)
}

func (s *Server) commentBody(w http.ResponseWriter, r *http.Request, body []byte) (string, bool) {
	text, ok := s.rec.Text(w, r, body)
	if !ok {
		return "", false
	}
	if n := utf8.RuneCountInString(text); n > 65536 {
		s.rec.Bad(w, r, "Body is too long (maximum is 65536 characters), got %d", n)
		return "", false
	}
	return text, true
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request, repo, num string, body []byte) {
	text, ok := s.commentBody(w, r, body)
	if !ok {
		return
	}
	n, _ := strconv.Atoi(num)
	s.nextID++
	c := &Comment{ID: s.nextID, Repo: repo, Number: n, Body: text, User: s.BotLogin, UserType: "Bot"}
	s.comments = append(s.comments, c)
	s.rec.JSON(w, http.StatusCreated, commentJSON{ID: c.ID, Body: c.Body, User: user{Login: c.User, Type: c.UserType}})
}

func (s *Server) findComment(w http.ResponseWriter, r *http.Request, repo, id string) *Comment {
	n, _ := strconv.ParseInt(id, 10, 64)
	for _, c := range s.comments {
		if c.Repo == repo && c.ID == n {
			if c.User != s.BotLogin {
				s.rec.JSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
				s.rec.Errorf("%s %s touches %s's comment", r.Method, r.URL.Path, c.User)
				return nil
			}
			return c
		}
	}
	s.rec.Bad(w, r, "no comment %s in %s", id, repo)
	return nil
}

func (s *Server) editComment(w http.ResponseWriter, r *http.Request, repo, id string, body []byte) {
	text, ok := s.commentBody(w, r, body)
	if !ok {
		return
	}
	c := s.findComment(w, r, repo, id)
	if c == nil {
		return
	}
	c.Body = text
	s.rec.JSON(w, http.StatusOK, commentJSON{ID: c.ID, Body: c.Body, User: user{Login: c.User, Type: c.UserType}})
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request, repo, id string) {
	c := s.findComment(w, r, repo, id)
	if c == nil {
		return
	}
	s.comments = slices.DeleteFunc(s.comments, func(x *Comment) bool { return x == c })
	w.WriteHeader(http.StatusNoContent)
}

type output struct {
	Title   *string `json:"title"`
	Summary *string `json:"summary"`
	Text    *string `json:"text,omitempty"`
}

type runBody struct {
	Name        *string `json:"name"`
	HeadSHA     *string `json:"head_sha"`
	DetailsURL  *string `json:"details_url"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *output `json:"output"`
}

type runJSON struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	HeadSHA     string `json:"head_sha"`
	Status      string `json:"status"`
	Conclusion  string `json:"conclusion,omitempty"`
	DetailsURL  string `json:"details_url,omitempty"`
	StartedAt   string `json:"started_at,omitempty"`
	CompletedAt string `json:"completed_at,omitempty"`
	App         struct {
		ID int64 `json:"id"`
	} `json:"app"`
	Output struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
}

func toJSON(c *CheckRun) runJSON {
	j := runJSON{ID: c.ID, Name: c.Name, HeadSHA: c.HeadSHA, Status: c.Status, Conclusion: c.Conclusion,
		DetailsURL: c.DetailsURL, StartedAt: c.StartedAt, CompletedAt: c.CompletedAt}
	j.App.ID = c.AppID
	j.Output.Title, j.Output.Summary, j.Output.Text = c.Title, c.Summary, c.Text
	return j
}

// checkRun validates a create/update body the way the Checks API does.
func (s *Server) checkRun(w http.ResponseWriter, r *http.Request, in *runBody) bool {
	if in.Status != nil && !slices.Contains([]string{"queued", "in_progress", "completed"}, *in.Status) {
		s.rec.Bad(w, r, "status %q is not queued, in_progress or completed", *in.Status)
		return false
	}
	completed := in.Status != nil && *in.Status == "completed"
	if completed != (in.Conclusion != nil) {
		s.rec.Bad(w, r, "conclusion must be given exactly when status is completed")
		return false
	}
	if in.Conclusion != nil && !slices.Contains([]string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}, *in.Conclusion) {
		s.rec.Bad(w, r, "conclusion %q is not valid", *in.Conclusion)
		return false
	}
	if o := in.Output; o != nil {
		if o.Title == nil || o.Summary == nil {
			s.rec.Bad(w, r, "output needs title and summary")
			return false
		}
		for name, v := range map[string]*string{"title": o.Title, "summary": o.Summary, "text": o.Text} {
			if v != nil && utf8.RuneCountInString(*v) > 65535 {
				s.rec.Bad(w, r, "output.%s is longer than 65535 characters", name)
				return false
			}
		}
	}
	for name, v := range map[string]*string{"started_at": in.StartedAt, "completed_at": in.CompletedAt} {
		if v != nil {
			if _, err := time.Parse(time.RFC3339, *v); err != nil {
				s.rec.Bad(w, r, "%s %q is not ISO 8601", name, *v)
				return false
			}
		}
	}
	return true
}

func apply(c *CheckRun, in *runBody) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.Name, in.Name)
	set(&c.Status, in.Status)
	set(&c.Conclusion, in.Conclusion)
	set(&c.DetailsURL, in.DetailsURL)
	set(&c.StartedAt, in.StartedAt)
	set(&c.CompletedAt, in.CompletedAt)
	if in.Output != nil {
		set(&c.Title, in.Output.Title)
		set(&c.Summary, in.Output.Summary)
		set(&c.Text, in.Output.Text)
	}
}

func (s *Server) createRun(w http.ResponseWriter, r *http.Request, repo string, body []byte) {
	var in runBody
	if !s.rec.Strict(w, r, body, &in) || !s.checkRun(w, r, &in) {
		return
	}
	if in.Name == nil || *in.Name == "" || in.HeadSHA == nil || len(*in.HeadSHA) != 40 {
		s.rec.Bad(w, r, "name and a 40-character head_sha are required")
		return
	}
	s.nextID++
	c := &CheckRun{ID: s.nextID, Repo: repo, HeadSHA: *in.HeadSHA, Status: "queued", AppID: s.AppID}
	apply(c, &in)
	s.runs = append(s.runs, c)
	s.rec.JSON(w, http.StatusCreated, toJSON(c))
}

func (s *Server) updateRun(w http.ResponseWriter, r *http.Request, repo, id string, body []byte) {
	var in runBody
	if !s.rec.Strict(w, r, body, &in) || !s.checkRun(w, r, &in) {
		return
	}
	if in.HeadSHA != nil {
		s.rec.Bad(w, r, "head_sha cannot be updated")
		return
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	for _, c := range s.runs {
		if c.Repo == repo && c.ID == n {
			apply(c, &in)
			s.rec.JSON(w, http.StatusOK, toJSON(c))
			return
		}
	}
	s.rec.Bad(w, r, "no check run %s in %s", id, repo)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, repo, sha string) {
	q := r.URL.Query()
	out := struct {
		Total     int       `json:"total_count"`
		CheckRuns []runJSON `json:"check_runs"`
	}{CheckRuns: []runJSON{}}
	for _, c := range s.runs {
		if c.Repo != repo || c.HeadSHA != sha {
			continue
		}
		if name := q.Get("check_name"); name != "" && c.Name != name {
			continue
		}
		if app := q.Get("app_id"); app != "" && app != strconv.FormatInt(c.AppID, 10) {
			continue
		}
		out.CheckRuns = append(out.CheckRuns, toJSON(c))
	}
	slices.Reverse(out.CheckRuns) // newest first, as GitHub lists them
	out.Total = len(out.CheckRuns)
	s.rec.JSON(w, http.StatusOK, out)
}

func (s *Server) permission(w http.ResponseWriter, r *http.Request, repo, login string) {
	p, ok := s.perms[repo+"\x00"+login]
	if !ok {
		s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	s.rec.JSON(w, http.StatusOK, map[string]any{"permission": p, "user": user{Login: login, Type: "User"}})
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request, repo, num string) {
	p, ok := s.pulls[repo+"#"+num]
	if !ok {
		s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	side := func(ref, sha, full string) map[string]any {
		return map[string]any{"ref": ref, "sha": sha, "repo": map[string]any{"full_name": full}}
	}
	s.rec.JSON(w, http.StatusOK, map[string]any{
		"number":   p.Number,
		"state":    "open",
		"html_url": p.HTMLURL,
		"base":     side(p.BaseRef, p.BaseSHA, p.Repo),
		"head":     side(p.HeadRef, p.HeadSHA, p.HeadRepo),
	})
}
