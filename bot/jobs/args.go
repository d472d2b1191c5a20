package jobs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/driftpreview/driftpreview/bot"
)

// Kind is the River job kind of a preview. Stored jobs refer to it: never rename it.
const Kind = "driftpreview_preview"

// Args is one queued preview. UniqueKey makes River refuse a second job for the same
// PR, base and head (or, for a re-run, the same delivery), the second dedupe layer
// after the delivery ID table.
type Args struct {
	PR         bot.PR `json:"pr"`
	DeliveryID string `json:"deliveryID"`
	// Rerun is a "/driftpreview rerun" request: PR holds no SHAs yet, and Actor's
	// permission is checked before anything runs.
	Rerun bool   `json:"rerun,omitempty"`
	Actor string `json:"actor,omitempty"`
	// Recheck is a re-preview of PR's head (SHAs set) because live objects its
	// previous preview compared changed (bot/watch).
	Recheck bool `json:"recheck,omitempty"`
	// UniqueKey is host, repo, number, base and head SHA, plus the delivery ID for a
	// re-run (which must run again against the current live state).
	UniqueKey string `json:"uniqueKey" river:"unique"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return Kind }

// InsertOpts makes every preview unique by UniqueKey and tags it with its PR.
func (a Args) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Tags: []string{PRTag(a.PR)}, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// NewArgs builds the job of a run or rerun event.
func NewArgs(ev bot.Event) Args {
	a := Args{PR: ev.PR, DeliveryID: ev.DeliveryID, Rerun: ev.Kind == bot.EventRerun, Actor: ev.Actor}
	a.UniqueKey = fmt.Sprintf("%s@%s..%s", PRKey(ev.PR), ev.PR.BaseSHA, ev.PR.HeadSHA)
	if a.Rerun {
		a.UniqueKey = fmt.Sprintf("%s rerun %s", PRKey(ev.PR), ev.DeliveryID)
	}
	return a
}

// NewRecheckArgs builds the re-preview of pr's head that a change of its live
// objects asks for; at makes it unique (each change gets its run).
func NewRecheckArgs(pr bot.PR, at time.Time) Args {
	return Args{PR: pr, Recheck: true, DeliveryID: "recheck",
		UniqueKey: fmt.Sprintf("%s@%s..%s recheck %d", PRKey(pr), pr.BaseSHA, pr.HeadSHA, at.UnixNano())}
}

// PRKey names a pull request host-neutrally ("github/acme/shop#12"); the queue's
// head table is keyed by it.
func PRKey(pr bot.PR) string { return fmt.Sprintf("%s/%s#%d", pr.Host, pr.Repo, pr.Number) }

// PRTag is the River tag of every job of a pull request, so a push or a close can
// find and cancel them. Tags allow only word characters and dashes, hence the hash.
func PRTag(pr bot.PR) string {
	sum := sha256.Sum256([]byte(PRKey(pr)))
	return "pr-" + hex.EncodeToString(sum[:12])
}
