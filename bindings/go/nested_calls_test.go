package omprpc

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// Nested tool calls: real pi 1.6.0's codemode turn (a script ran bash, which sleeps first, and
// read at once; read ended first), recorded by tests/real_pi.rs and replayed by the fake agent.
// Each call's summary item holds its own result; the inner ones name the codemode call, which
// lists them as its children; the streaming summarizer's tool items name it too.
func TestNestedToolCallsFromTheCodemodeRecording(t *testing.T) {
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "tests", "fixtures", "recordings", "pi-1.6.0-codemode.jsonl"))
	// --mode rpc makes the client ask the replay its --version: the recorded pi's.
	opts := fakeOptions("--replay", fixture, "--mode", "rpc")
	opts.Flavor = "pi"
	opts.TurnSummary = true
	c := start(t, opts)
	tr := turn(t, c, "please run codemode")
	s, err := tr.ParsedSummary()
	if err != nil || s == nil {
		t.Fatalf("ParsedSummary: %v %v", s, err)
	}
	type row struct {
		ID, Name, Parent, Outcome, Text string
		Children                        []string
	}
	var rows []row
	for _, tc := range s.ToolCalls {
		var result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(tc.Result, &result); err != nil {
			t.Fatalf("result of %s: %v", tc.ToolCallID, err)
		}
		r := row{ID: tc.ToolCallID, Name: tc.ToolName, Outcome: tc.Outcome, Children: tc.Children}
		if tc.ParentToolCallID != nil {
			r.Parent = *tc.ParentToolCallID
		}
		if n := len(result.Content); n > 0 {
			r.Text = result.Content[n-1].Text
		}
		rows = append(rows, r)
	}
	want := []row{
		{"call_fake_2", "codemode", "", "success", "inner+from-note", []string{"call_fake_2/1", "call_fake_2/2"}},
		{"call_fake_2/1", "bash", "call_fake_2", "success", "inner\n", []string{}},
		{"call_fake_2/2", "read", "call_fake_2", "success", "from-note\n", []string{}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("tool calls\n got %+v\nwant %+v", rows, want)
	}

	sm, err := NewSummarizer("")
	if err != nil {
		t.Fatal(err)
	}
	defer sm.Close()
	var ends []string
	for _, ev := range tr.Events {
		items, err := sm.Feed(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Kind != "tool_start" && it.Kind != "tool_update" && it.Kind != "tool_end" {
				continue
			}
			var m struct {
				ToolCallID       string  `json:"toolCallId"`
				ParentToolCallID *string `json:"parentToolCallId"`
			}
			if err := json.Unmarshal(it.Raw, &m); err != nil {
				t.Fatal(err)
			}
			if (m.ToolCallID == "call_fake_2") != (m.ParentToolCallID == nil) || (m.ParentToolCallID != nil && *m.ParentToolCallID != "call_fake_2") {
				t.Fatalf("%s %s: parentToolCallId %v", it.Kind, m.ToolCallID, m.ParentToolCallID)
			}
			if it.Kind == "tool_end" {
				ends = append(ends, m.ToolCallID)
			}
		}
	}
	if !reflect.DeepEqual(ends, []string{"call_fake_2/2", "call_fake_2/1", "call_fake_2"}) {
		t.Fatalf("tool ends %v", ends)
	}
}
