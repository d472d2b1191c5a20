package gitlabtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// Call is one request the fake received. Path is the decoded URL path.
type Call = hostfake.Call

// Note is a merge request note the fake holds.
type Note struct {
	ID        int64
	ProjectID int64
	MR        int
	Body      string
	AuthorID  int64
	System    bool
}

// Status is a commit status the fake holds; each POST appends one, as GitLab keeps
// a history, and the latest per (sha, name) is the current one.
type Status struct {
	ProjectID   int64
	SHA         string
	Name        string
	State       string
	Description string
	TargetURL   string
}

// MergeRequest is what GET /projects/:id/merge_requests/:iid returns.
type MergeRequest struct {
	ProjectID       int64
	IID             int
	SourceProjectID int64 // defaults to ProjectID
	SourceBranch    string
	TargetBranch    string
	SHA             string
	BaseSHA         string // diff_refs.base_sha (merge base)
	StartSHA        string // diff_refs.start_sha (target head)
	WebURL          string
}

// Server is the fake GitLab. Create it with New.
type Server struct {
	rec *hostfake.Recorder
	srv *httptest.Server

	// Token is the only PRIVATE-TOKEN the fake accepts; BotID and BotUsername are
	// its user.
	Token       string
	BotID       int64
	BotUsername string

	mu       sync.Mutex
	hook     func(method, path string)
	nextID   int64
	projects map[string]int64 // path → ID
	notes    []*Note
	statuses []Status
	users    map[string]int64        // username → ID
	members  map[int64]map[int64]int // project → user → access level
	mrs      map[string]MergeRequest // "project!iid"
	issues   []*Issue
}

// New starts a fake GitLab with a random token and stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	buf := make([]byte, 10)
	_, _ = rand.Read(buf)
	s := &Server{
		rec: hostfake.New(t, hostfake.Options{
			Name: "gitlabtest", ContentType: "application/json",
			BadStatus: http.StatusBadRequest, NotFound: "404 Not Found",
		}),
		Token:       "glpat-" + hex.EncodeToString(buf),
		BotID:       99,
		BotUsername: "driftpreview-bot",
		nextID:      5000,
		projects:    map[string]int64{},
		users:       map[string]int64{},
		members:     map[int64]map[int64]int{},
		mrs:         map[string]MergeRequest{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the GitLab root to put in gitlab.Options.URL.
func (s *Server) URL() string { return s.srv.URL }

// WebhookHeader returns the headers GitLab sends with a delivery of event (e.g.
// "Merge Request Hook") carrying token.
func WebhookHeader(event, uuid, token string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitLab/18.5.0")
	h.Set("X-Gitlab-Event", event)
	h.Set("X-Gitlab-Token", token)
	h.Set("X-Gitlab-Event-UUID", uuid)
	h.Set("X-Gitlab-Webhook-UUID", "2ac9c1b5-6dd5-4c79-9a8e-0b2d3b6c1f00")
	h.Set("X-Gitlab-Instance", "https://gitlab.example.com")
	return h
}

// AddProject registers a project path so requests may name it by path.
func (s *Server) AddProject(id int64, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[path] = id
}

// AddUser registers a user and their access level on project (0 = not a member).
func (s *Server) AddUser(project int64, username string, id int64, accessLevel int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[username] = id
	if accessLevel > 0 {
		if s.members[project] == nil {
			s.members[project] = map[int64]int{}
		}
		s.members[project][id] = accessLevel
	}
}

// AddMergeRequest registers a merge request for GET.
func (s *Server) AddMergeRequest(mr MergeRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if mr.SourceProjectID == 0 {
		mr.SourceProjectID = mr.ProjectID
	}
	s.mrs[fmt.Sprintf("%d!%d", mr.ProjectID, mr.IID)] = mr
}

// AddNote seeds a note (e.g. a human's) and returns its ID.
func (s *Server) AddNote(project int64, mr int, authorID int64, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.notes = append(s.notes, &Note{ID: s.nextID, ProjectID: project, MR: mr, Body: body, AuthorID: authorID})
	return s.nextID
}

// Notes returns the notes on project!mr, oldest first.
func (s *Server) Notes(project int64, mr int) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Note
	for _, n := range s.notes {
		if n.ProjectID == project && n.MR == mr {
			out = append(out, *n)
		}
	}
	return out
}

// Statuses returns every status posted on project@sha, oldest first.
func (s *Server) Statuses(project int64, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, st := range s.statuses {
		if st.ProjectID == project && st.SHA == sha {
			out = append(out, st)
		}
	}
	return out
}

// Calls returns every request received so far, in order.
func (s *Server) Calls() []Call { return s.rec.Calls() }

// ResetCalls forgets the recorded calls (state is kept).
func (s *Server) ResetCalls() { s.rec.ResetCalls() }

// FailNext makes the next n requests matching method ("" for any) and the decoded
// path answer status with header (e.g. 429 with Retry-After) instead of being served.
func (s *Server) FailNext(method, path string, n, status int, header http.Header) {
	s.rec.FailNext(method, path, n, status, header)
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
	if r.Header.Get("PRIVATE-TOKEN") != s.Token {
		s.rec.Unauthorized(w, r, "without the PRIVATE-TOKEN", "401 Unauthorized")
		return
	}
	// Split the escaped path so a URL-encoded project path stays one segment.
	var seg []string
	for _, p := range strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/") {
		u, err := url.PathUnescape(p)
		if err != nil {
			s.rec.Bad(w, r, "bad path segment %q", p)
			return
		}
		seg = append(seg, u)
	}
	if len(seg) < 3 || seg[0] != "api" || seg[1] != "v4" {
		s.rec.NotFound(w, r)
		return
	}
	seg = seg[2:]
	switch {
	case r.Method == http.MethodGet && hostfake.Match(seg, "user"):
		s.rec.JSON(w, http.StatusOK, map[string]any{"id": s.BotID, "username": s.BotUsername, "bot": true, "state": "active"})
		return
	case r.Method == http.MethodGet && hostfake.Match(seg, "users"):
		s.listUsers(w, r)
		return
	}
	if len(seg) < 2 || seg[0] != "projects" {
		s.rec.NotFound(w, r)
		return
	}
	project, ok := s.project(seg[1])
	if !ok {
		s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "404 Project Not Found"})
		return
	}
	rest := seg[2:]
	switch {
	case r.Method == http.MethodGet && hostfake.Match(rest, "merge_requests", "*", "notes"):
		s.listNotes(w, r, project, rest[1])
	case r.Method == http.MethodPost && hostfake.Match(rest, "merge_requests", "*", "notes"):
		s.createNote(w, r, project, rest[1], body)
	case r.Method == http.MethodPut && hostfake.Match(rest, "merge_requests", "*", "notes", "*"):
		s.updateNote(w, r, project, rest[1], rest[3], body)
	case r.Method == http.MethodDelete && hostfake.Match(rest, "merge_requests", "*", "notes", "*"):
		s.deleteNote(w, r, project, rest[1], rest[3])
	case r.Method == http.MethodPost && hostfake.Match(rest, "statuses", "*"):
		s.postStatus(w, r, project, rest[1], body)
	case r.Method == http.MethodGet && hostfake.Match(rest, "members", "all", "*"):
		s.member(w, project, rest[2])
	case r.Method == http.MethodGet && hostfake.Match(rest, "merge_requests", "*"):
		s.getMR(w, project, rest[1])
	case r.Method == http.MethodGet && hostfake.Match(rest, "issues"):
		s.listIssues(w, r, project)
	case r.Method == http.MethodPost && hostfake.Match(rest, "issues"):
		s.createIssue(w, r, project, body)
	case r.Method == http.MethodPut && hostfake.Match(rest, "issues", "*"):
		s.updateIssue(w, r, project, rest[1], body)
	default:
		s.rec.NotFound(w, r)
	}
}

