package bot

import (
	"net/http"
	"strings"
	"time"
)

// PR identifies one pull request (GitHub) or merge request (GitLab) in host-neutral
// terms; only the adapters know how each host spells these.
type PR struct {
	Host   string `json:"host"`   // "github" or "gitlab"
	Repo   string `json:"repo"`   // owner/name, or group/subgroup/project
	Number int    `json:"number"` // PR number or MR iid
	// ProjectID is GitLab's numeric project ID; InstallationID GitHub's App installation.
	ProjectID      int64  `json:"projectID,omitempty"`
	InstallationID int64  `json:"installationID,omitempty"`
	BaseRef        string `json:"baseRef,omitempty"`
	BaseSHA        string `json:"baseSHA"`
	HeadRef        string `json:"headRef,omitempty"`
	HeadSHA        string `json:"headSHA"`
	// Fork is true when head lives in another repository.
	Fork bool `json:"fork,omitempty"`
	// HeadRepo is the fork's owner/name (or project path) when Fork is true.
	HeadRepo string `json:"headRepo,omitempty"`
	URL      string `json:"url,omitempty"` // web URL of the PR, for logs and details links
}

// EventKind is what a webhook delivery asks the bot to do.
type EventKind string

// The events that matter; everything else is EventIgnore and answered 2xx.
const (
	EventRun    EventKind = "run"    // opened, synchronize, reopened, ready, base changed
	EventRerun  EventKind = "rerun"  // "/driftpreview rerun" by a user with write access
	EventClose  EventKind = "close"  // closed or merged: cancel pending jobs
	EventIgnore EventKind = "ignore" // anything else
)

// Event is a parsed, verified webhook delivery.
type Event struct {
	Kind       EventKind
	DeliveryID string
	PR         PR
	Actor      string
	// Reason explains an EventIgnore, for logs and the delivery metric.
	Reason string
}

// State is a check run (GitHub) or commit status (GitLab) state.
type State string

// The states a status moves through. Pending/InProgress at start, then one of the
// final states; nothing stays pending forever.
const (
	StateInProgress State = "in_progress"
	StateSuccess    State = "success"
	StateNeutral    State = "neutral"
	// StateSuperseded ends the check of a head the pull request moved on from
	// (its job left the comment to the newer head's): GitHub's neutral
	// conclusion, GitLab's canceled status.
	StateSuperseded State = "superseded"
	StateFailure    State = "failure"
	// StateError is an internal error: GitHub shows it as a failed check with the
	// reason, GitLab as a failed status.
	StateError State = "error"
)

// Status is what the bot reports on the head commit.
type Status struct {
	State      State
	Title      string // one line, e.g. "2 errors: data-loss, immutable-field"
	Summary    string // markdown; adapters truncate to their host's limit
	Text       string // markdown detail; adapters truncate to their host's limit
	DetailsURL string
	StartedAt  time.Time
}

// FetchSpec is how git fetches a PR's commits from its host; each adapter fills it
// with what only it knows (clone URL, credentials, ref names, web URL shapes).
type FetchSpec struct {
	// URL is the repository's clone URL.
	URL string
	// Header is what git must send (via GIT_CONFIG_* http.extraHeader, never written
	// to disk); nil for a file:// URL. It holds a live credential: never log it.
	Header http.Header
	// Refs carry the PR's commits when a server refuses to send commits by SHA: the
	// host's ref of the PR's head (refs/pull/N/head, refs/merge-requests/N/head),
	// then the base branch when known.
	Refs []string
	// WebURL is the repository's web URL taken from the PR's URL, so controller
	// objects that name the repository by it are recognised; empty when unknown.
	WebURL string
}

// NewFetchSpec is the FetchSpec an adapter returns: git fetches cloneURL sending
// header; the PR's commits come with headRef (the host's ref of the PR's head) and
// pr's base branch; webURL names the repository on the web.
func NewFetchSpec(cloneURL string, header http.Header, headRef string, pr PR, webURL string) FetchSpec {
	refs := []string{headRef}
	if r := pr.BaseBranchRef(); r != "" {
		refs = append(refs, r)
	}
	return FetchSpec{URL: cloneURL, Header: header, Refs: refs, WebURL: webURL}
}

// URLBefore is the part of a PR's web URL before its last sep ("/pull/",
// "/-/merge_requests/"): the repository's web URL. It is "" without sep.
func URLBefore(prURL, sep string) string {
	if i := strings.LastIndex(prURL, sep); i > 0 {
		return prURL[:i]
	}
	return ""
}

// BaseBranchRef is the ref of pr's base branch, or "" when the host did not say.
func (pr PR) BaseBranchRef() string {
	if pr.BaseRef == "" {
		return ""
	}
	return "refs/heads/" + pr.BaseRef
}
