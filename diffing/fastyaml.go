package diffing

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// appendYAML writes v (an unstructured object's content that plainYAML accepts)
// as go.yaml.in/yaml/v2's Marshal does, byte for byte, without its reflection and
// event machinery (a diff of a large PR writes YAML for every changed object). It
// covers the common case only: maps with string keys, lists, int64, bool, null,
// floats, and strings of printable ASCII that yaml/v2 writes on one line. For
// anything else (a multi-line or non-ASCII string, a string yaml/v2 could fold at
// its 80-column width, a key it writes as a complex "? " key) it reports false,
// and the caller marshals with yaml/v2 itself. The rules below are yaml/v2's
// (encode.go stringv, resolve.go resolve, emitterc.go analyze_scalar and
// select_scalar_style, sorter.go keyList.Less); TestAppendYAMLMatchesYAMLv2
// checks the output against yaml/v2 over varied documents.
func appendYAML(buf []byte, obj map[string]any) ([]byte, bool) {
	if len(obj) == 0 {
		return append(buf, "{}\n"...), true
	}
	e := yamlWriter{buf: buf}
	if !e.mapping(obj, 0, false) {
		return buf, false
	}
	return e.buf, true
}

type yamlWriter struct {
	buf       []byte
	lineStart int // index in buf where the current line starts
}

func (e *yamlWriter) newline() {
	e.buf = append(e.buf, '\n')
	e.lineStart = len(e.buf)
}

func (e *yamlWriter) indent(n int) {
	for range n {
		e.buf = append(e.buf, ' ')
	}
}

// mapping writes a non-empty map at indent. inline says the first key goes on
// the current line (after a sequence's "- ").
func (e *yamlWriter) mapping(m map[string]any, indent int, inline bool) bool {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		switch {
		case yamlKeyLess(a, b):
			return -1
		case yamlKeyLess(b, a):
			return 1
		}
		return 0
	})
	for i, k := range keys {
		if i > 0 || !inline {
			e.indent(indent)
		}
		// yaml/v2 writes a key longer than 128 bytes as a complex key.
		if len(k) > 128 || !e.scalarString(k, false) {
			return false
		}
		e.buf = append(e.buf, ':')
		if !e.value(m[k], indent, true) {
			return false
		}
	}
	return true
}

// sequence writes a non-empty list whose "- " marks are at indent. inline says
// the first item goes on the current line (after an outer "- ").
func (e *yamlWriter) sequence(l []any, indent int, inline bool) bool {
	for i, v := range l {
		if i > 0 || !inline {
			e.indent(indent)
		}
		e.buf = append(e.buf, '-')
		if !e.value(v, indent, false) {
			return false
		}
	}
	return true
}

// value writes v after a key's ":" (inMap) or a sequence item's "-", with the
// line break that ends it. indent is that key's or mark's.
func (e *yamlWriter) value(v any, indent int, inMap bool) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			e.buf = append(e.buf, " {}"...)
			break
		}
		if inMap {
			e.newline()
			return e.mapping(x, indent+2, false)
		}
		e.buf = append(e.buf, ' ')
		return e.mapping(x, indent+2, true)
	case []any:
		if len(x) == 0 {
			e.buf = append(e.buf, " []"...)
			break
		}
		if inMap {
			// A list in a mapping is not indented ("key:\n- a").
			e.newline()
			return e.sequence(x, indent, false)
		}
		e.buf = append(e.buf, ' ')
		return e.sequence(x, indent+2, true)
	case string:
		e.buf = append(e.buf, ' ')
		if !e.scalarString(x, true) {
			return false
		}
	case nil:
		e.buf = append(e.buf, " null"...)
	case bool:
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendBool(e.buf, x)
	case int64:
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendInt(e.buf, x, 10)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendFloat(e.buf, x, 'g', -1, 64)
	default:
		return false
	}
	e.newline()
	return true
}

