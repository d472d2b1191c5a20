package diffing

import "github.com/driftpreview/driftpreview/render"

// findingID is what makes two findings "the same" across base and head: the rule,
// the object and the path in it. Messages differ (they quote head's values).
type findingID struct {
	rule Rule
	key  render.ObjectKey
	path string
}

// MarkPreExisting marks each finding in fs that already holds at the PR's base.
// atBase are the findings of the same target with its base diffed as if it were
// the head (what the base commit alone reports against the same live state). A
// finding is pre-existing when atBase has one with the same rule, object and path
// and a severity at least as high: one that got worse is the PR's doing. Finish
// never fails a pre-existing finding.
func MarkPreExisting(fs []Finding, atBase []Finding) {
	worstAtBase := map[findingID]Severity{}
	for _, f := range atBase {
		id := findingID{f.Rule, f.Key, f.Path}
		worstAtBase[id] = max(worstAtBase[id], f.Severity)
	}
	for i := range fs {
		f := &fs[i]
		if s, ok := worstAtBase[findingID{f.Rule, f.Key, f.Path}]; ok && s >= f.Severity {
			f.PreExisting = true
		}
	}
}

// MarkAllPreExisting marks every finding in fs as pre-existing: for a target whose
// base and head render to the same objects, diffing the base as head gives the very
// same findings, so none of them is the PR's.
func MarkAllPreExisting(fs []Finding) {
	for i := range fs {
		fs[i].PreExisting = true
	}
}
