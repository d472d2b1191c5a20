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
	all := make([]int, 45)
	for i := range all {
		all[i] = i
	}
	type page struct {
		First, Len, Page, Per int
		More                  bool
	}
	tests := []struct {
		query string
		want  page
	}{
		{"", page{0, 30, 1, 30, true}},
		{"per_page=100", page{0, 45, 1, 100, false}},
		{"page=2&per_page=20", page{20, 20, 2, 20, true}},
		{"page=9", page{-1, 0, 9, 30, false}},
	}
	for _, tt := range tests {
		q, _ := url.ParseQuery(tt.query)
		items, n, per, more := hostfake.Page(q, 30, all)
		if items == nil {
			t.Errorf("Page(%q) items = nil, want a slice that encodes as []", tt.query)
		}
		got := page{First: -1, Len: len(items), Page: n, Per: per, More: more}
		if len(items) > 0 {
			got.First = items[0]
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Page(%q) (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		body     string
		want     string
		ok       bool
		reported int
	}{
		{`{"body":"hello"}`, "hello", true, 0},
		{`{"body":""}`, "", false, 1},
		{`{}`, "", false, 1},
		{`{"body":"x","title":"y"}`, "", false, 1},
	}
	for _, tt := range tests {
		rep := &errs{TB: t}
		f := hostfake.New(rep, hostfake.Options{Name: "fake", ContentType: "application/json", BadStatus: 400})
		w := httptest.NewRecorder()
		got, ok := f.Text(w, httptest.NewRequest(http.MethodPost, "/n", nil), []byte(tt.body))
		if got != tt.want || ok != tt.ok || len(rep.got) != tt.reported {
			t.Errorf("Text(%s) = %q, %v with %d reports; want %q, %v with %d", tt.body, got, ok, len(rep.got), tt.want, tt.ok, tt.reported)
		}
		if !tt.ok && w.Code != 400 {
			t.Errorf("Text(%s) answered %d, want 400", tt.body, w.Code)
		}
	}
}
