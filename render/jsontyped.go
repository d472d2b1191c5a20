package render

import (
	"bytes"
	"math"
	"strconv"
)

// jsonTyped turns v, a value yaml.v3 decoded into an interface (Node.Decode),
// into what writing it with encoding/json (json.Marshal) and reading that back
// as the renderers do (sigs.k8s.io/json UnmarshalCaseSensitivePreserveInts)
// would give: integers as int64, other numbers as float64, integral floats
// that print without a point or exponent as int64. Maps and lists are
// changed in place. It adds the length of json.Marshal's text to *size, so the
// output limits count the same bytes as before.
//
// It answers false for what it cannot account for exactly, and the caller
// then takes the JSON way (resourceJSON, jsonObject), whose result or error
// stands: a string with a byte past ASCII (jsonObject takes those the YAML
// way), a NaN or an infinity (json.Marshal refuses them), a map with keys that
// are not strings, and any type yaml.v3 does not decode to. TestJSONTyped and
// FuzzJSONTyped hold it to the JSON round trip.
func jsonTyped(v any, size *int64) (any, bool) {
	switch x := v.(type) {
	case nil:
		*size += 4
		return nil, true
	case bool:
		if x {
			*size += 4
		} else {
			*size += 5
		}
		return x, true
	case string:
		n, ok := jsonStringLen(x)
		*size += int64(n)
		return x, ok
	case int:
		return jsonInt(int64(x), size), true
	case int64:
		return jsonInt(x, size), true
	case uint64:
		if x <= math.MaxInt64 {
			return jsonInt(int64(x), size), true
		}
		// Printed as its digits, read back as the nearest float64.
		*size += int64(len(strconv.FormatUint(x, 10)))
		return float64(x), true
	case float64:
		return jsonFloat(x, size)
	case []any:
		*size += 2 + int64(max(len(x)-1, 0))
		for i, e := range x {
			t, ok := jsonTyped(e, size)
			if !ok {
				return nil, false
			}
			x[i] = t
		}
		return x, true
	case map[string]any:
		*size += 2 + int64(max(len(x)-1, 0))
		for k, e := range x {
			n, ok := jsonStringLen(k)
			if !ok {
				return nil, false
			}
			*size += int64(n) + 1 // the key and its colon
			t, ok := jsonTyped(e, size)
			if !ok {
				return nil, false
			}
			x[k] = t
		}
		return x, true
	}
	return nil, false
}

func jsonInt(i int64, size *int64) int64 {
	var buf [24]byte
	*size += int64(len(strconv.AppendInt(buf[:0], i, 10)))
	return i
}

// jsonFloat prints f as encoding/json's float encoder does and reads the
// text back as sigs.k8s.io/json's convertNumber does.
func jsonFloat(f float64, size *int64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	var buf [32]byte
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if format == 'e' {
		// encoding/json writes e-09 as e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	*size += int64(len(b))
	s := string(b)
	if !bytes.Contains(b, []byte(".")) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, true
		}
	}
	g, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, false
	}
	return g, true
}

// jsonStringLen is the length of s as json.Marshal quotes it (HTML-safe
// escaping, as Marshal does); false when s has a byte past ASCII, which
// jsonObject does not read (it takes the YAML way).
func jsonStringLen(s string) (int, bool) {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x7f:
			return 0, false
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += 6 // \u00XX
		default:
			n++
		}
	}
	return n, true
}
