package omprpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RecordPath reaches the library: the session lands in the file, and the fake agent's
// --replay plays it back to a fresh client with the same answers.
func TestRecordPathRecordsAReplayableSession(t *testing.T) {
	rec := filepath.Join(tempDir(t), "session.jsonl")
	opts := fakeOptions()
	opts.RecordPath = rec
	c := start(t, opts)
	live := turn(t, c, "say hello")
	state, err := c.Request(ctxFor(t), "get_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), `{"omprpc_recording":1,`) || !strings.Contains(string(text), `"type":"get_state"`) {
		t.Fatalf("unexpected recording:\n%s", text)
	}
	checkPrivate(t, rec, 0o600)

	r := start(t, fakeOptions("--replay", rec))
	again := turn(t, r, "say hello")
	if again.AssistantText == nil || live.AssistantText == nil || *again.AssistantText != *live.AssistantText || *live.AssistantText != "pong" {
		t.Fatalf("replayed text %v, live %v", again.AssistantText, live.AssistantText)
	}
	state2, err := r.Request(ctxFor(t), "get_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(state2) != string(state) {
		t.Fatalf("replayed state %s, live %s", state2, state)
	}
}

// The committed real-pi recording replays through the Go binding without pi.
func TestCommittedPiRecordingReplays(t *testing.T) {
	fixture, _ := filepath.Abs(filepath.Join("..", "..", "tests", "fixtures", "recordings", "pi-text-turn.jsonl"))
	opts := fakeOptions("--replay", fixture)
	opts.Flavor = "pi"
	c := start(t, opts)
	tr := turn(t, c, "say hello")
	if tr.AssistantText == nil || *tr.AssistantText != "Hello from the fake model" {
		t.Fatalf("assistant text %v", tr.AssistantText)
	}
	raw, err := c.Request(ctxFor(t), "get_state", nil)
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Model struct {
			ID string `json:"id"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &state); err != nil || state.Model.ID != "fake-model" {
		t.Fatalf("get_state %s (%v)", raw, err)
	}
}
