package omprpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

var splitSeeds = []string{
	`[]`,
	` [ ] `,
	`[{"type":"a"}]`,
	`[{"type":"a"},{"type":"b","x":[1,{"y":"]}"}]}]`,
	`[ {"x":1 , "type" : "late"} , 2, "s", null, true, [], {} ]`,
	`[{"type":"esc\"aped\\"},{"ty\u0070e":"k"},{"type":"\u00e9"}]`,
	`[{"a":"\\\\","type":"after backslashes"}]`,
	`[{"type":5},{"type":null},{"type":{"nested":"x"}}]`,
	`[{"message":{"content":[{"type":"text","text":"a,b]}{"}]},"type":"message_update"}]`,
	`[-1.5e3,0,"]",{"type":""}]`,
	"[\n{\"type\":\"nl\"}\t,\r\n{\"type\":\"x\"}\n]",
	"[{\"type\":\"\xb7\"}]", // invalid UTF-8 decodes to U+FFFD, as encoding/json does
	"[{\"tYpe\":\"case\"},{\"\\u0074ype\":\"escaped key\"}]",
}

// checkSplit compares the fast splitter with encoding/json on a valid JSON array.
func checkSplit(t *testing.T, in []byte) {
	var want []json.RawMessage
	if !json.Valid(in) || json.Unmarshal(in, &want) != nil {
		return
	}
	got, ok := splitArray(in)
	if !ok {
		t.Fatalf("splitArray refused a valid array: %q", in)
	}
	if len(got) != len(want) {
		t.Fatalf("splitArray(%q) = %d elements, want %d", in, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("element %d: %q, want %q", i, got[i], want[i])
		}
		typ, ok := topLevelType(got[i])
		if ok && typ != decodeType(got[i]) {
			t.Fatalf("topLevelType(%q) = %q, want %q", got[i], typ, decodeType(got[i]))
		}
	}
	// and parseEvents, whichever path it takes, agrees
	evs, err := parseEvents("test", in)
	if err != nil || len(evs) != len(want) {
		t.Fatalf("parseEvents(%q): %d, %v", in, len(evs), err)
	}
	for i, ev := range evs {
		if !bytes.Equal(ev.Raw, want[i]) || ev.Type != decodeType(want[i]) {
			t.Fatalf("parseEvents(%q)[%d] = %q %q", in, i, ev.Type, ev.Raw)
		}
	}
}

func TestSplitArrayMatchesEncodingJSON(t *testing.T) {
	for _, s := range splitSeeds {
		checkSplit(t, []byte(s))
	}
	for _, bad := range []string{``, `{}`, `[`, `[1,`, `[1 2]`, `["x]`, `[1]x`} {
		if _, ok := splitArray([]byte(bad)); ok {
			t.Errorf("splitArray(%q) accepted it", bad)
		}
	}
}

func FuzzSplitArray(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSplit(t, []byte(s))
		checkLines(t, []byte(s))
	})
}

// checkLines: the elements of a valid array, compacted and written one per line the way the
// library writes events, are cut back into exactly those elements by splitEventsAt.
func checkLines(t *testing.T, in []byte) {
	var elems []json.RawMessage
	if !json.Valid(in) || json.Unmarshal(in, &elems) != nil {
		return
	}
	lines := make([][]byte, len(elems))
	for i, e := range elems {
		var c bytes.Buffer
		if json.Compact(&c, e) != nil {
			return
		}
		lines[i] = c.Bytes()
	}
	arr := append(append([]byte("["), bytes.Join(lines, []byte(",\n"))...), ']')
	turn := append(append([]byte(`{"events":`), arr...), `,"requestId":"r","messages":[1,2]}`...)
	got, end, ok := splitEventsAt(turn, len(`{"events":`))
	if !ok || end != len(`{"events":`)+len(arr) || len(got) != len(lines) {
		t.Fatalf("splitEventsAt(%q) = %d elements, end %d, %v", turn, len(got), end, ok)
	}
	for i := range got {
		if !bytes.Equal(got[i], lines[i]) {
			t.Fatalf("line element %d: %q, want %q", i, got[i], lines[i])
		}
	}
	if evs, err := parseEventArray("test", arr); err != nil || len(evs) != len(lines) {
		t.Fatalf("parseEventArray(%q): %d, %v", arr, len(evs), err)
	}
}

