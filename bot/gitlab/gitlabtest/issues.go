package gitlabtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// Issue is a project issue the fake holds.
type Issue struct {
	ProjectID   int64
	IID         int64
	Title       string
	Description string
	State       string // "opened" or "closed"
	AuthorID    int64
}

// Issues returns the issues of project, oldest first.
func (s *Server) Issues(project int64) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.issues {
		if is.ProjectID == project {
			out = append(out, *is)
		}
	}
	return out
}

// AddIssue seeds an issue (e.g. a human's) and returns its iid.
func (s *Server) AddIssue(project, authorID int64, title, description string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addIssue(&Issue{ProjectID: project, Title: title, Description: description, State: "opened", AuthorID: authorID})
}

func (s *Server) addIssue(is *Issue) int64 {
	var n int64
	for _, x := range s.issues {
		if x.ProjectID == is.ProjectID {
			n = max(n, x.IID)
		}
	}
	is.IID = n + 1
	s.issues = append(s.issues, is)
	return is.IID
}

type issueJSON struct {
	ID          int64  `json:"id"`
	IID         int64  `json:"iid"`
	ProjectID   int64  `json:"project_id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	State       string `json:"state"`
	WebURL      string `json:"web_url"`
	Author      struct {
		ID       int64  `json:"id"`
		Username string `json:"username"`
	} `json:"author"`
}

func (s *Server) issueJSON(is *Issue) issueJSON {
	j := issueJSON{ID: is.ProjectID*100000 + is.IID, IID: is.IID, ProjectID: is.ProjectID, Title: is.Title, Description: is.Description,
		State: is.State, WebURL: fmt.Sprintf("https://gitlab.example.com/projects/%d/-/issues/%d", is.ProjectID, is.IID)}
	j.Author.ID = is.AuthorID
	if is.AuthorID == s.BotID {
		j.Author.Username = s.BotUsername
	}
	return j
}

// listIssues is GET /projects/:id/issues with GitLab's state (opened, closed;
// default all), author_id, order_by (created_at) and sort (default desc).
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, project int64) {
	q := r.URL.Query()
	state := q.Get("state")
	if state != "" && state != "opened" && state != "closed" && state != "all" {
		s.rec.Bad(w, r, "state %q is not opened, closed or all", state)
		return
	}
	if ob := q.Get("order_by"); ob != "" && ob != "created_at" {
		s.rec.Bad(w, r, "the fake orders only by created_at, not %q", ob)
		return
	}
	var all []issueJSON
	for _, is := range s.issues {
		if is.ProjectID != project || (state != "" && state != "all" && is.State != state) {
			continue
		}
		if a := q.Get("author_id"); a != "" && a != strconv.FormatInt(is.AuthorID, 10) {
			continue
		}
		all = append(all, s.issueJSON(is))
	}
	if q.Get("sort") != "asc" {
		slices.Reverse(all)
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

type issueBody struct {
	Title       *string `json:"title"`
	Description *string `json:"description"`
	StateEvent  *string `json:"state_event"`
}

func (s *Server) validIssue(w http.ResponseWriter, r *http.Request, in *issueBody) bool {
	if in.Title != nil && (*in.Title == "" || utf8.RuneCountInString(*in.Title) > 255) {
		s.rec.Bad(w, r, "title must be 1 to 255 characters")
		return false
	}
	if in.Description != nil && utf8.RuneCountInString(*in.Description) > 1_048_576 {
		s.rec.Bad(w, r, "description is too long (maximum is 1048576 characters)")
		return false
	}
	if in.StateEvent != nil && *in.StateEvent != "close" && *in.StateEvent != "reopen" {
		s.rec.Bad(w, r, "state_event %q is not close or reopen", *in.StateEvent)
		return false
	}
	return true
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request, project int64, body []byte) {
	var in issueBody
	if !s.rec.Strict(w, r, body, &in) || !s.validIssue(w, r, &in) {
		return
	}
	if in.Title == nil || in.StateEvent != nil {
		s.rec.Bad(w, r, "a new issue needs a title and takes no state_event")
		return
	}
	is := &Issue{ProjectID: project, Title: *in.Title, State: "opened", AuthorID: s.BotID}
	if in.Description != nil {
		is.Description = *in.Description
	}
	s.addIssue(is)
	s.rec.JSON(w, http.StatusCreated, s.issueJSON(is))
}

func (s *Server) updateIssue(w http.ResponseWriter, r *http.Request, project int64, iid string, body []byte) {
	var in issueBody
	if !s.rec.Strict(w, r, body, &in) || !s.validIssue(w, r, &in) {
		return
	}
	n, _ := strconv.ParseInt(iid, 10, 64)
	for _, is := range s.issues {
		if is.ProjectID != project || is.IID != n {
			continue
		}
		if is.AuthorID != s.BotID {
			s.rec.Errorf("%s %s edits user %d's issue", r.Method, r.URL.Path, is.AuthorID)
		}
		if in.Title != nil {
			is.Title = *in.Title
		}
		if in.Description != nil {
			is.Description = *in.Description
		}
		if in.StateEvent != nil {
			is.State = map[string]string{"close": "closed", "reopen": "opened"}[*in.StateEvent]
		}
		s.rec.JSON(w, http.StatusOK, s.issueJSON(is))
		return
	}
	s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "404 Not found"})
}
