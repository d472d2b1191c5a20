package report

import (
	"cmp"
	"slices"
	"sort"
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

// fit cuts diffs until the comment fits MaxChars: first it replaces diffs by the
// object's name, least risky and largest first, then names by a count, then
// collapses whole targets to their summary line. It reports whether that was
// enough; it never touches the findings.
func (l *layout) fit() bool {
	limit := l.opts.MaxChars
	if l.size() <= limit {
		return true
	}
	var diffs []*unit
	for _, u := range l.units {
		if u.full != "" {
			diffs = append(diffs, u)
		}
	}
	secs := slices.Clone(l.sections)
	slices.SortStableFunc(secs, func(a, b *section) int {
		return cmp.Or(cmp.Compare(a.worst, b.worst), boolCmp(a.failing, b.failing), -cmp.Compare(a.size(), b.size()))
	})
	steps := []struct {
		n     int
		apply func(i int, on bool)
	}{
		{len(diffs), func(i int, on bool) {
			diffs[i].state = stateFull
			if on {
				diffs[i].state = stateListed
			}
		}},
		{len(l.units), func(i int, on bool) {
			l.units[i].state = stateListed
			if on {
				l.units[i].state = stateCounted
			}
		}},
		{len(secs), func(i int, on bool) { secs[i].collapsed = on }},
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

// cutNote says what fit() cut, so nobody mistakes a short comment for the whole.
func (l *layout) cutNote() string {
	type obj struct {
		sec int
		key string
	}
	cut := map[obj]bool{}
	collapsed := 0
	for _, s := range l.sections {
		if s.collapsed {
			collapsed++
		}
	}
	for _, u := range l.units {
		if u.full != "" && (u.state != stateFull || l.sections[u.sec].collapsed) {
			cut[obj{u.sec, u.key.String()}] = true
		}
	}
	if len(cut) == 0 && collapsed == 0 {
		return ""
	}
	var what string
	switch {
	case len(cut) > 0 && collapsed > 0:
		what = "Diffs of " + plural(len(cut), "object", "objects") + " and the details of " + plural(collapsed, "target", "targets") + " were"
	case len(cut) > 0:
		what = "Diffs of " + plural(len(cut), "object", "objects") + " were"
	default:
		what = "The details of " + plural(collapsed, "target", "targets") + " were"
	}
	return "\n" + what + " cut to fit the " + thousands(l.opts.MaxChars) +
		"-character limit; run `driftpreview preview` locally for the full diff.\n"
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
