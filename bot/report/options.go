package report

// DefaultMarker is the hidden first line that lets an adapter find and update the
// sticky comment instead of posting a new one on every push.
const DefaultMarker = "<!-- driftpreview:sticky v1 -->"

// Options are the few numbers and strings the comment needs from its caller. They
// never name a host: an adapter passes its host's limit as MaxChars.
type Options struct {
	// MaxChars is the size budget of one comment, counted in bytes of UTF-8, which
	// is never less than the characters GitHub or GitLab count. GitHub allows
	// 65536 (the default), GitLab 1000000.
	MaxChars int
	// Marker is the hidden sticky marker that starts the comment. Follow-up pages
	// from Pages carry the same marker with " page N" before its closing "-->".
	Marker string
	// RerunHint tells the reader how to refresh the preview, e.g. "Comment
	// `/driftpreview rerun` to refresh against the live cluster." Empty (the CLI)
	// suggests re-running `driftpreview preview`.
	RerunHint string
	// ShortSHA is how many characters of a commit SHA the footer shows.
	ShortSHA int
	// IgnoreRules is how many ignore rules the repo config holds, for the footer's
	// "N ignore rules hid …"; zero still reports what ignore rules hid.
	IgnoreRules int
	// ReportURL, when set, links the full report page (HTML) under the headline:
	// the page itself (the bot's signed URL, a CI artifact's URL), or with
	// ReportArtifact the CI run whose artifacts hold it. Only http and https URLs
	// are linked.
	ReportURL      string
	ReportArtifact bool
	// LiveSince, when set, says under the headline what changed in the cluster
	// since the pull request's previous preview.
	LiveSince *LiveSince
}

// DefaultOptions fits one GitHub comment and suits the CLI.
func DefaultOptions() Options {
	return Options{MaxChars: 65536, Marker: DefaultMarker, ShortSHA: 7}
}

// normalized fills zero fields with their defaults so that a zero Options works.
func (o Options) normalized() Options {
	d := DefaultOptions()
	if o.MaxChars <= 0 {
		o.MaxChars = d.MaxChars
	}
	if o.Marker == "" {
		o.Marker = d.Marker
	}
	if o.ShortSHA <= 0 {
		o.ShortSHA = d.ShortSHA
	}
	return o
}
