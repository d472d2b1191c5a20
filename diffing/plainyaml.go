package diffing

import (
	"math"
	"unicode/utf8"
)

// plainYAML reports whether yaml/v2 writes v (an unstructured object's content)
// exactly as sigs.k8s.io/yaml.Marshal does, which writes JSON with encoding/json
// and has yaml/v2 read it back into Go values and write those. The two agree when
// the JSON round trip gives back the same values:
//   - maps with string keys and lists, not nil (JSON writes a nil map or list as
//     null, yaml/v2 as {} and []); yaml/v2 sorts map keys the same way for
//     map[string]any as for the map[any]any the round trip gives;
//   - strings of valid UTF-8 (JSON replaces invalid bytes) whose characters the
//     YAML reader takes as they are: JSON writes DEL and C1 control characters
//     unescaped, and yaml/v2 then refuses the document (or breaks the line at
//     U+0085), while characters below U+0020 are escaped by JSON and come back
//     as they were;
//   - int64, bool and null;
//   - finite float64s with a fraction or beyond 1e21: JSON writes 2.0 as "2" and
//     1e6 as "1000000", which yaml/v2 reads back as integers, while yaml/v2 alone
//     writes "2" and "1e+06".
//
// Anything else (integral floats, other number types, NaN) takes the round trip.
func plainYAML(v any) bool {
	switch x := v.(type) {
	case nil, bool, int64:
		return true
	case string:
		return plainString(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return false
		}
		return x != math.Trunc(x) || math.Abs(x) >= 1e21
	case map[string]any:
		if x == nil {
			return false
		}
		for k, e := range x {
			if !plainString(k) || !plainYAML(e) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !plainYAML(e) {
				return false
			}
		}
		return true
	}
	return false
}

// plainString reports whether s is valid UTF-8 that yaml/v2's reader accepts
// after encoding/json wrote it: JSON escapes the characters below U+0020, so
// those are fine; DEL and the C1 controls (which JSON leaves as they are and the
// reader refuses, or reads U+0085 as a line break), U+FEFF, U+FFFE and U+FFFF
// are not.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7f {
				return false
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return false
		case r >= 0x80 && r <= 0x9f, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return false
		}
		i += size - 1
	}
	return true
}
