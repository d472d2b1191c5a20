package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/driftpreview/driftpreview/diffing"
	"github.com/driftpreview/driftpreview/diffing/mdtext"
)

// LiveSince is what changed in the cluster since the pull request's previous
// preview (diffing.LiveChanges of the two previews' live sides): the bot's watch
// re-previews a pull request when its live objects change, and the comment says
// why it changed.
type LiveSince struct {
	// At is when the previous preview ran.
	At      time.Time
	Changes []diffing.LiveChange
}

// maxLiveSince is how many changes the comment names; the rest are counted.
const maxLiveSince = 10

// liveSinceMD is the "since the preview at …" line, or "" when nothing changed.
// Every name in it comes from the cluster and goes through mdtext.
func liveSinceMD(ls *LiveSince) string {
	if ls == nil || len(ls.Changes) == 0 {
		return ""
	}
	lines := make([]string, 0, min(len(ls.Changes), maxLiveSince))
	for i, c := range ls.Changes {
		if i == maxLiveSince {
			break
		}
		lines = append(lines, LiveChangeText(c))
	}
	head := "🔄 Since the preview at " + ls.At.UTC().Format("15:04 UTC") + ", "
	if len(lines) == 1 {
		return "\n" + head + lines[0] + ".\n"
	}
	var b strings.Builder
	b.WriteString("\n" + head + "the cluster changed:\n")
	for _, l := range lines {
		b.WriteString("- " + l + "\n")
	}
	if n := len(ls.Changes) - len(lines); n > 0 {
		fmt.Fprintf(&b, "- and %s\n", plural(n, "more change", "more changes"))
	}
	return b.String()
}

// LiveChangeText says one change: "`kubectl-edit` changed `/data/LOG_LEVEL` of
// ConfigMap `shop/settings`".
func LiveChangeText(c diffing.LiveChange) string {
	who := "someone"
	if c.Manager != "" {
		who = mdtext.Code(c.Manager)
	}
	obj := mdtext.Text(c.Key.Kind) + " " + mdtext.Code(objectName(c.Key))
	if c.Cluster != "" {
		obj += " in cluster " + mdtext.Code(c.Cluster)
	}
	switch c.What {
	case "created":
		return who + " created " + obj
	case "deleted":
		return obj + " was deleted"
	case "removed":
		return mdtext.Code(c.Path) + " was removed from " + obj
	}
	return who + " " + c.What + " " + mdtext.Code(c.Path) + " of " + obj
}
