package diffing

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// contextLines is how many unchanged lines surround each hunk, as in `diff -u`.
const contextLines = 3

// toYAML marshals an (already normalised and masked) object with sorted keys, and
// swaps the changed-secret sentinel for a visible marker. A nil object is "".
//
// The text is sigs.k8s.io/yaml's (JSON, re-read by go.yaml.in/yaml/v2 and written
// by it). Objects whose values survive that round trip unchanged (plainYAML) are
// written by yaml/v2 straight away, which gives the same bytes for a third of the
// CPU, most of them by appendYAML, which writes what yaml/v2 would for a fraction
// of that again; the rest take the round trip.
func toYAML(obj *unstructured.Unstructured) string {
	if obj == nil {
		return ""
	}
	var b []byte
	var err error
	if plainYAML(obj.Object) {
		var ok bool
		if b, ok = appendYAML(nil, obj.Object); !ok {
			b, err = yamlv2.Marshal(obj.Object)
		}
	} else {
		b, err = yaml.Marshal(obj.Object)
	}
	if err != nil {
		// Unstructured content always marshals; say so instead of hiding it.
		return fmt.Sprintf("# cannot marshal object: %v\n", err)
	}
	return strings.ReplaceAll(string(b), changedSentinel, MaskedValue+"  "+changedMarker)
}

// lineOp is one line of a line-level diff.
type lineOp struct {
	op   byte // ' ', '-', '+'
	text string
}

// diffLines diffs two texts line by line with go-diff's line mode.
func diffLines(a, b string) []lineOp {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines)
	var ops []lineOp
	for _, d := range diffs {
		op := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		for _, l := range splitLines(d.Text) {
			ops = append(ops, lineOp{op, l})
		}
	}
	return ops
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// similarity is the share of lines two texts have in common (2·equal / total), the
// measure rename detection uses.
func similarity(a, b string) float64 {
	ops := diffLines(a, b)
	if len(ops) == 0 {
		return 1
	}
	equal, total := 0, 0
	for _, o := range ops {
		if o.op == ' ' {
			equal += 2
			total += 2
		} else {
			total++
		}
	}
	return float64(equal) / float64(total)
}

// changedLines counts the - and + lines between two texts.
func changedLines(a, b string) int {
	n := 0
	for _, o := range diffLines(a, b) {
		if o.op != ' ' {
			n++
		}
	}
	return n
}

// unified formats the line diff of a and b as unified hunks with contextLines of
// context and `@@ -l,n +l,n @@` headers, without file headers. Equal texts give "".
func unified(a, b string) string {
	ops := diffLines(a, b)
	// Find the ranges of ops to print: every changed line plus context.
	var hunks [][2]int // [start, end) indexes into ops
	for i := 0; i < len(ops); i++ {
		if ops[i].op == ' ' {
			continue
		}
		start := max(i-contextLines, 0)
		end := i
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			// Run of equal lines: does another change follow within 2·context?
			j := end
			for j < len(ops) && ops[j].op == ' ' {
				j++
			}
			if j < len(ops) && j-end <= 2*contextLines {
				end = j
				continue
			}
			end = min(end+contextLines, len(ops))
			break
		}
		if n := len(hunks); n > 0 && start <= hunks[n-1][1] {
			hunks[n-1][1] = end
		} else {
			hunks = append(hunks, [2]int{start, end})
		}
		i = end - 1
	}
	if len(hunks) == 0 {
		return ""
	}
	// Line numbers of each op in the old and new text.
	oldLine := make([]int, len(ops)+1)
	newLine := make([]int, len(ops)+1)
	o, n := 1, 1
	for i, op := range ops {
		oldLine[i], newLine[i] = o, n
		if op.op != '+' {
			o++
		}
		if op.op != '-' {
			n++
		}
	}
	var sb strings.Builder
	for _, h := range hunks {
		oc, nc := 0, 0
		for _, op := range ops[h[0]:h[1]] {
			if op.op != '+' {
				oc++
			}
			if op.op != '-' {
				nc++
			}
		}
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(oldLine[h[0]], oc), hunkRange(newLine[h[0]], nc))
		for _, op := range ops[h[0]:h[1]] {
			sb.WriteByte(op.op)
			sb.WriteString(op.text)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// hunkRange writes a hunk side the way GNU diff does: "l,n", "l" for one line,
// and "l-1,0" for an empty side.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprintf("%d", start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}
