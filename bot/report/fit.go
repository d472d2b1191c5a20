package report

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

func (b block) size() int {
	if b.sec != nil {
		return b.sec.size()
	}
	return len(b.text)
}

// size is len(l.join(marker, l.blocks())) without building the text.
func (l *layout) size() int {
	n := len(l.opts.Marker) + 1
	prevRow := false
	for _, bl := range l.blocks() {
		if bl.row && !prevRow {
			n += len(l.tableHeader())
		}
		n += bl.size()
		prevRow = bl.row
	}
	return n
}

// reset undoes every cut, so fit can start again (Pages fits twice).
func (l *layout) reset() {
	l.hiddenRows, l.hiddenPre, l.shortLines = 0, 0, false
	for _, s := range l.sections {
		s.collapsed, s.noNotes = false, false
	}
	for _, u := range l.units {
		u.state = stateFull
	}
}

// fit cuts the comment until it fits MaxChars, pre-existing material and notes
// before any change of the PR (issue 23). It cuts first the targets the PR
// changes only live (their diffs, then their names, then their sections), then
// the pre-existing findings, least severe first, the targets' notes and the
// names in the not-compared lines; only then the diffs of the PR, least risky
// and largest first, replaced by the object's name, then names by a count, then
// whole targets collapsed to their summary line. It reports whether that was
// enough; it never touches the findings the PR introduces.
func (l *layout) fit() bool {
	l.reset()
	limit := l.opts.MaxChars - l.reserve
	if l.size() <= limit {
		return true
	}
	var diffs, preDiffs, units, preUnits []*unit
	for _, u := range l.units {
		if u.pre {
			preUnits = append(preUnits, u)
		} else {
			units = append(units, u)
		}
		switch {
		case u.full == "":
		case u.pre:
			preDiffs = append(preDiffs, u)
		default:
			diffs = append(diffs, u)
		}
	}
	var noted, secs, preSecs []*section
	for _, s := range l.shown {
		if s.notes != "" {
			noted = append(noted, s)
		}
		if s.liveOnly {
			preSecs = append(preSecs, s)
		} else {
			secs = append(secs, s)
		}
	}
	for _, ss := range [][]*section{secs, preSecs} {
		slices.SortStableFunc(ss, func(a, b *section) int {
			return cmp.Or(cmp.Compare(a.worst, b.worst), boolCmp(a.failing, b.failing), -cmp.Compare(a.size(), b.size()))
		})
	}
	listed := func(us []*unit) func(int, bool) {
		return func(i int, on bool) {
			us[i].state = stateFull
			if on {
				us[i].state = stateListed
			}
		}
	}
	counted := func(us []*unit) func(int, bool) {
		return func(i int, on bool) {
			us[i].state = stateListed
			if on {
				us[i].state = stateCounted
			}
		}
	}
	collapse := func(ss []*section) func(int, bool) {
		return func(i int, on bool) { ss[i].collapsed = on }
	}
	steps := []struct {
		n     int
		apply func(i int, on bool)
	}{
		{len(preDiffs), listed(preDiffs)},
		{len(preUnits), counted(preUnits)},
		{len(preSecs), collapse(preSecs)},
		{len(l.rows) - l.nIntro, func(i int, on bool) {
			// Set in order, so the last call leaves the count of those on.
			if on {
				l.hiddenPre = i + 1
			} else if i == 0 {
				l.hiddenPre = 0
			}
		}},
		{len(noted), func(i int, on bool) { noted[i].noNotes = on }},
		{1, func(_ int, on bool) { l.shortLines = on }},
		{len(diffs), listed(diffs)},
		{len(units), counted(units)},
		{len(secs), collapse(secs)},
	}
	for _, st := range steps {
		set := func(k int) {
			for i := 0; i < st.n; i++ {
				st.apply(i, i < k)
			}
		}
		// Each cut shrinks the comment, so the fewest cuts that fit are found by
		// bisection rather than by measuring after every single cut.
		k := sort.Search(st.n+1, func(k int) bool {
			set(k)
			return l.size() <= limit
		})
		for k < st.n {
			set(k)
			if l.size() <= limit {
				return true
			}
			k++ // not monotonic after all: keep cutting one by one
		}
		set(st.n)
		if l.size() <= limit {
			return true
		}
	}
	return false
}

// cutNote says what fit() cut and where the rest is, so nobody mistakes a short
// comment for the whole.
func (l *layout) cutNote() string {
	type obj struct {
		sec *section
		key string
	}
	cut := map[obj]bool{}
	collapsed, notes := 0, 0
	for _, s := range l.shown {
		if s.collapsed {
			collapsed++
		} else if s.noNotes {
			notes++
		}
	}
	for _, u := range l.units {
		if s := l.sections[u.sec]; u.full != "" && (u.state != stateFull || s.collapsed) {
			cut[obj{s, u.key.String()}] = true
		}
	}
	var what []string
	if len(cut) > 0 {
		what = append(what, "the diffs of "+plural(len(cut), "object", "objects"))
	}
	if collapsed > 0 {
		what = append(what, "the details of "+plural(collapsed, "target", "targets"))
	}
	if l.hiddenPre > 0 {
		what = append(what, plural(l.hiddenPre, "pre-existing finding", "pre-existing findings"))
	}
	if notes > 0 {
		what = append(what, "the notes of "+plural(notes, "target", "targets"))
	}
	if len(what) == 0 {
		return ""
	}
	list := strings.Join(what, ", ")
	if len(what) > 1 {
		list = strings.Join(what[:len(what)-1], ", ") + " and " + what[len(what)-1]
	}
	where := l.restAt()
	if l.continued && len(cut) == 0 && collapsed == 0 && notes == 0 {
		where = "they continue in the next comment"
	} else if l.continued {
		where = "the pre-existing findings continue in the next comment; " + where
	}
	return "\n_To fit the " + thousands(l.opts.MaxChars) + "-character limit this comment leaves out " + list + "; " + where + "._\n"
}

// shrink makes one block fit in room bytes: a target loses its details, a row its
// message's tail, anything else its tail.
func (l *layout) shrink(b block, room int) block {
	if b.size() <= room {
		return b
	}
	if b.sec != nil {
		b.sec.collapsed = true
		if b.size() <= room {
			return b
		}
		return block{text: hardLimit(b.sec.text(), room)}
	}
	if b.row {
		return block{text: l.rowWithin(l.rows[b.idx], room), row: true, idx: b.idx}
	}
	return block{text: hardLimit(b.text, room)}
}

// rowWithin shortens a row's message until the row fits in room bytes.
func (l *layout) rowWithin(rw row, room int) string {
	msg := rw.f.Message
	for len(msg) > 0 {
		rw.f.Message = truncateBytes(msg, len(msg)-max(1, len(l.rowText(rw))-room)) + " … (cut)"
		if t := l.rowText(rw); len(t) <= room {
			return t
		}
		msg = truncateBytes(msg, len(msg)*3/4)
	}
	return hardLimit(l.rowText(rw), room)
}

const cutMark = "\n\n… (cut to fit the limit)\n"

// hardLimit is the very last resort: it cuts text at a rune boundary so that no
// host refuses the comment, and says so.
func hardLimit(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	if limit <= len(cutMark) {
		return truncateBytes(s, limit)
	}
	return truncateBytes(s, limit-len(cutMark)) + cutMark
}