// scalarString writes s in the style yaml/v2 picks: plain when it reads back as
// the same string and nothing in it is an indicator, else single-quoted, or
// double-quoted when plain would read as another type (a number, a bool, null, a
// timestamp). A value (not a key) may be folded by yaml/v2 at a space past column
// 80: such a string is left to yaml/v2.
func (e *yamlWriter) scalarString(s string, isValue bool) bool {
	spaces := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return false // line breaks, tabs, controls, non-ASCII: yaml/v2's own rules
		}
		if c == ' ' {
			spaces = true
		}
	}
	start := len(e.buf)
	switch {
	case !yamlResolvesToString(s):
		e.buf = append(e.buf, '"')
		for i := 0; i < len(s); i++ {
			if s[i] == '"' || s[i] == '\\' {
				e.buf = append(e.buf, '\\')
			}
			e.buf = append(e.buf, s[i])
		}
		e.buf = append(e.buf, '"')
	case yamlPlainAllowed(s):
		e.buf = append(e.buf, s...)
	default:
		e.buf = append(e.buf, '\'')
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				e.buf = append(e.buf, '\'')
			}
			e.buf = append(e.buf, s[i])
		}
		e.buf = append(e.buf, '\'')
	}
	// yaml/v2 breaks a value's line at a space written past column 80; the
	// last column this scalar reaches bounds the column of any of its spaces.
	if isValue && spaces && len(e.buf)-e.lineStart > 80 {
		e.buf = e.buf[:start]
		return false
	}
	return true
}

// yamlPlainAllowed is analyze_scalar's block_plain_allowed for a non-empty
// string of printable ASCII: no leading or trailing space, no "---" or "..."
// start, no indicator at the start, no ": " and no " #".
func yamlPlainAllowed(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	followedByBlank := func(i int) bool { return i+1 >= len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if followedByBlank(0) {
			return false
		}
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ':':
			if followedByBlank(i) {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}

// yamlResolvesToString reports whether yaml/v2 reads s, written plain, back as
// the string s (resolve.go resolve with no tag, and encode.go's isBase60Float).
func yamlResolvesToString(s string) bool {
	if s == "" {
		return false // null
	}
	switch c := s[0]; {
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if yamlSpecialWords[s] {
			return false
		}
		if yamlTimestamp(s) {
			return false
		}
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return false
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return false
		}
		if yamlStyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return false
			}
		}
		if rest, ok := strings.CutPrefix(plain, "0b"); ok {
			if _, err := strconv.ParseInt(rest, 2, 64); err == nil {
				return false
			}
			if _, err := strconv.ParseUint(rest, 2, 64); err == nil {
				return false
			}
		} else if rest, ok := strings.CutPrefix(plain, "-0b"); ok {
			if _, err := strconv.ParseInt("-"+rest, 2, 64); err == nil {
				return false
			}
		}
		return !(strings.IndexByte(s, ':') >= 0 && yamlBase60Float.MatchString(s))
	case c == '.':
		if yamlSpecialWords[s] {
			return false
		}
		_, err := strconv.ParseFloat(s, 64)
		return err != nil
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		return !yamlSpecialWords[s]
	}
	return true
}

// yamlSpecialWords are the plain scalars yaml/v2 reads as bools, null, special
// floats or the merge key.
var yamlSpecialWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`y Y yes Yes YES true True TRUE on On ON n N no No NO false False FALSE off Off OFF
		~ null Null NULL .nan .NaN .NAN .inf .Inf .INF +.inf +.Inf +.INF -.inf -.Inf -.INF <<`) {
		m[w] = true
	}
	return m
}()

var (
	yamlStyleFloat  = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	yamlBase60Float = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
)

// yamlTimestamp is resolve.go's parseTimestamp: four digits, a dash, and one of
// its layouts.
func yamlTimestamp(s string) bool {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, layout := range []string{"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2"} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// yamlKeyLess is sorter.go's keyList.Less for two strings of ASCII: letters
// compare as bytes, a letter sorts after a non-letter, and runs of digits
// compare as numbers.
func yamlKeyLess(a, b string) bool {
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		var ai, bi int
		var an, bn int64
		if a[i] == '0' || b[i] == '0' {
			for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
				if a[j] != '0' {
					an, bn = 1, 1
					break
				}
			}
		}
		for ai = i; ai < len(a) && isDigit(a[ai]); ai++ {
			an = an*10 + int64(a[ai]-'0')
		}
		for bi = i; bi < len(b) && isDigit(b[bi]); bi++ {
			bn = bn*10 + int64(b[bi]-'0')
		}
		if an != bn {
			return an < bn
		}
		if ai != bi {
			return ai < bi
		}
		return a[i] < b[i]
	}
	return len(a) < len(b)
}
