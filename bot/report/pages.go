package report

import (
	"strconv"
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// Pages renders r as one or more comments of at most opts.MaxChars bytes each. It
// returns Markdown's single comment when the findings fit in one; otherwise the
// first page holds the marker, the headline and the findings table, which runs on
// over the following pages, then the targets and the footer. Every follow-up page
// starts with its own marker ("<!-- driftpreview:sticky v1 page N -->") and
// "(continued N/M)", so an adapter can update each page in place.
func Pages(r *diffing.Report, opts Options) []string {
	l := newLayout(r, opts)
	if l.fit() {
		return []string{hardLimit(l.join(l.opts.Marker+"\n", l.blocks()), l.opts.MaxChars)}
	}
	// All diffs are cut by now (fit went through every step); the targets get
	// their summaries back, since they may take pages of their own.
	for _, s := range l.sections {
		s.collapsed = false
	}
	return l.paginate()
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

// paginate packs the blocks into pages of at most MaxChars bytes, repeating the
// table header where the table runs onto a new page.
func (l *layout) paginate() []string {
	limit := l.opts.MaxChars
	bs := l.blocks()
	// Reserve room for the widest prefix: there are never more pages than blocks.
	most := len(bs) + 1
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

	out := make([]string, len(pages))
	for i, p := range pages {
		text := l.join(l.pagePrefix(i+1, len(pages)), p)
		if i < len(pages)-1 {
			text += pageTail
		}
		out[i] = hardLimit(text, limit)
	}
	return out
}