func TestSplitEventLines(t *testing.T) {
	for _, s := range splitSeeds {
		checkLines(t, []byte(s))
	}
	checkLines(t, []byte(`[{"type":"a","v":"x,\ny"},{"type":"b","a":[{},{}]},{"type":"c"}]`))
	tr, err := parseTurn([]byte("{\"events\":[{\"type\":\"agent_start\"},\n{\"type\":\"agent_end\",\"messages\":[]}]," +
		`"requestId":"r","agentInvoked":true,"messages":[],"assistantMessage":null,"assistantText":null,"promptResult":null}`))
	if err != nil || len(tr.Events) != 2 || string(tr.Events[1]) != `{"type":"agent_end","messages":[]}` || tr.RequestID != "r" {
		t.Fatalf("parseTurn (lines): %+v %v", tr, err)
	}
}

func TestParseTurn(t *testing.T) {
	js := []byte(`{"requestId":"req_1","agentInvoked":true,"messages":[{"role":"assistant"}],` +
		`"assistantMessage":{"role":"assistant"},"assistantText":"p\u00f6ng","promptResult":null,` +
		`"events":[{"type":"agent_start"},{"type":"agent_end","messages":[]}],"future":{"x":[1]}}`)
	got, err := parseTurn(js)
	if err != nil {
		t.Fatal(err)
	}
	var want Turn
	if err := json.Unmarshal(js, &want); err != nil {
		t.Fatal(err)
	}
	want.PromptResult = nil
	if !reflect.DeepEqual(got, &want) || *got.AssistantText != "pöng" {
		t.Fatalf("parseTurn\n got %+v\nwant %+v", got, want)
	}
	// nulls, and the slow path for what the splitter does not take ("\u0065vents" is "events")
	for _, js := range []string{
		`{"requestId":"r","agentInvoked":false,"messages":[],"assistantMessage":null,"assistantText":null,"events":[]}`,
		`{"requestId":"r","agentInvoked":false,"messages":[],"assistantMessage":null,"assistantText":null,"\u0065vents":[]}`,
	} {
		tr, err := parseTurn([]byte(js))
		if err != nil || tr.AssistantMessage != nil || tr.AssistantText != nil || tr.AgentInvoked || len(tr.Events) != 0 || tr.RequestID != "r" {
			t.Fatalf("parseTurn(%s) = %+v, %v", js, tr, err)
		}
	}
	if _, err := parseTurn([]byte(`{"events":`)); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("a broken turn: %v", err)
	}
}

// The leading-"type" fast path of topLevelType agrees with decoding, escapes and non-ASCII
// included; splitEventsAt falls back to scanning when a newline is not a ",\n" separator.
func TestTypeFastPathAndLineFallback(t *testing.T) {
	for _, in := range []string{
		`{"type":"message_update","x":1}`, `{"type":"a\"b","x":1}`, `{"type":"\u00e9t\u00e9"}`,
		`{"type":"été"}`, `{"type":""}`, `{"type":"x\\"}`, `{"kind":1,"type":"later"}`, `{"type":1}`,
	} {
		got, ok := topLevelType([]byte(in))
		if want := decodeType([]byte(in)); !ok || got != want {
			t.Errorf("topLevelType(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{
		"[{\"type\":\"a\"}\n,{\"type\":\"b\"}]",            // a newline before the comma
		"[{\"type\":\"a\",\n\"x\":{}},\n{\"type\":\"b\"}]", // one inside an element
		"[\n{\"type\":\"a\"},\n{\"type\":\"b\"}\n]",        // around the elements
	} {
		got, end, ok := splitEventsAt([]byte(in), 0)
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if !ok || end != len(in) || len(got) != len(want) {
			t.Fatalf("splitEventsAt(%q) = %q, %d, %v", in, got, end, ok)
		}
		for i := range got {
			if !bytes.Equal(bytes.TrimSpace(got[i]), bytes.TrimSpace(want[i])) {
				t.Errorf("splitEventsAt(%q)[%d] = %q, want %q", in, i, got[i], want[i])
			}
		}
	}
}