func (s *Server) project(idOrPath string) (int64, bool) {
	if id, err := strconv.ParseInt(idOrPath, 10, 64); err == nil {
		return id, true
	}
	id, ok := s.projects[idOrPath]
	return id, ok
}

type noteJSON struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	Author struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	} `json:"author"`
	NoteableType string `json:"noteable_type"`
	NoteableIID  int    `json:"noteable_iid"`
}

func (s *Server) toJSON(n *Note) noteJSON {
	j := noteJSON{ID: n.ID, Body: n.Body, System: n.System, NoteableType: "MergeRequest", NoteableIID: n.MR}
	j.Author.ID = n.AuthorID
	if n.AuthorID == s.BotID {
		j.Author.Username = s.BotUsername
	}
	return j
}

func (s *Server) listNotes(w http.ResponseWriter, r *http.Request, project int64, iid string) {
	mr, _ := strconv.Atoi(iid)
	var all []noteJSON
	for _, n := range s.notes {
		if n.ProjectID == project && n.MR == mr {
			all = append(all, s.toJSON(n))
		}
	}
	q := r.URL.Query()
	if q.Get("sort") == "desc" || q.Get("sort") == "" {
		slices.Reverse(all) // GitLab's default order is newest first
	}
	out, page, per, more := hostfake.Page(q, 20, all)
	w.Header().Set("X-Page", strconv.Itoa(page))
	w.Header().Set("X-Per-Page", strconv.Itoa(per))
	w.Header().Set("X-Total", strconv.Itoa(len(all)))
	if more {
		w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
	}
	s.rec.JSON(w, http.StatusOK, out)
}

func (s *Server) noteBody(w http.ResponseWriter, r *http.Request, body []byte) (string, bool) {
	text, ok := s.rec.Text(w, r, body)
	if !ok {
		return "", false
	}
	if utf8.RuneCountInString(text) > 1_000_000 {
		s.rec.Bad(w, r, "Note is too long (maximum is 1000000 characters)")
		return "", false
	}
	return text, true
}

func (s *Server) createNote(w http.ResponseWriter, r *http.Request, project int64, iid string, body []byte) {
	text, ok := s.noteBody(w, r, body)
	if !ok {
		return
	}
	mr, _ := strconv.Atoi(iid)
	s.nextID++
	n := &Note{ID: s.nextID, ProjectID: project, MR: mr, Body: text, AuthorID: s.BotID}
	s.notes = append(s.notes, n)
	s.rec.JSON(w, http.StatusCreated, s.toJSON(n))
}

