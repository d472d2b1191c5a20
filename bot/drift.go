package bot

// EventDrift is a push to a repository's default branch: the drift report of the
// branch is run again (Event.PR names the repository only: Number is 0, BaseRef
// is the default branch, HeadSHA the pushed commit).
const EventDrift EventKind = "drift"

// DriftIssue is what the drift report wants a repository's one drift issue to
// say: Drift true keeps it open (created or reopened), false closes it. The
// adapters find the issue again by a hidden marker in its body, among the issues
// their own bot user created, open or closed.
type DriftIssue struct {
	Title string
	// Body is markdown; adapters add the hidden marker line and truncate to
	// their host's limit.
	Body  string
	Drift bool
}

// IssueRef names the drift issue a host holds after an upsert.
type IssueRef struct {
	Number int64  `json:"number"`
	URL    string `json:"url,omitempty"`
	Open   bool   `json:"open"`
	// Created is true when this upsert created it.
	Created bool `json:"created,omitempty"`
}
