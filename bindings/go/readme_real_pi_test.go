package omprpc

// The README's real-agent branch on real pi 1.6.0, as on a user's machine: `pi` on PATH, its
// models.json under HOME, the provider key exported in this process's environment, and start
// options with no environment option at all — the default environment (the allow-list with
// the provider keys pi and omp read, docs/c-api.md#the-agents-environment) must carry them.
// pi's built-in anthropic provider is routed to the fake LLM by its baseUrl alone
// (models.json), so the key it sends is the one it read from ANTHROPIC_API_KEY.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestReadmeRealAgentBranchTakesTheKeyFromTheEnvironment(t *testing.T) {
	const key = "sk-ant-fake-from-the-environment"
	w := newRealWorkspace(t, realPi, []any{map[string]any{"match": "say hello", "replies": []any{map[string]any{"text": "hello from the environment"}}}})
	// `pi` on PATH: the installed pi with the Node it needs.
	bin := filepath.Join(w.root, "bin")
	if err := os.Mkdir(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec '%s' '%s' \"$@\"\n", w.launcher[0], w.launcher[1])
	if err := os.WriteFile(filepath.Join(bin, "pi"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	// A user's pi configuration: the built-in anthropic provider behind a proxy (the fake LLM).
	agentDir := filepath.Join(w.home, ".pi", "agent")
	if err := os.MkdirAll(agentDir, 0o700); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`{"providers":{"anthropic":{"baseUrl":"http://127.0.0.1:%d"}}}`, w.port)
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", w.home)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("PI_OFFLINE", "1") // no catalog refresh or version check over the network
	// Unset (t.Setenv restores it when the test ends): a developer's own would win over HOME's.
	t.Setenv("PI_CODING_AGENT_DIR", "")
	os.Unsetenv("PI_CODING_AGENT_DIR")
	t.Setenv("OMPRPC_README_TEST_SECRET", "not-for-the-agent")

	// The README's options, with pi for omp; StartupTimeout only guards a loaded machine.
	c := w.start(t, Options{Executable: "pi", Model: "anthropic/claude-sonnet-4-5", NoSession: true, StartupTimeout: realWait})
	if v := realVersion(t, c); v != "1.6.0" {
		t.Fatalf("pi %s, want 1.6.0", v)
	}
	ctx := realCtx(t)
	turn, err := c.PromptAndWait(ctx, "say hello", nil)
	if err != nil {
		t.Fatalf("PromptAndWait: %v", err)
	}
	raw, err := json.Marshal(turn)
	if err != nil {
		t.Fatal(err)
	}
	if got := jstr(t, raw, "assistantText"); got != "hello from the environment" {
		t.Fatalf("assistantText %q; turn %s", got, raw)
	}
	if got := jstr(t, raw, "assistantMessage.provider"); got != "anthropic" {
		t.Fatalf("provider %q", got)
	}
	requests := w.llmRequests(t)
	if len(requests) != 1 || jstr(t, requests[0], "model") != "claude-sonnet-4-5" {
		t.Fatalf("the fake LLM saw %d request(s): %s", len(requests), requests)
	}
	// What the agent's environment holds, as its bash tool sees it: the key, not the secret.
	shown, err := c.Bash(ctx, `printf "%s|%s" "$ANTHROPIC_API_KEY" "$OMPRPC_README_TEST_SECRET"`)
	if err != nil {
		t.Fatalf("Bash: %v", err)
	}
	if got := jstr(t, shown, "output"); got != key+"|" {
		t.Fatalf("the agent's environment showed %q", got)
	}
}
