package githubtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v4"

	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// Issue is an issue the fake holds.
type Issue struct {
	Repo        string
	Number      int
	Title       string
	Body        string
	State       string // "open" or "closed"
	StateReason string
	User        string
	UserType    string
}

// Issues returns the issues of repo, oldest first.
func (s *Server) Issues(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.issues {
		if is.Repo == repo {
			out = append(out, *is)
		}
	}
	return out
}

// AddIssue seeds an issue (e.g. a human's) and returns its number.
func (s *Server) AddIssue(repo, user, userType, title, body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addIssue(&Issue{Repo: repo, Title: title, Body: body, State: "open", User: user, UserType: userType})
}

func (s *Server) addIssue(is *Issue) int {
	n := 0
	for _, x := range s.issues {
		if x.Repo == is.Repo {
			n = max(n, x.Number)
		}
	}
	is.Number = n + 1
	s.issues = append(s.issues, is)
	return is.Number
}

// Slug is the App's slug GET /app answers: BotLogin without "[bot]".
func (s *Server) Slug() string { return strings.TrimSuffix(s.BotLogin, "[bot]") }

// serveApp answers GET /app for a request authenticated as the App (its JWT).
func (s *Server) serveApp(w http.ResponseWriter, r *http.Request) {
	if !s.appJWT(w, r) {
		return
	}
	s.rec.JSON(w, http.StatusOK, map[string]any{"id": s.AppID, "slug": s.Slug(), "name": s.Slug(),
		"owner": user{Login: "acme", Type: "Organization"}})
}

// appJWT checks that r carries a JWT signed with the App's key and issued by
// AppID, answering 401 otherwise.
func (s *Server) appJWT(w http.ResponseWriter, r *http.Request) bool {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		s.rec.Errorf("%s %s without a Bearer JWT", r.Method, r.URL.Path)
		s.rec.JSON(w, http.StatusUnauthorized, map[string]string{"message": "A JSON web token could not be decoded"})
		return false
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		if _, ok := tok.Method.(*jwt.SigningMethodRSA); !ok {
			return nil, fmt.Errorf("unexpected signing method %v", tok.Header["alg"])
		}
		return &s.Key.PublicKey, nil
	})
	if err != nil || claims.Issuer != strconv.FormatInt(s.AppID, 10) {
		s.rec.Errorf("%s %s with a bad JWT (issuer %q): %v", r.Method, r.URL.Path, claims.Issuer, err)
		s.rec.JSON(w, http.StatusUnauthorized, map[string]string{"message": "'Issuer' claim ('iss') must be an Integer"})
		return false
	}
	return true
}

type issueJSON struct {
	Number      int    `json:"number"`
	Title       string `json:"title"`
	Body        string `json:"body"`
	State       string `json:"state"`
	StateReason string `json:"state_reason,omitempty"`
	HTMLURL     string `json:"html_url"`
	User        user   `json:"user"`
}

func (s *Server) issueJSON(is *Issue) issueJSON {
	return issueJSON{Number: is.Number, Title: is.Title, Body: is.Body, State: is.State, StateReason: is.StateReason,
		HTMLURL: "https://github.com/" + is.Repo + "/issues/" + strconv.Itoa(is.Number), User: user{Login: is.User, Type: is.UserType}}
}

// listIssues is GET /repos/{owner}/{repo}/issues with GitHub's state (default
// open), creator, sort (created) and direction (default desc) parameters.
func (s *Server) listIssues(w http.ResponseWriter, r *http.Request, repo string) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	if !slices.Contains([]string{"open", "closed", "all"}, state) {
		s.rec.Bad(w, r, "state %q is not open, closed or all", state)
		return
	}
	if sort := q.Get("sort"); sort != "" && sort != "created" {
		s.rec.Bad(w, r, "the fake sorts only by created, not %q", sort)
		return
	}
	var all []issueJSON
	for _, is := range s.issues {
		if is.Repo != repo || (state != "all" && is.State != state) {
			continue
		}
		if c := q.Get("creator"); c != "" && c != is.User {
			continue
		}
		all = append(all, s.issueJSON(is))
	}
	if q.Get("direction") != "asc" {
		slices.Reverse(all)
	}
	out, page, _, more := hostfake.Page(q, 30, all)
	if more {
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, s.srv.URL, r.URL.Path, q.Encode()))
	}
	s.rec.JSON(w, http.StatusOK, out)
}

type issueBody struct {
	Title       *string `json:"title"`
	Body        *string `json:"body"`
	State       *string `json:"state"`
	StateReason *string `json:"state_reason"`
}

func (s *Server) validIssue(w http.ResponseWriter, r *http.Request, in *issueBody) bool {
	if in.Title != nil && (*in.Title == "" || utf8.RuneCountInString(*in.Title) > 256) {
		s.rec.Bad(w, r, "title must be 1 to 256 characters")
		return false
	}
	if in.Body != nil && utf8.RuneCountInString(*in.Body) > 65536 {
		s.rec.Bad(w, r, "body is too long (maximum is 65536 characters)")
		return false
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		s.rec.Bad(w, r, "state %q is not open or closed", *in.State)
		return false
	}
	if in.StateReason != nil && !slices.Contains([]string{"completed", "not_planned", "reopened"}, *in.StateReason) {
		s.rec.Bad(w, r, "state_reason %q is not completed, not_planned or reopened", *in.StateReason)
		return false
	}
	return true
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request, repo string, body []byte) {
	var in issueBody
	if !s.rec.Strict(w, r, body, &in) || !s.validIssue(w, r, &in) {
		return
	}
	if in.Title == nil || in.State != nil || in.StateReason != nil {
		s.rec.Bad(w, r, "a new issue needs a title and takes no state")
		return
	}
	is := &Issue{Repo: repo, Title: *in.Title, State: "open", User: s.BotLogin, UserType: "Bot"}
	if in.Body != nil {
		is.Body = *in.Body
	}
	s.addIssue(is)
	s.rec.JSON(w, http.StatusCreated, s.issueJSON(is))
}

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request, repo, num string, body []byte) {
	var in issueBody
	if !s.rec.Strict(w, r, body, &in) || !s.validIssue(w, r, &in) {
		return
	}
	n, _ := strconv.Atoi(num)
	for _, is := range s.issues {
		if is.Repo != repo || is.Number != n {
			continue
		}
		if is.User != s.BotLogin {
			s.rec.Errorf("%s %s edits %s's issue", r.Method, r.URL.Path, is.User)
		}
		if in.Title != nil {
			is.Title = *in.Title
		}
		if in.Body != nil {
			is.Body = *in.Body
		}
		if in.State != nil {
			is.State, is.StateReason = *in.State, ""
			if in.StateReason != nil {
				is.StateReason = *in.StateReason
			}
		}
		s.rec.JSON(w, http.StatusOK, s.issueJSON(is))
		return
	}
	s.rec.JSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}
