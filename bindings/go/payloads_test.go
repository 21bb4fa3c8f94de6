package omprpc

import (
	"encoding/json"
	"testing"
)

// messageText is an assistant message's text blocks ("" for any other message).
func messageText(m AgentMessageValue) string {
	a, ok := m.Value.(*AssistantMessage)
	if !ok {
		return ""
	}
	var out string
	for _, block := range a.Content {
		if t, ok := block.Value.(*TextContent); ok {
			out += t.Text
		}
	}
	return out
}

// customType is a custom message's customType ("" for any other message).
func customType(m AgentMessageValue) string {
	if c, ok := m.Value.(*CustomMessage); ok {
		return c.CustomType
	}
	return ""
}

// A variant a newer agent adds decodes as the union's Unknown… variant, never an error, and
// writes back as it came.
func TestUnknownVariantsSurvive(t *testing.T) {
	raw := `{"type":"audio_delta","contentIndex":2,"bytes":"AAE="}`
	var ev AssistantMessageEventValue
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatal(err)
	}
	u, ok := ev.Value.(*UnknownAssistantMessageEvent)
	if !ok || u.Type() != "audio_delta" || string(u.Raw) != raw {
		t.Fatalf("decoded %#v", ev.Value)
	}
	if out, err := json.Marshal(ev); err != nil || string(out) != raw {
		t.Fatalf("written back: %s %v", out, err)
	}
	if _, ok := ev.TextDelta(); ok {
		t.Fatal("an unknown event has no text delta")
	}
	var msgs []AgentMessageValue
	if err := json.Unmarshal([]byte(`[{"role":"narrator","text":"x"},null]`), &msgs); err != nil {
		t.Fatal(err)
	}
	if m, ok := msgs[0].Value.(*UnknownAgentMessage); !ok || m.Role() != "narrator" || msgs[1].Value != nil {
		t.Fatalf("messages %#v", msgs)
	}
	// A message that does not fit its role's type is kept too, as sent.
	if m := agentMessage(json.RawMessage(`{"role":"user","timestamp":"not a number"}`)); m.Value.Role() != "user" {
		t.Fatalf("a misfit message: %#v", m.Value)
	} else if _, unknown := m.Value.(*UnknownAgentMessage); !unknown {
		t.Fatalf("a misfit message decoded as %T", m.Value)
	}
}

// Only a text_delta is answer text: reasoning and tool-call JSON are not.
func TestTextDeltaIsTextDeltasOnly(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"text_delta","contentIndex":0,"delta":"hi","partial":{"role":"assistant","content":[]}}`:         "hi",
		`{"type":"thinking_delta","contentIndex":0,"delta":"hmm","partial":{"role":"assistant","content":[]}}`:    "",
		`{"type":"toolcall_delta","contentIndex":1,"delta":"{\"a\"","partial":{"role":"assistant","content":[]}}`: "",
	} {
		var ev AssistantMessageEventValue
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			t.Fatal(err)
		}
		got, ok := ev.TextDelta()
		if got != want || ok != (want != "") {
			t.Errorf("%s: %q %v", raw, got, ok)
		}
	}
}

// Content blocks write their own "type" and read back as their variants.
func TestContentBlocksRoundTrip(t *testing.T) {
	out, err := json.Marshal(ToolResult{Content: []MessageContent{TextContent{Text: "a"}, &ImageContent{Data: "aGk=", MimeType: "image/png"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk=","mimeType":"image/png"}]}`; string(out) != want {
		t.Fatalf("wrote %s, want %s", out, want)
	}
	var back AgentToolResult
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	text, ok1 := back.Content[0].Value.(*TextContent)
	image, ok2 := back.Content[1].Value.(*ImageContent)
	if !ok1 || !ok2 || text.Text != "a" || image.MimeType != "image/png" {
		t.Fatalf("read back %#v", back.Content)
	}
}
