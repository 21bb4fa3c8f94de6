package omprpc

import (
	"encoding/json"
	"errors"
	"testing"
)

// The generated commands (protocol_gen.go) against the fake agent: each sends its command and
// decodes the data into its typed result, the agent's JSON kept in Raw.
func TestGeneratedCommands(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)

	models, err := c.GetAvailableModels(ctx)
	if err != nil || len(models.Models) == 0 || jstr(t, models.Models[0], "id") == "" {
		t.Fatalf("GetAvailableModels: %+v %v", models, err)
	}
	if err := c.SetThinkingLevel(ctx, "high"); err != nil {
		t.Fatal(err)
	}
	level, err := c.CycleThinkingLevel(ctx)
	if err != nil || level == nil || level.Level == "" || jstr(t, level.Raw, "level") != string(level.Level) {
		t.Fatalf("CycleThinkingLevel: %+v %v", level, err)
	}
	cycled, err := c.CycleModel(ctx)
	if err != nil || cycled == nil || jstr(t, cycled.Model, "id") == "" {
		t.Fatalf("CycleModel: %+v %v", cycled, err)
	}
	if err := c.SetSteeringMode(ctx, "one-at-a-time"); err != nil {
		t.Fatal(err)
	}
	state, err := c.GetState(ctx)
	if err != nil || state.SteeringMode != "one-at-a-time" || state.SessionID != jstr(t, state.Raw, "sessionId") {
		t.Fatalf("GetState: %+v %v", state, err)
	}
	if err := c.SetSessionName(ctx, "named"); err != nil {
		t.Fatal(err)
	}
	exported, err := c.ExportHTML(ctx, &ExportHTMLOptions{OutputPath: tempDir(t) + "/out.html"})
	if err != nil || exported.Path == "" {
		t.Fatalf("ExportHTML: %+v %v", exported, err)
	}
	turn(t, c, "ping")
	text, err := c.GetLastAssistantText(ctx)
	if err != nil || text.Text == nil || *text.Text != "pong" {
		t.Fatalf("GetLastAssistantText: %+v %v", text, err)
	}
	messages, err := c.GetMessages(ctx)
	if err != nil || len(messages.Messages) == 0 {
		t.Fatalf("GetMessages: %v", err)
	}
	if last, ok := messages.Messages[len(messages.Messages)-1].Value.(*AssistantMessage); !ok || last.Role() != "assistant" || len(last.Content) == 0 {
		t.Fatalf("GetMessages: %v", err)
	}
	stats, err := c.GetSessionStats(ctx)
	if err != nil || jget(t, stats, "sessionId") == nil {
		t.Fatalf("GetSessionStats: %s %v", stats, err)
	}
	// A rejected command is the same *CommandError the generic Request returns: the fake
	// agent plays omp, which has no pi-only fork.
	_, err = c.Fork(ctx, "entry-1")
	var ce *CommandError
	if !errors.As(err, &ce) || ce.Command != "fork" {
		t.Fatalf("fork on omp: %v", err)
	}
}

// Every event of a turn decodes to its generated type; the decoded members agree with the raw
// JSON; a type the table does not name is an *UnknownEvent, not an error.
func TestTypedEvents(t *testing.T) {
	c := startFake(t)
	tr := turn(t, c, "all events")
	seen := map[string]bool{}
	for _, ev := range tr.TypedEvents() {
		typed, err := ev.Typed()
		if err != nil {
			t.Fatalf("%s: %v", ev.Raw, err)
		}
		if _, unknown := typed.(*UnknownEvent); unknown {
			t.Errorf("the fake agent's %q is not in the table", ev.Type)
		}
		if typed.Type() != ev.Type || string(typed.RawJSON()) != string(ev.Raw) {
			t.Errorf("%T: Type %q RawJSON %s (event %s)", typed, typed.Type(), typed.RawJSON(), ev.Raw)
		}
		switch e := typed.(type) {
		case *MessageUpdateEvent:
			// The payloads decode into the table's unions: none of the fake agent's is unknown.
			_, unknownEvent := e.AssistantMessageEvent.Value.(*UnknownAssistantMessageEvent)
			_, unknownMessage := e.Message.Value.(*UnknownAgentMessage)
			if e.AssistantMessageEvent.Value == nil || e.Message.Value == nil || unknownEvent || unknownMessage {
				t.Errorf("message_update: %+v", e)
			}
		case *AgentEndEvent:
			if len(e.Messages) == 0 {
				t.Errorf("agent_end without messages: %s", e.Raw)
			}
		case *ToolExecutionStartEvent:
			if e.ToolCallID == "" || e.ToolName == "" {
				t.Errorf("tool_execution_start: %s", e.Raw)
			}
		}
		seen[ev.Type] = true
	}
	for _, want := range []string{"agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end"} {
		if !seen[want] {
			t.Errorf("no %s in %v", want, seen)
		}
	}

	future := Event{Type: "brand_new", Raw: json.RawMessage(`{"type":"brand_new","x":1}`)}
	typed, err := future.Typed()
	if u, ok := typed.(*UnknownEvent); err != nil || !ok || u.Type() != "brand_new" || string(u.RawJSON()) != string(future.Raw) {
		t.Fatalf("an unknown event: %#v %v", typed, err)
	}
	bad := Event{Type: "agent_end", Raw: json.RawMessage(`{"type":"agent_end","messages":7}`)}
	if _, err := bad.Typed(); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("agent_end with messages:7 decoded: %v", err)
	}
}

// UI requests decode by method.
func TestTypedUIRequests(t *testing.T) {
	c := startFake(t)
	promptOnly(t, c, "needs ui")
	r := nextUI(t, c)
	typed, err := r.Typed()
	in, ok := typed.(*UIInputRequest)
	if err != nil || !ok || in.RequestID() != "ui-1" || in.Method() != "input" || in.Title != "Need input" || in.Placeholder != "value" {
		t.Fatalf("input request: %#v %v", typed, err)
	}
	if err := c.UISendValue(in.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"type":"extension_ui_request","id":"u9","method":"future_dialog"}`)
	if u, err := decodeUIRequest(raw); err != nil || u.Method() != "future_dialog" || u.RequestID() != "u9" {
		t.Fatalf("an unknown UI method: %#v %v", u, err)
	}
}

// A string that is not UTF-8 is refused, not silently replaced: json.Marshal would send
// U+FFFD in its place.
func TestCommandParamsMustBeUTF8(t *testing.T) {
	c := startFake(t)
	ctx := ctxFor(t)
	if err := c.SetSessionName(ctx, "bad \xff name"); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("SetSessionName with invalid UTF-8: %v", err)
	}
	if _, err := c.Request(ctx, "set_session_name", map[string]string{"name": "\xfe"}); !errors.Is(err, ErrInvalidUTF8) {
		t.Fatalf("Request with invalid UTF-8: %v", err)
	}
	// A real U+FFFD and a literal backslash-u text are fine.
	if err := c.SetSessionName(ctx, "ok \uFFFD and \\ufffd"); err != nil {
		t.Fatal(err)
	}
	if coercedUTF8([]byte(`"\\\\ufffd"`)) || !coercedUTF8([]byte(`"\\\\\ufffd"`)) {
		t.Fatal("coercedUTF8 miscounts backslashes")
	}
}
