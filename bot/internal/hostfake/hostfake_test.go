package hostfake_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/driftpreview/driftpreview/bot/internal/hostfake"
)

// errs collects what a fake reports instead of failing the test.
type errs struct {
	testing.TB
	got []string
}

func (e *errs) Errorf(format string, args ...any) {
	e.got = append(e.got, fmt.Sprintf(format, args...))
}

func TestRecordAndFailNext(t *testing.T) {
	rep := &errs{TB: t}
	f := hostfake.New(rep, hostfake.Options{Name: "fake", ContentType: "application/json", BadStatus: 422, NotFound: "Not Found"})
	f.FailNext(http.MethodPost, "/a", 1, http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}})
	type answer struct {
		Served bool
		Status int
		Retry  string
		Body   string
	}
	var got []answer
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPost} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(m, "/a?x=1", nil)
		served := f.Record(w, r, []byte("{}"))
		got = append(got, answer{served, w.Code, w.Header().Get("Retry-After"), strings.TrimSpace(w.Body.String())})
	}
	want := []answer{
		{Served: true, Status: 200},
		{Served: false, Status: 429, Retry: "1", Body: `{"message":"injected failure"}`},
		{Served: true, Status: 200},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	wantCalls := []hostfake.Call{
		{Method: "GET", Path: "/a", Query: "x=1", Body: "{}"},
		{Method: "POST", Path: "/a", Query: "x=1", Body: "{}"},
		{Method: "POST", Path: "/a", Query: "x=1", Body: "{}"},
	}
	if diff := cmp.Diff(wantCalls, f.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f.ResetCalls()
	if n := len(f.Calls()); n != 0 {
		t.Errorf("calls after ResetCalls = %d, want 0", n)
	}

	w := httptest.NewRecorder()
	var v struct{ Body string }
	if f.Strict(w, httptest.NewRequest(http.MethodPost, "/b", nil), []byte(`{"Body":"x","extra":1}`), &v) {
		t.Error("Strict accepted an unknown field")
	}
	if w.Code != 422 {
		t.Errorf("Strict answered %d, want the BadStatus 422", w.Code)
	}
	if len(rep.got) != 1 || !strings.HasPrefix(rep.got[0], "fake: POST /b: body ") {
		t.Errorf("reported %q, want one error naming the fake and the request", rep.got)
	}
}

func TestMatchAndPage(t *testing.T) {
	if !hostfake.Match([]string{"issues", "7", "comments"}, "issues", "*", "comments") ||
		hostfake.Match([]string{"issues", "7"}, "issues", "*", "comments") ||
		hostfake.Match([]string{"pulls", "7", "comments"}, "issues", "*", "comments") {
		t.Error("Match disagrees with its pattern")
	}
	tests := []struct {
		query             string
		page, per, lo, hi int
	}{
		{"", 1, 30, 0, 30},
		{"per_page=100", 1, 100, 0, 45},
		{"page=2&per_page=20", 2, 20, 20, 40},
		{"page=9", 9, 30, 45, 45},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		page, per, lo, hi := hostfake.Page(q, 30, 45)
		if diff := cmp.Diff([]int{tt.page, tt.per, tt.lo, tt.hi}, []int{page, per, lo, hi}); diff != "" {
			t.Errorf("Page(%q) page, per, lo, hi (-want +got):\n%s", tt.query, diff)
		}
	}
}
