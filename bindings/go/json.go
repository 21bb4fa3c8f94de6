package omprpc

// A small JSON splitter for the hot path of the event pump: it cuts the library's event
// array into elements and reads each element's top-level "type" without decoding the rest.
// It assumes well-formed JSON (the library only queues frames it parsed) and reports
// ok=false on anything it does not expect; callers then fall back to encoding/json.

import (
	"bytes"
	"encoding/json"
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"', and whether it
// contains escapes; -1 if it does not end.
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1, false
		}
		q := j + k
		// the quote is escaped when an odd number of backslashes precede it
		n := 0
		for p := q - 1; p >= j && b[p] == '\\'; p-- {
			n++
		}
		if !escaped && bytes.IndexByte(b[j:q], '\\') >= 0 {
			escaped = true
		}
		if n%2 == 0 {
			return q + 1, escaped
		}
		j = q + 1
	}
}

// valueEnd returns the index just past the JSON value starting at b[i]; -1 if malformed.
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		e, _ := stringEnd(b, i)
		return e
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e, _ := stringEnd(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != ']' && b[j] != '}' && !isSpace(b[j]) {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}

// splitArray cuts a JSON array into its elements (aliasing b).
func splitArray(b []byte) ([]json.RawMessage, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	var out []json.RawMessage
	if i < len(b) && b[i] == ']' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		e := valueEnd(b, i)
		if e < 0 {
			return nil, false
		}
		out = append(out, json.RawMessage(b[i:e:e]))
		i = skipSpace(b, e)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// topLevelType reads the string member "type" of a JSON object; "" when it has none (or it
// is not a string). ok=false when the object is not what the splitter expects.
func topLevelType(b []byte) (string, bool) {
	if len(b) == 0 || b[0] != '{' {
		return "", len(b) > 0 // not an object: no type
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		return "", true
	}
	for i < len(b) {
		if b[i] != '"' {
			return "", false
		}
		ke, kesc := stringEnd(b, i)
		if ke < 0 || kesc {
			return "", false
		}
		key := b[i+1 : ke-1]
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return "", false
		}
		i = skipSpace(b, i+1)
		if string(key) == "type" {
			if i >= len(b) || b[i] != '"' {
				return "", true
			}
			ve, vesc := stringEnd(b, i)
			if ve < 0 {
				return "", false
			}
			if !vesc {
				return string(b[i+1 : ve-1]), true
			}
			var s string
			if json.Unmarshal(b[i:ve], &s) != nil {
				return "", false
			}
			return s, true
		}
		ve := valueEnd(b, i)
		if ve < 0 {
			return "", false
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return "", false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return "", true
		default:
			return "", false
		}
	}
	return "", false
}
