package omprpc

import (
	"encoding/json"
	"testing"
)

// The typed constants send the option values the library knows, exactly as the strings did.
func TestTypedOptionConstants(t *testing.T) {
	typed := Options{Executable: "pi", Flavor: FlavorPi, Handshake: HandshakeProbe, TurnEvents: TurnEventsNoUpdates,
		InvalidFrames: InvalidFramesSkip, Bridge: BridgeNever, BridgeTransport: TransportTCP, LauncherEnv: LauncherEnvCommand,
		LogLevel: LogDebug, ToolPolicy: &ToolPolicy{Mode: PolicyRules, Default: PolicyBlock}}
	js, err := typed.startJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"flavor": "pi", "handshake": "probe", "turn_events": "no_updates", "invalid_frames": "skip",
		"bridge": "never", "bridge_transport": "tcp", "launcher_env": "command", "log_level": "debug"}
	for key, value := range want {
		if m[key] != value {
			t.Errorf("%s: %v, want %q", key, m[key], value)
		}
	}
	if p := m["tool_policy"].(map[string]any); p["mode"] != "rules" || p["default"] != "block" {
		t.Errorf("tool_policy: %v", p)
	}
	// untyped constants still assign, and build the same argv
	a, err := BuildArgv(Options{Executable: "pi", Flavor: FlavorPi, TurnEvents: TurnEventsAll})
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildArgv(Options{Executable: "pi", Flavor: "pi", TurnEvents: "all"})
	if err != nil || len(a) != len(b) || a[0] != b[0] {
		t.Fatalf("typed %v, untyped %v (%v)", a, b, err)
	}
	if o, _ := json.Marshal(PromptOptions{StreamingBehavior: StreamingFollowUp}); string(o) != `{"streamingBehavior":"followUp"}` {
		t.Fatalf("prompt options: %s", o)
	}
}
