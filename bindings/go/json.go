package omprpc

// A small JSON splitter for the hot path of the event pump: it cuts the library's event
// array into elements and reads each element's top-level "type" without decoding the rest.
// It assumes well-formed JSON (the library only queues frames it parsed) and reports
// ok=false on anything it does not expect; callers then fall back to encoding/json.

import (
	"bytes"
	"encoding/json"
)

// scanClass sorts bytes for valueEnd: 1 quote, 2 open, 3 close, 0 anything else.
var scanClass = [256]uint8{'"': 1, '{': 2, '[': 2, '}': 3, ']': 3}

// stringSpecial marks the bytes that end a run of plain string content.
var stringSpecial = [256]bool{'"': true, '\\': true}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"', and whether it
// contains escapes; -1 if it does not end. (A byte loop: event JSON has many short strings,
// where calling bytes.IndexByte per string costs more than it saves.)
func stringEnd(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			j++
		}
	}
	return -1, false
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
		j := i
		for j < len(b) {
			switch scanClass[b[j]] {
			case 0:
				j++
				continue
			case 1: // a string: skip to its closing quote
				j++
				for j < len(b) && !stringSpecial[b[j]] {
					j++
				}
				for j < len(b) && b[j] == '\\' {
					j += 2
					for j < len(b) && !stringSpecial[b[j]] {
						j++
					}
				}
			case 2:
				depth++
			case 3:
				depth--
				if depth == 0 {
					return j + 1
				}
			}
			j++
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
	out, end, ok := splitArrayAt(b, skipSpace(b, 0))
	return out, ok && skipSpace(b, end) == len(b)
}

// splitArrayAt cuts the JSON array starting at b[i] into its elements (aliasing b); end is
// the index just past it.
func splitArrayAt(b []byte, i int) (out []json.RawMessage, end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, -1, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []json.RawMessage{}, i + 1, true
	}
	for {
		e := valueEnd(b, i)
		if e < 0 {
			return nil, -1, false
		}
		out = append(out, json.RawMessage(b[i:e:e]))
		i = skipSpace(b, e)
		if i >= len(b) {
			return nil, -1, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, i + 1, true
		default:
			return nil, -1, false
		}
	}
}

// lineSep separates the events of a turn (and of collect_events) when the library writes
// them one per line: events never contain a raw newline, and nothing after the array does.
var lineSep = []byte(",\n")

// splitEventsAt is splitArrayAt for an array of events the library wrote (a turn's, or
// collect_events'). When it wrote them one per line, the elements are cut at each ",\n" with
// a byte search (only the last one is scanned, to find the array's end): this relies on the
// library's guarantee that an event never contains a raw newline, so it is not for arbitrary
// JSON. Without separators, or if anything looks off, splitArrayAt does it.
func splitEventsAt(b []byte, i int) (out []json.RawMessage, end int, ok bool) {
	if i >= len(b) || b[i] != '[' {
		return nil, -1, false
	}
	pos := i + 1
	// One pass over the newlines alone (a single-byte search; commas are everywhere in JSON,
	// newlines only between the events here and, after them, nowhere before the array ends).
	n := bytes.Count(b[pos:], lineSep[1:])
	if n == 0 {
		return splitArrayAt(b, i)
	}
	out = make([]json.RawMessage, 0, n+1)
	for {
		k := bytes.IndexByte(b[pos:], '\n')
		if k < 0 {
			break
		}
		ev := b[pos : pos+k : pos+k]
		if len(ev) < 3 || ev[len(ev)-1] != ',' {
			return splitArrayAt(b, i)
		}
		ev = ev[: len(ev)-1 : len(ev)-1]
		if ev[0] != '{' || ev[len(ev)-1] != '}' {
			return splitArrayAt(b, i)
		}
		out = append(out, json.RawMessage(ev))
		pos += k + 1
	}
	e := valueEnd(b, pos)
	if e < 0 {
		return splitArrayAt(b, i)
	}
	out = append(out, json.RawMessage(b[pos:e:e]))
	if e >= len(b) || b[e] != ']' {
		return splitArrayAt(b, i)
	}
	return out, e + 1, true
}

const typeHead = `{"type":"`

// topLevelType reads the string member "type" of a JSON object; "" when it has none (or it
// is not a string). ok=false when the object is not what the splitter expects.
func topLevelType(b []byte) (string, bool) {
	// The layout every agent writes: "type" first, a plain ASCII string.
	if len(b) > len(typeHead) && string(b[:len(typeHead)]) == typeHead {
		v := b[len(typeHead):]
		if e := bytes.IndexByte(v, '"'); e >= 0 && bytes.IndexByte(v[:e], '\\') < 0 && isASCII(v[:e]) {
			return internType(v[:e]), true
		}
	}
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
			if v := b[i+1 : ve-1]; !vesc && isASCII(v) {
				return internType(v), true
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

// internType is string(v), without an allocation for the event types every turn has.
func internType(v []byte) string {
	switch string(v) { // no allocation: the compiler compares the bytes
	case "message_update":
		return "message_update"
	case "message_start":
		return "message_start"
	case "message_end":
		return "message_end"
	case "tool_execution_start":
		return "tool_execution_start"
	case "tool_execution_update":
		return "tool_execution_update"
	case "tool_execution_end":
		return "tool_execution_end"
	case "turn_start":
		return "turn_start"
	case "turn_end":
		return "turn_end"
	case "agent_start":
		return "agent_start"
	case "agent_end":
		return "agent_end"
	}
	return string(v)
}

// objectMembers walks the top-level members of a JSON object: fn gets each key and the
// index of its value in b, and returns the index just past the value (-1: stop, not ok).
func objectMembers(b []byte, fn func(key string, b []byte, i int) int) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		ke, kesc := stringEnd(b, i)
		if ke < 0 || kesc {
			return false
		}
		key := string(b[i+1 : ke-1])
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		ve := fn(key, b, i)
		if ve < 0 {
			return false
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
	return false
}

func isNull(v []byte) bool { return string(v) == "null" }