func (s *Server) findNote(w http.ResponseWriter, r *http.Request, project int64, iid, id string) *Note {
	mr, _ := strconv.Atoi(iid)
	nid, _ := strconv.ParseInt(id, 10, 64)
	for _, n := range s.notes {
		if n.ProjectID == project && n.MR == mr && n.ID == nid {
			if n.AuthorID != s.BotID {
				s.rec.Errorf("%s %s touches user %d's note", r.Method, r.URL.Path, n.AuthorID)
				s.rec.JSON(w, http.StatusForbidden, map[string]string{"message": "403 Forbidden"})
				return nil
			}
			return n
		}
	}
	s.rec.Bad(w, r, "no note %s on merge request %s", id, iid)
	return nil
}

func (s *Server) updateNote(w http.ResponseWriter, r *http.Request, project int64, iid, id string, body []byte) {
	text, ok := s.noteBody(w, r, body)
	if !ok {
		return
	}
	n := s.findNote(w, r, project, iid, id)
	if n == nil {
		return
	}
	n.Body = text
	s.rec.JSON(w, http.StatusOK, s.toJSON(n))
}

func (s *Server) deleteNote(w http.ResponseWriter, r *http.Request, project int64, iid, id string) {
	n := s.findNote(w, r, project, iid, id)
	if n == nil {
		return
	}
	s.notes = slices.DeleteFunc(s.notes, func(x *Note) bool { return x == n })
	w.WriteHeader(http.StatusNoContent)
}

type statusBody struct {
	State       *string  `json:"state"`
	Ref         *string  `json:"ref"`
	Name        *string  `json:"name"`
	Context     *string  `json:"context"`
	TargetURL   *string  `json:"target_url"`
	Description *string  `json:"description"`
	Coverage    *float64 `json:"coverage"`
	PipelineID  *int64   `json:"pipeline_id"`
}

func (s *Server) postStatus(w http.ResponseWriter, r *http.Request, project int64, sha string, body []byte) {
	var in statusBody
	if !s.rec.Strict(w, r, body, &in) {
		return
	}
	if len(sha) != 40 {
		s.rec.Bad(w, r, "sha %q is not a full commit SHA", sha)
		return
	}
	if in.State == nil || !slices.Contains([]string{"pending", "running", "success", "failed", "canceled", "skipped"}, *in.State) {
		s.rec.Bad(w, r, "state is missing or not one of pending, running, success, failed, canceled, skipped")
		return
	}
	st := Status{ProjectID: project, SHA: sha, Name: "default", State: *in.State}
	if in.Name != nil {
		st.Name = *in.Name
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 255 {
			s.rec.Bad(w, r, "description is longer than 255 characters")
			return
		}
		st.Description = *in.Description
	}
	if in.TargetURL != nil {
		st.TargetURL = *in.TargetURL
	}
	// GitLab refuses a transition into the state the status already has.
	for i := len(s.statuses) - 1; i >= 0; i-- {
		p := s.statuses[i]
		if p.ProjectID == project && p.SHA == sha && p.Name == st.Name {
			if p.State == st.State {
				s.rec.JSON(w, http.StatusBadRequest, map[string]string{
					"message": fmt.Sprintf("Cannot transition status via :%s from :%s", st.State, p.State)})
				return
			}
			break
		}
	}
	s.statuses = append(s.statuses, st)
	s.rec.JSON(w, http.StatusCreated, map[string]any{
		"id": len(s.statuses), "sha": sha, "status": st.State, "name": st.Name,
		"description": st.Description, "target_url": st.TargetURL,
	})
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("username")
	if name == "" {
		s.rec.Bad(w, r, "the fake only supports looking users up by username")
		return
	}
	out := []map[string]any{}
	if id, ok := s.users[name]; ok {
		out = append(out, map[string]any{"id": id, "username": name, "state": "active"})
	}
	s.rec.JSON(w, http.StatusOK, out)
}

func (s *Server) member(w http.ResponseWriter, project int64, uid string) {
	id, _ := strconv.ParseInt(uid, 10, 64)
	lvl, ok := s.members[project][id]
	if !ok {
		s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	s.rec.JSON(w, http.StatusOK, map[string]any{"id": id, "access_level": lvl, "state": "active"})
}

func (s *Server) getMR(w http.ResponseWriter, project int64, iid string) {
	mr, ok := s.mrs[fmt.Sprintf("%d!%s", project, iid)]
	if !ok {
		s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
		return
	}
	s.rec.JSON(w, http.StatusOK, map[string]any{
		"iid": mr.IID, "project_id": mr.ProjectID, "state": "opened",
		"source_project_id": mr.SourceProjectID, "target_project_id": mr.ProjectID,
		"source_branch": mr.SourceBranch, "target_branch": mr.TargetBranch,
		"sha": mr.SHA, "web_url": mr.WebURL,
		"diff_refs": map[string]string{"base_sha": mr.BaseSHA, "head_sha": mr.SHA, "start_sha": mr.StartSHA},
	})
}
