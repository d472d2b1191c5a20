package report

import (
	"strings"

	"github.com/driftpreview/driftpreview/diffing"
)

// maxImageLines is how many lines the images summary has at most; "and N
// more" counts the rest.
const maxImageLines = 20

// maxImagePlaces is how many objects one line of the images summary names.
const maxImagePlaces = 3

// imageLine is one image change of one target, and every object and
// container it is made in.
type imageLine struct {
	target         int
	before, after  string
	places         []string // Kind ns/name, container name
	mdPlaces       []string // the same, escaped for Markdown
	morePlaceCount int
}

// imageLines groups the targets' image changes by target and image change, in
// target and object order.
func (l *layout) imageLines() []*imageLine {
	var out []*imageLine
	for i := range l.r.Targets {
		byChange := map[[2]string]*imageLine{}
		for _, ic := range l.r.Targets[i].Images {
			k := [2]string{ic.Before, ic.After}
			ln := byChange[k]
			if ln == nil {
				ln = &imageLine{target: i, before: ic.Before, after: ic.After}
				byChange[k] = ln
				out = append(out, ln)
			}
			if len(ln.places) == maxImagePlaces {
				ln.morePlaceCount++
				continue
			}
			what := containerWord(ic.List)
			ln.places = append(ln.places, ic.Object.Kind+" "+objectName(ic.Object)+", "+what+" "+ic.Container)
			ln.mdPlaces = append(ln.mdPlaces, text(ic.Object.Kind)+" "+codeSpan(objectName(ic.Object))+", "+what+" "+codeSpan(ic.Container))
		}
	}
	return out
}

func containerWord(list string) string {
	switch list {
	case "initContainers":
		return "init container"
	case "ephemeralContainers":
		return "ephemeral container"
	}
	return "container"
}

// imageChangeText is an image change: "repo 1.4.0 → 1.5.0" when only the tag
// or digest changes, "+ ref" and "− ref" for an added and a removed image;
// code writes each name (codeSpan in Markdown).
func imageChangeText(before, after string, code func(string) string) string {
	switch {
	case before == "":
		return "+ " + code(after)
	case after == "":
		return "− " + code(before)
	}
	br, bv := diffing.SplitImage(before)
	ar, av := diffing.SplitImage(after)
	if br == ar && bv != "" && av != "" {
		return code(br) + " " + code(strings.TrimLeft(bv, ":@")) + " → " + code(strings.TrimLeft(av, ":@"))
	}
	return code(before) + " → " + code(after)
}

// imagesSummary is the images summary's lines, capped at maxImageLines, and
// how many lines it left out; md writes them as Markdown.
func (l *layout) imagesSummary(md bool) ([]string, int) {
	lines := l.imageLines()
	more := 0
	if len(lines) > maxImageLines {
		more = len(lines) - maxImageLines
		lines = lines[:maxImageLines]
	}
	out := make([]string, 0, len(lines))
	for _, ln := range lines {
		name, places, code := l.targetName(ln.target), ln.places, func(s string) string { return s }
		if md {
			name, places, code = codeSpan(name), ln.mdPlaces, codeSpan
		}
		where := strings.Join(places, "; ")
		if ln.morePlaceCount > 0 {
			where += "; and " + plural(ln.morePlaceCount, "more object", "more objects")
		}
		out = append(out, name+": "+imageChangeText(ln.before, ln.after, code)+" ("+where+")")
	}
	return out, more
}

// imagesMD is the comment's images summary (issue 23), after the headline:
// the container images the PR adds, removes or changes, per target; "" when
// it changes none. Made once: fit measures the comment many times.
func (l *layout) imagesMD() string {
	if l.images != nil {
		return *l.images
	}
	s := ""
	if lines, more := l.imagesSummary(true); len(lines) > 0 {
		var b strings.Builder
		b.WriteString("\n**Images**\n\n")
		for _, ln := range lines {
			b.WriteString("- " + ln + "\n")
		}
		if more > 0 {
			b.WriteString("- and " + plural(more, "more image change", "more image changes") + "\n")
		}
		s = b.String()
	}
	l.images = &s
	return s
}
