package report

import (
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// Pages renders r as one or more comments of at most opts.MaxChars bytes each. It
// returns Markdown's single comment when everything fits in one. When the
// comment is cut, the first page is Markdown's (the PR's changes first, cut as
// little as it can) and the pre-existing findings it leaves out continue on the
// following pages. When the findings the PR introduces alone do not fit, the
// first page holds the marker, the headline and those findings, whose table runs
// on over the following pages, then the targets and the footer. Every follow-up
// page starts with its own marker ("<!-- driftpreview:sticky v1 page N -->") and
// "(continued N/M)", so an adapter can update each page in place.
func Pages(r *diffing.Report, opts Options) []string {
	l := newLayout(r, opts)
	if l.fit() {
		if l.hiddenPre == 0 {
			return []string{hardLimit(l.join(l.opts.Marker+"\n", l.blocks()), l.opts.MaxChars)}
		}
		// The pre-existing findings left out go on the next pages.
		l.continued, l.reserve = true, len(pageTail)
		if l.fit() {
			first := l.join(l.opts.Marker+"\n", l.blocks())
			rest := []block{{text: "\n**Pre-existing findings, continued** (the base has them too: they never fail the check):\n"}}
			for i := len(l.rows) - l.hiddenPre; i < len(l.rows); i++ {
				rest = append(rest, block{text: l.rowTexts[i], row: true, idx: i})
			}
			return l.paginate(first, rest)
		}
		l.continued, l.reserve = false, 0
		l.fit()
	}
	// All diffs are cut by now (fit went through every step); the targets get
	// their summaries back, since they may take pages of their own, and every
	// finding is shown, the pre-existing ones under a heading.
	for _, s := range l.sections {
		s.collapsed = false
	}
	l.hiddenPre, l.paged = 0, true
	return l.paginate("", l.blocks())
}

// pageMarker is the sticky marker of follow-up page n.
func pageMarker(marker string, n int) string {
	if base, ok := strings.CutSuffix(marker, "-->"); ok {
		return strings.TrimRight(base, " ") + " page " + strconv.Itoa(n) + " -->"
	}
	return marker + " page " + strconv.Itoa(n)
}

const pageTail = "\n_Continued in the next comment._\n"

func (l *layout) pagePrefix(n, total int) string {
	if n == 1 {
		return l.opts.Marker + "\n"
	}
	return pageMarker(l.opts.Marker, n) + "\n_(continued " + strconv.Itoa(n) + "/" + strconv.Itoa(total) + ")_\n"
}

// paginate packs bs into pages of at most MaxChars bytes, repeating the table
// header where the table runs onto a new page. first, when not empty, is a first
// page made already (marker included, room left for pageTail), and bs start on
// the second.
func (l *layout) paginate(first string, bs []block) []string {
	limit := l.opts.MaxChars
	// Reserve room for the widest prefix: there are never more pages than blocks.
	most := len(bs) + 2
	room := limit - max(len(l.pagePrefix(1, most)), len(l.pagePrefix(most, most))) - len(pageTail)
	hdr := len(l.tableHeader())
	for i := range bs {
		bs[i] = l.shrink(bs[i], room-hdr)
	}

	var pages [][]block
	var cur []block
	used := 0
	for _, bl := range bs {
		need := bl.size()
		if bl.row && (len(cur) == 0 || !cur[len(cur)-1].row) {
			need += hdr
		}
		if len(cur) > 0 && used+need > room {
			pages = append(pages, cur)
			cur, used = nil, 0
			need = bl.size()
			if bl.row {
				need += hdr
			}
		}
		cur = append(cur, bl)
		used += need
	}
	if len(cur) > 0 {
		pages = append(pages, cur)
	}

	var out []string
	if first != "" {
		out = append(out, first)
	}
	total := len(out) + len(pages)
	for _, p := range pages {
		out = append(out, l.join(l.pagePrefix(len(out)+1, total), p))
	}
	for i := range out {
		if i < len(out)-1 {
			out[i] += pageTail
		}
		out[i] = hardLimit(out[i], limit)
	}
	return out
}
